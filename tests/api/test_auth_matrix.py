"""Every route against every kind of caller: allowed, 401 or 403, over real HTTP.

The routes come from the Litestar app itself, so a route added later is walked too; a
route without a declared policy, or whose policy differs from the table below, fails.
The server runs ``examples/config/auth-basic.yaml`` plus OIDC tokens signed by a key made
here.
"""

from __future__ import annotations

import base64
import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import msgspec
import pytest
from litestar import Litestar
from litestar.routes import HTTPRoute

from armada.auth.permissions import VERB_PERMISSION
from armada.auth.permissions import GlobalPermission as P
from armada.auth.policy import Authenticated, OnQueue, OwnerOr, Policy, Public, PublicIf, Requires, policy_of
from armada.model.queues import QueueVerb as V
from armada.settings import Settings, load_settings
from tests.auth_keys import SigningKey, oidc_settings
from tests.databases import sqlite_url
from tests.processes import ROOT
from tests.servers import ApiServer, serving

EXAMPLE = ROOT / "examples" / "config" / "auth-basic.yaml"
ALL = frozenset(V)

#: What each route must declare. A new route fails the test until it is listed here.
EXPECTED_POLICIES: dict[tuple[str, str], Policy] = {
    ("GET", "/health"): Public(),
    ("GET", "/version"): Public(),
    ("POST", "/v1/queue"): Requires(P.CREATE_QUEUE),
    ("PUT", "/v1/queue/{name:str}"): OwnerOr(P.CREATE_QUEUE, path="name"),
    ("DELETE", "/v1/queue/{name:str}"): Requires(P.DELETE_QUEUE),
    ("GET", "/v1/queue/{name:str}"): Authenticated(),
    ("POST", "/v1/queue/{name:str}/cordon"): Requires(P.CORDON_QUEUE),
    ("POST", "/v1/queue/{name:str}/uncordon"): Requires(P.CORDON_QUEUE),
    ("GET", "/v1/batched/queues"): Authenticated(),
    ("POST", "/v1/batched/create_queues"): Requires(P.CREATE_QUEUE),
    ("PUT", "/v1/batched/update_queues"): Authenticated(),  # each queue checked as by PUT /v1/queue
    ("POST", "/v1/queues/active"): Authenticated(),
    ("POST", "/v1/job/submit"): OnQueue(V.SUBMIT, body="queue"),
    ("POST", "/v1/job/cancel"): OnQueue(V.CANCEL, body="queue"),
    ("POST", "/v1/jobset/cancel"): OnQueue(V.CANCEL, body="queue"),
    ("POST", "/v1/job/reprioritize"): OnQueue(V.REPRIORITIZE, body="queue"),
    ("POST", "/v1/job/preempt"): OnQueue(V.PREEMPT, body="queue"),
    ("POST", "/v1/job/status"): Authenticated(),
    ("POST", "/v1/job/details"): Authenticated(),
    ("POST", "/v1/run/details"): Authenticated(),
    ("POST", "/v1/job/errors"): Authenticated(),
    ("POST", "/v1/job-set/{queue:str}/{job_set_id:str}"): OnQueue(V.WATCH, path="queue"),
    ("POST", "/v1/executor/lease"): Requires(P.EXECUTE_JOBS),
    ("POST", "/v1/executor/events"): Requires(P.EXECUTE_JOBS),
    ("GET", "/metrics"): PublicIf("public_metrics", Requires(P.VIEW_REPORTS)),
    ("GET", "/v1/scheduling-report"): Requires(P.VIEW_REPORTS),
    ("GET", "/v1/queue/{name:str}/scheduler-report"): Requires(P.VIEW_REPORTS),
    ("GET", "/v1/job/{job_id:str}/scheduler-report"): Requires(P.VIEW_REPORTS),
    # Lookout: the UI's data needs a caller; its pages and static files do not.
    ("POST", "/api/v1/jobs"): Authenticated(),
    ("POST", "/api/v1/jobCount"): Authenticated(),
    ("POST", "/api/v1/jobGroups"): Authenticated(),
    ("GET", "/api/v1/jobs/{job_id:str}"): Authenticated(),
    ("GET", "/api/v1/overview"): Authenticated(),
    ("GET", "/api/v1/changes"): Authenticated(),
    ("GET", "/"): Public(),
    ("GET", "/jobs"): Public(),
    ("GET", "/jobsets"): Public(),
    ("GET", "/static/{file_path:path}"): Public(),
    ("HEAD", "/static/{file_path:path}"): Public(),
}
SCHEMA = PublicIf("public_schema", Authenticated())


