"""Executor identity: a credential acts only as the executor ids it names, so a token taken
from cluster ``east`` cannot lease or report as ``west``. Over real HTTP, both databases."""

from __future__ import annotations

from pathlib import Path

import httpx
import msgspec
import pytest

from armada.auth.permissions import GlobalPermission as P
from armada.auth.secrets import hash_token
from armada.auth.settings import AuthSettings, BasicUser, StaticToken
from armada.settings import Settings, load_settings
from tests.processes import ROOT, ArmadaProcess
from tests.servers import ApiServer

ADMIN_HASH = load_settings(ROOT / "examples" / "config" / "auth-basic.yaml", env={}).auth.basic_users["admin"]


def token(user: str, groups: list[str], executors: list[str]) -> StaticToken:
    """Token ``<user>-token`` of ``user``."""
    return StaticToken(user=user, token_hash=hash_token(f"{user}-token"), groups=groups, executors=executors)


def auth() -> AuthSettings:
    mapping = {p: ["admins"] for p in P} | {P.EXECUTE_JOBS: ["executors", "admins"]}
    return AuthSettings(
        anonymous=False,
        basic_users={"admin": BasicUser(password_hash=ADMIN_HASH.password_hash, groups=["admins"])},
        tokens=[
            StaticToken(
                user="east", token_hash=hash_token("east-token"), groups=["executors"], executors=["east"]
            ),
            StaticToken(
                user="any", token_hash=hash_token("any-token"), groups=["executors"], executors=["*"]
            ),
            StaticToken(user="unnamed", token_hash=hash_token("unnamed-token"), groups=["executors"]),
            StaticToken(user="user", token_hash=hash_token("user-token"), executors=["east"]),
        ],
        permission_group_mapping=mapping,
    )


@pytest.fixture(scope="module")
def settings() -> Settings:
    return Settings(auth=auth())


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def lease(server: ApiServer, token: str, executor_id: str) -> httpx.Response:
    body = {"executorId": executor_id, "pool": "default", "nodes": [{"name": "n1"}]}
    return httpx.post(
        f"{server.url}/v1/executor/lease", json=body, headers={"Authorization": f"Bearer {token}"}
    )


def report(server: ApiServer, token: str, executor_id: str) -> httpx.Response:
    body = {"executorId": executor_id, "events": []}
    return httpx.post(
        f"{server.url}/v1/executor/events", json=body, headers={"Authorization": f"Bearer {token}"}
    )


def test_an_executor_token_acts_only_as_the_ids_it_names(server: ApiServer) -> None:
    assert lease(server, "east-token", "east").status_code == 200
    assert report(server, "east-token", "east").status_code == 200
    for call in (lease, report):
        refused = call(server, "east-token", "west")
        assert refused.status_code == 403, refused.text
        assert refused.headers["content-type"].startswith("application/problem+json")
        assert refused.json()["field"] == "executorId"
        assert "may not act as executor 'west'" in refused.json()["detail"]


def test_star_names_every_id_and_naming_none_allows_none(server: ApiServer) -> None:
    assert lease(server, "any-token", "west").status_code == 200
    assert lease(server, "unnamed-token", "east").status_code == 403
    assert lease(server, "user-token", "east").status_code == 403  # names east, lacks execute_jobs


def test_a_body_without_an_executor_id_is_a_400_for_an_executor(server: ApiServer) -> None:
    response = httpx.post(
        f"{server.url}/v1/executor/lease", json={"pool": "p"}, headers={"Authorization": "Bearer east-token"}
    )
    assert response.status_code == 400
    assert msgspec.json.decode(response.content)["status"] == 400


def test_an_executor_whose_token_names_other_ids_says_so_and_stops(server: ApiServer, tmp_path: Path) -> None:
    """A refusal is a setup mistake no retry mends: the executor exits 2 naming the fix."""
    token_file = tmp_path / "token"
    token_file.write_text("unnamed-token\n")
    args = ["executor", "--server", server.url, "--cluster-id", "east", "--backend", "fake"]
    executor = ArmadaProcess(
        [*args, "--fake-nodes", "1", "--token-file", str(token_file)],
        cwd=tmp_path,
        log_path=tmp_path / "executor.log",
    )
    try:
        code = executor.wait(timeout=60)
    finally:
        executor.stop()
    assert code == 2, executor.log()
    assert "refuses executor 'east'" in executor.log()
    assert "may not act as executor 'east'" in executor.log()
    assert "`executors`" in executor.log()
