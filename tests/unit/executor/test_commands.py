from __future__ import annotations

import random

import pytest

from armada.executor.commands import container_argv, fake_plan


@pytest.mark.parametrize(
    ("argv", "seconds", "code"),
    [
        (["sleep", "5"], 5.0, 0),
        (["sleep", "100s"], 100.0, 0),
        (["sleep", "2m"], 120.0, 0),
        (["sleep", "0.5"], 0.5, 0),
        (["sh", "-c", "sleep 3; exit 2"], 3.0, 2),
        (["sh", "-c", "sleep 1 && sleep 2"], 3.0, 0),
        (["exit", "1"], 1.0, 1),
        (["ls"], 1.0, 0),
        (["echo", "Hello world!"], 1.0, 0),
        (["sh", "-c", "echo nosleep; exit 0"], 1.0, 0),
        (["/bin/sleepy-tool", "5"], 1.0, 0),
    ],
)
def test_fake_plan(argv: list[str], seconds: float, code: int) -> None:
    plan = fake_plan(argv, default_seconds=1.0, rng=random.Random(0))
    assert (plan.seconds, plan.exit_code) == (seconds, code)


def test_random_sleep_is_within_its_range() -> None:
    rng = random.Random(42)
    argv = ["sh", "-c", "sleep $(( (RANDOM % 60) + 10 ))"]
    durations = {fake_plan(argv, default_seconds=1.0, rng=rng).seconds for _ in range(500)}
    assert min(durations) >= 10 and max(durations) <= 69
    assert len(durations) > 30


def test_random_sleep_without_offset() -> None:
    plan = fake_plan(["sh", "-c", "sleep $((RANDOM % 5))"], default_seconds=1.0, rng=random.Random(1))
    assert 0 <= plan.seconds < 5


def test_container_argv_uses_command_then_args() -> None:
    spec = {"containers": [{"command": ["sh"], "args": ["-c", "sleep 600"]}, {"args": ["ignored"]}]}
    assert container_argv(spec) == ["sh", "-c", "sleep 600"]
    assert container_argv({"containers": [{"args": ["sleep", "100s"]}]}) == ["sleep", "100s"]
    assert container_argv({}) == []