class Caller(msgspec.Struct, frozen=True):
    """Credentials, and what the example configuration lets them do (written out by hand)."""

    name: str
    authorization: str | None
    permissions: frozenset[P] = frozenset()
    verbs: frozenset[V] = frozenset()  # on the test queue
    valid: bool = True


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@pytest.fixture(scope="module")
def key() -> SigningKey:
    return SigningKey()


CALLERS = [
    Caller("nobody", None, valid=False),
    Caller("wrong-password", basic("alice", "bob-pass"), valid=False),
    Caller("unknown-user", basic("mallory", "x"), valid=False),
    Caller("unknown-token", "Bearer not-a-token", valid=False),
    Caller("expired-jwt", "jwt:expired", valid=False),
    Caller("foreign-jwt", "jwt:foreign", valid=False),
    Caller("alice", basic("alice", "alice-pass"), verbs=ALL),  # team-a owns the queue
    Caller("bob", basic("bob", "bob-pass"), verbs=frozenset({V.WATCH})),  # granted watch
    Caller("carol-jwt", "jwt:carol", verbs=frozenset({V.SUBMIT, V.CANCEL})),  # named subject
    Caller("dave-jwt", "jwt:dave", verbs=ALL),  # in group team-a via the token
    Caller("admin", basic("admin", "admin-pass"), permissions=frozenset(P)),
    Caller("executor", "Bearer executor-token", permissions=frozenset({P.EXECUTE_JOBS})),
]


def authorization(caller: Caller, key: SigningKey) -> dict[str, str]:
    value = caller.authorization
    if value is None:
        return {}
    if value.startswith("jwt:"):
        kind = value[4:]
        if kind == "expired":
            token = key.token("dave", ["team-a"], exp=1_000_000, iat=999_000)
        elif kind == "foreign":
            token = SigningKey(kid=key.kid).token("dave", ["team-a"])
        else:
            token = key.token(kind, ["team-a"] if kind == "dave" else ["someone-else"])
        value = f"Bearer {token}"
    return {"Authorization": value}


QUEUE = f"q-{uuid.uuid4().hex[:8]}"
QUEUE_SPEC = {
    "name": QUEUE,
    "groupOwners": ["team-a"],
    "permissions": [
        {"subjects": [{"kind": "User", "name": "bob"}], "verbs": ["watch"]},
        {"subjects": [{"kind": "User", "name": "oidc:carol"}], "verbs": ["submit", "cancel"]},
    ],
}
ADMIN = {"Authorization": basic("admin", "admin-pass")}


def secured_settings(tmp: Path, key: SigningKey) -> Settings:
    settings = load_settings(EXAMPLE, env={})
    auth = msgspec.structs.replace(
        settings.auth,
        oidc=oidc_settings(key.write_jwks(tmp / "jwks.json")),
        failed_login_limit=1_000_000,  # wrong passwords on every route, all from 127.0.0.1
    )
    return msgspec.structs.replace(settings, auth=auth)


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory, key: SigningKey) -> Iterator[ApiServer]:
    tmp = tmp_path_factory.mktemp("auth")
    with serving(sqlite_url(tmp), secured_settings(tmp, key)) as server:
        yield server


def app_routes(app: Litestar) -> list[tuple[str, str, Policy | None]]:
    """(method, path, declared policy) of every route the app serves, OPTIONS aside."""
    found = []
    for route in app.routes:
        if not isinstance(route, HTTPRoute):
            continue
        for handler in route.route_handlers:
            for method in sorted(handler.http_methods - {"OPTIONS"}):
                found.append((method, route.path, policy_of(handler.resolve_opts() or handler.opt)))
    return found


