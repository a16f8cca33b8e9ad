"""Failed-login throttling per client and per user, and the bound on concurrent password checks."""

from __future__ import annotations

import asyncio
import base64
import threading
import time

import pytest

from armada.auth import authentication
from armada.auth.authentication import Authentication
from armada.auth.secrets import hash_password
from armada.auth.settings import AuthSettings, BasicUser
from armada.auth.throttle import LoginThrottle, LoginThrottled
from armada.model.errors import Unauthenticated


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_each_key_is_refused_after_its_limit_until_its_window_ends() -> None:
    clock = Clock()
    throttle = LoginThrottle(3, 60, clock=clock)
    for _ in range(3):
        throttle.check("client:a", "user:bob")
        throttle.failed("client:a", "user:bob")
    with pytest.raises(LoginThrottled) as refused:
        throttle.check("client:b", "user:bob")  # another address, same user: still refused
    assert refused.value.retry_after == 60
    with pytest.raises(LoginThrottled):
        throttle.check("client:a", "user:carol")  # same address, another user: refused too
    throttle.check("client:b", "user:carol")
    clock.now += 45
    with pytest.raises(LoginThrottled) as later:
        throttle.check("client:a")
    assert later.value.retry_after == 15
    clock.now += 15
    throttle.check("client:a", "user:bob")


def test_the_table_stays_bounded_under_a_flood_of_names() -> None:
    throttle = LoginThrottle(1, 60, max_keys=100, clock=Clock())
    for i in range(1000):
        throttle.failed(f"user:{i}")
    assert len(throttle._failures) <= 100


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


async def test_wrong_passwords_are_throttled_even_before_the_right_one() -> None:
    users = {"bob": BasicUser(password_hash=hash_password("bob-pass", log2_n=4))}
    auth = Authentication(AuthSettings(anonymous=False, basic_users=users, failed_login_limit=2))
    for _ in range(2):
        with pytest.raises(Unauthenticated):
            await auth.identify(basic("bob", "guess"), client="10.0.0.1")
    with pytest.raises(LoginThrottled):
        await auth.identify(basic("bob", "bob-pass"), client="10.0.0.2")  # per user
    with pytest.raises(LoginThrottled):
        await auth.identify(basic("nobody", "x"), client="10.0.0.1")  # per address


async def test_password_checks_run_at_most_password_hash_concurrency_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    running, most = 0, 0
    lock = threading.Lock()
    verify = authentication.verify_password

    def counting(password: str, encoded: str) -> bool:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        time.sleep(0.05)
        with lock:
            running -= 1
        return verify(password, encoded)

    monkeypatch.setattr(authentication, "verify_password", counting)
    users = {f"u{i}": BasicUser(password_hash=hash_password("p", log2_n=4)) for i in range(8)}
    auth = Authentication(AuthSettings(anonymous=False, basic_users=users, password_hash_concurrency=2))
    await asyncio.gather(*(auth.identify(basic(f"u{i}", "p"), client=f"c{i}") for i in range(8)))
    assert most == 2