def test_every_route_declares_the_expected_policy(secured: ApiServer) -> None:
    routes = app_routes(secured.app)
    assert len(routes) > len(EXPECTED_POLICIES)
    for method, path, policy in routes:
        assert policy is not None, f"{method} {path} declares no access policy (armada.auth.policy)"
        if path.startswith("/schema"):
            assert policy == SCHEMA, path
            continue
        assert (method, path) in EXPECTED_POLICIES, (
            f"{method} {path} is not in EXPECTED_POLICIES: add it with the policy it should have"
        )
        assert policy == EXPECTED_POLICIES[(method, path)], f"{method} {path}"


def expected(policy: Policy, caller: Caller, *, has_credentials: bool) -> int | None:
    """401 or 403 when refused, None when allowed (the handler's own answer)."""
    if isinstance(policy, PublicIf):
        # The example configuration serves the schema publicly, but not the metrics.
        policy = Public() if policy.flag == "public_schema" else policy.otherwise
    if isinstance(policy, Public):
        return 401 if has_credentials and not caller.valid else None
    if not caller.valid:
        return 401
    if isinstance(policy, Authenticated):
        return None
    if isinstance(policy, Requires):
        return None if policy.permission in caller.permissions else 403
    if isinstance(policy, OwnerOr):  # owners are the callers with every verb on the queue
        return None if policy.permission in caller.permissions or caller.verbs == ALL else 403
    assert isinstance(policy, OnQueue)
    return None if policy.verb in caller.verbs or VERB_PERMISSION[policy.verb] in caller.permissions else 403


def _concrete(path: str) -> str:
    return re.sub(r"\{(\w+):\w+\}", lambda m: QUEUE if m[1] in ("name", "queue") else "set-1", path)


def _put_queue_back(http: httpx.Client) -> None:
    """Admin calls may cordon or delete the queue: put it back as it was."""
    if http.put(f"/v1/queue/{QUEUE}", json=QUEUE_SPEC, headers=ADMIN).status_code == 404:
        assert http.post("/v1/queue", json=QUEUE_SPEC, headers=ADMIN).status_code == 200


@pytest.mark.parametrize("caller", CALLERS, ids=lambda c: c.name)
def test_matrix(secured: ApiServer, caller: Caller, key: SigningKey) -> None:
    headers = authorization(caller, key)
    with httpx.Client(base_url=secured.url, timeout=30) as http:
        _put_queue_back(http)
        for method, path, policy in app_routes(secured.app):
            assert policy is not None
            body = {"queue": QUEUE} if method in ("POST", "PUT") else None
            # Streamed, so that event streams (watch, server-sent events) need not end.
            with http.stream(method, _concrete(path), json=body, headers=headers) as response:
                want = expected(policy, caller, has_credentials=bool(headers))
                where = f"{caller.name}: {method} {path} -> {response.status_code}"
                if want is None:
                    assert response.status_code not in (401, 403) and response.status_code < 500, where
                    mutated = method != "GET" and response.is_success
                else:
                    response.read()
                    mutated = False
            if mutated:
                _put_queue_back(http)
            if want is None:
                continue
            assert response.status_code == want, f"{where} {response.text[:200]}"
            assert response.headers["content-type"].startswith("application/problem+json"), where
            if want == 401:
                assert 'realm="armada"' in response.headers["www-authenticate"], where
                if headers.get("Authorization", "").startswith("Bearer") and method != "HEAD":
                    assert response.json()["detail"] == "invalid token", where


def test_bad_bearer_challenge_names_invalid_token(secured: ApiServer) -> None:
    response = httpx.get(f"{secured.url}/v1/batched/queues", headers={"Authorization": "Bearer nope"})
    assert response.status_code == 401
    challenge = response.headers["www-authenticate"]
    assert 'Basic realm="armada"' in challenge
    assert 'Bearer realm="armada", error="invalid_token"' in challenge
    assert response.json() == {
        "type": "about:blank",
        "title": "Unauthorized",
        "status": 401,
        "detail": "invalid token",
    }
