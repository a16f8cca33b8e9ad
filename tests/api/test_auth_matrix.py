"""Every route against every kind of caller: allowed, 401 or 403, over real HTTP.

The routes come from the Litestar app itself, so a route added later is walked too; a
route without a declared policy, or whose policy differs from the table below, fails.
The server runs ``examples/config/auth-basic.yaml`` plus OIDC tokens signed by a key made
here.
"""

from __future__ import annotations

import base64
import json
import re
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
from litestar import Litestar
from litestar.routes import HTTPRoute

from armada.api.access import enforce_access
from armada.auth.permissions import VERB_PERMISSION
from armada.auth.permissions import GlobalPermission as P
from armada.auth.policy import (
    AsExecutor,
    Authenticated,
    OnQueue,
    OwnerOr,
    Policy,
    Public,
    PublicIf,
    Requires,
    Watching,
    policy_of,
)
from armada.model.queues import QueueVerb as V
from armada.settings import Settings, load_settings
from tests.api.jobs import raw_item, start
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
    ("GET", "/v1/version"): Public(),
    ("GET", "/v1/whoami"): Authenticated(),
    ("GET", "/auth/session"): Public(),
    ("GET", "/auth/login"): Public(),
    ("GET", "/auth/callback"): Public(),
    ("POST", "/auth/logout"): Public(),
    ("POST", "/v1/queue"): Requires(P.CREATE_QUEUE),
    ("PUT", "/v1/queue/{name:str}"): OwnerOr(P.CREATE_QUEUE, path="name"),
    ("DELETE", "/v1/queue/{name:str}"): Requires(P.DELETE_QUEUE),
    ("GET", "/v1/queue/{name:str}"): Watching(),
    ("POST", "/v1/retry-policy"): Requires(P.CREATE_RETRY_POLICY),
    ("PUT", "/v1/retry-policy/{name:str}"): Requires(P.UPDATE_RETRY_POLICY),
    ("DELETE", "/v1/retry-policy/{name:str}"): Requires(P.DELETE_RETRY_POLICY),
    ("GET", "/v1/retry-policy/{name:str}"): Authenticated(),
    ("GET", "/v1/retry-policies"): Authenticated(),
    ("POST", "/v1/queue/{name:str}/cordon"): Requires(P.CORDON_QUEUE),
    ("POST", "/v1/queue/{name:str}/uncordon"): Requires(P.CORDON_QUEUE),
    ("POST", "/v1/queue/{name:str}/preempt"): OnQueue(V.PREEMPT, path="name"),
    ("POST", "/v1/queue/{name:str}/cancel"): OnQueue(V.CANCEL, path="name"),
    ("GET", "/v1/batched/queues"): Watching(),
    ("POST", "/v1/batched/create_queues"): Requires(P.CREATE_QUEUE),
    ("PUT", "/v1/batched/update_queues"): Authenticated(),  # each queue checked as by PUT /v1/queue
    ("POST", "/v1/queues/active"): Watching(),
    ("POST", "/v1/job/submit"): OnQueue(V.SUBMIT, body="queue"),
    ("POST", "/v1/job/cancel"): OnQueue(V.CANCEL, body="queue"),
    ("POST", "/v1/jobset/cancel"): OnQueue(V.CANCEL, body="queue"),
    ("POST", "/v1/job/reprioritize"): OnQueue(V.REPRIORITIZE, body="queue"),
    ("POST", "/v1/job/preempt"): OnQueue(V.PREEMPT, body="queue"),
    ("POST", "/v1/job/status"): Watching(),
    ("POST", "/v1/job/statusUsingExternalJobUri"): OnQueue(V.WATCH, body="queue"),
    ("POST", "/v1/job/details"): Watching(),
    ("POST", "/v1/job/forecast"): Watching(),
    ("GET", "/v1/usage"): Watching(),
    ("POST", "/v1/run/details"): Watching(),
    ("POST", "/v1/job/errors"): Watching(),
    ("POST", "/v1/job-set/{queue:str}/{job_set_id:str}"): OnQueue(V.WATCH, path="queue"),
    ("POST", "/v1/executor/lease"): AsExecutor(body="executorId"),
    ("POST", "/v1/executor/events"): AsExecutor(body="executorId"),
    ("POST", "/v1/executor/logs"): AsExecutor(body="executorId"),
    ("POST", "/v1/binoculars/log"): Watching(),
    # Fleet controls: upstream's permissions, never a queue grant (they act across queues).
    ("PUT", "/v1/executor_settings/{name:str}"): Requires(P.UPDATE_EXECUTOR_SETTINGS),
    ("DELETE", "/v1/executor_settings/{name:str}"): Requires(P.UPDATE_EXECUTOR_SETTINGS),
    ("POST", "/v1/executor/preempt/{name:str}"): Requires(P.PREEMPT_ANY_JOBS),
    ("POST", "/v1/executor/cancel/{name:str}"): Requires(P.CANCEL_ANY_JOBS),
    ("POST", "/v1/node/preempt/{name:str}"): Requires(P.PREEMPT_ANY_JOBS),
    ("POST", "/v1/node/cancel/{name:str}"): Requires(P.CANCEL_ANY_JOBS),
    ("POST", "/v1/binoculars/cordon"): Requires(P.CORDON_NODES),
    ("POST", "/v1/binoculars/uncordon"): Requires(P.CORDON_NODES),
    ("DELETE", "/v1/executor/{name:str}"): Requires(P.UPDATE_EXECUTOR_SETTINGS),
    ("GET", "/v1/executors"): Authenticated(),
    ("GET", "/metrics"): PublicIf("public_metrics", Requires(P.VIEW_REPORTS)),
    ("GET", "/v1/scheduling-report"): Watching(P.VIEW_REPORTS),
    ("GET", "/v1/queue/{name:str}/scheduler-report"): Watching(P.VIEW_REPORTS),
    ("GET", "/v1/job/{job_id:str}/scheduler-report"): Watching(P.VIEW_REPORTS),
    # Lookout: the UI's data needs a caller (and covers its queues); its pages and static files do not.
    ("POST", "/api/v1/jobs"): Watching(),
    ("POST", "/api/v1/jobCount"): Watching(),
    ("POST", "/api/v1/jobGroups"): Watching(),
    ("POST", "/api/v1/groupJobs"): Watching(),
    ("GET", "/api/v1/jobs/{job_id:str}"): Watching(),
    ("GET", "/api/v1/overview"): Watching(),
    ("GET", "/api/v1/changes"): Authenticated(),
    # Saved views: any caller keeps its own; the handlers reach no one else's (tested below).
    ("GET", "/v1/lookout/views"): Authenticated(),
    ("GET", "/v1/lookout/views/{name:str}"): Authenticated(),
    ("PUT", "/v1/lookout/views/{name:str}"): Authenticated(),
    ("DELETE", "/v1/lookout/views/{name:str}"): Authenticated(),
    ("GET", "/"): Public(),
    ("GET", "/jobs"): Public(),
    ("GET", "/jobsets"): Public(),
    ("GET", "/executors"): Public(),
    ("GET", "/usage"): Public(),
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
    # A named subject, and (by her group) a reader of reports: of queues she may watch only.
    Caller(
        "carol-jwt",
        "jwt:carol",
        permissions=frozenset({P.VIEW_REPORTS}),
        verbs=frozenset({V.SUBMIT, V.CANCEL}),
    ),
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
    mapping = {**settings.auth.permission_group_mapping}
    mapping[P.VIEW_REPORTS] = [*mapping[P.VIEW_REPORTS], "someone-else"]  # carol's group
    auth = msgspec.structs.replace(
        settings.auth,
        oidc=oidc_settings(key.write_jwks(tmp / "jwks.json")),
        permission_group_mapping=mapping,
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


def test_every_route_runs_the_access_check(secured: ApiServer) -> None:
    """The check is the app's ``before_request`` hook: Litestar runs one hook per route, so a
    route (or router) with a hook of its own could replace it and skip authentication."""
    routes = secured.app.routes
    # A websocket or ASGI route would skip ``before_request`` altogether.
    assert all(isinstance(route, HTTPRoute) for route in routes), routes
    handlers = [h for route in routes if isinstance(route, HTTPRoute) for h in route.route_handlers]
    assert handlers
    for handler in handlers:
        assert handler.resolve_before_request() is enforce_access, handler


#: Reads of one queue named in the path (reads naming jobs answer "not found" instead).
NAMED_QUEUE_READS = {("GET", "/v1/queue/{name:str}/scheduler-report")}


def watches(caller: Caller) -> bool:
    return V.WATCH in caller.verbs or P.WATCH_ALL_EVENTS in caller.permissions


def expected(
    policy: Policy, caller: Caller, *, has_credentials: bool, named_queue: bool = False
) -> int | None:
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
    if isinstance(policy, Watching):
        if policy.also is not None and policy.also not in caller.permissions:
            return 403
        # A read of one named queue is refused to whoever may not watch it.
        return 403 if named_queue and not watches(caller) else None
    if isinstance(policy, AsExecutor):  # the matrix's body names no executor: the handler refuses it
        return None if P.EXECUTE_JOBS in caller.permissions else 403
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
                named_queue = (method, path) in NAMED_QUEUE_READS
                want = expected(policy, caller, has_credentials=bool(headers), named_queue=named_queue)
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


# --- What reads show: every read route answers only for queues the caller may watch. ---

READ_QUEUE = f"r-{uuid.uuid4().hex[:8]}"
EXECUTOR = {"Authorization": "Bearer executor-token"}  # may act as cluster-a (the example)


class ReadTarget(msgspec.Struct, frozen=True):
    job_id: str
    run_id: str


@pytest.fixture(scope="module")
def read_target(secured: ApiServer) -> ReadTarget:
    """A queue like the matrix's, with a running job, a queued one, an executor and one
    scheduling cycle behind its reports. The matrix never touches this queue."""
    with httpx.Client(base_url=secured.url, timeout=30) as http:
        assert (
            http.post("/v1/queue", json={**QUEUE_SPEC, "name": READ_QUEUE}, headers=ADMIN).status_code == 200
        )
        items = [raw_item(), raw_item()]
        submitted = http.post(
            "/v1/job/submit",
            json={"queue": READ_QUEUE, "jobSetId": "set-1", "jobRequestItems": items},
            headers=ADMIN,
        )
        job_id, _queued = (r["jobId"] for r in submitted.json()["jobResponseItems"])
        nodes = [{"name": "n1", "allocatable": {"cpu": "1", "memory": "1Gi"}}]
        lease = {"executorId": "cluster-a", "pool": "default", "nodes": nodes}
        assert http.post("/v1/executor/lease", json=lease, headers=EXECUTOR).status_code == 200
    run_id = start(secured, READ_QUEUE, "set-1", job_id)
    secured.run(secured.app.state.services.scheduler.cycle())
    return ReadTarget(job_id, run_id)


def _lines(response: httpx.Response) -> list[Any]:
    return [json.loads(line) for line in response.text.splitlines() if line]


def _queue_line(response: httpx.Response) -> dict[str, Any]:
    queues = [line["result"]["Event"].get("queue") for line in _lines(response)]
    return next(q for q in queues if q and q["name"] == READ_QUEUE)


def _report_queues(response: httpx.Response) -> set[str]:
    cycles = response.json()["cycles"]
    return {name for cycle in cycles for pool in cycle["pools"].values() for name in pool["queues"]}


ReadCheck = tuple[str, dict[str, Any] | None, Callable[[httpx.Response], bool]]


def read_checks(t: ReadTarget) -> dict[tuple[str, str], ReadCheck]:
    """Per read route: (concrete path, body, "did the answer show READ_QUEUE's data?")."""
    jobs = {"jobIds": [t.job_id]}
    by_queue = {"filter": {"queue": READ_QUEUE}}
    return {
        ("POST", "/v1/job/status"): (
            "/v1/job/status",
            jobs,
            lambda r: r.json()["jobStates"][t.job_id] != "UNKNOWN",
        ),
        ("POST", "/v1/job/statusUsingExternalJobUri"): (
            "/v1/job/statusUsingExternalJobUri",
            {"queue": READ_QUEUE, "jobset": "set-1", "externalJobUri": "https://example/1"},
            lambda r: r.status_code == 200,
        ),
        ("POST", "/v1/job/details"): (
            "/v1/job/details",
            {**jobs, "expandForecast": True},
            lambda r: t.job_id in r.json().get("jobDetails", {}),
        ),
        ("POST", "/v1/job/forecast"): (
            "/v1/job/forecast",
            jobs,
            lambda r: r.json()["forecasts"][t.job_id]["outcome"] != "UNKNOWN",
        ),
        # The job was leased: its wait is counted for its queue (usage itself as runs end).
        ("GET", "/v1/usage"): (
            "/v1/usage?by=queue",
            None,
            lambda r: READ_QUEUE in r.text,
        ),
        ("POST", "/v1/job/errors"): (
            "/v1/job/errors",
            jobs,
            lambda r: t.job_id in r.json().get("jobErrors", {}),
        ),
        ("POST", "/v1/run/details"): (
            "/v1/run/details",
            {"runIds": [t.run_id]},
            lambda r: t.run_id in r.json().get("jobRunDetails", {}),
        ),
        ("POST", "/v1/job-set/{queue:str}/{job_set_id:str}"): (
            f"/v1/job-set/{READ_QUEUE}/set-1",
            {},
            lambda r: r.status_code == 200 and t.job_id in r.text,
        ),
        # A run id the job does not have: a watcher hears of the run (field runId), anyone
        # else of a job that does not exist (field jobId); no executor is asked.
        ("POST", "/v1/binoculars/log"): (
            "/v1/binoculars/log",
            {"jobId": t.job_id, "runId": "no-such-run"},
            lambda r: r.status_code == 404 and r.json()["field"] == "runId",
        ),
        ("GET", "/v1/queue/{name:str}"): (
            f"/v1/queue/{READ_QUEUE}",
            None,
            lambda r: "groupOwners" in r.json(),
        ),
        ("GET", "/v1/batched/queues"): (
            "/v1/batched/queues",
            None,
            lambda r: "groupOwners" in _queue_line(r),
        ),
        ("POST", "/v1/queues/active"): (
            "/v1/queues/active",
            {},
            lambda r: any(READ_QUEUE in p["queues"] for p in r.json().get("activeQueuesByPool", {}).values()),
        ),
        ("GET", "/v1/scheduling-report"): (
            "/v1/scheduling-report",
            None,
            lambda r: READ_QUEUE in _report_queues(r),
        ),
        ("GET", "/v1/queue/{name:str}/scheduler-report"): (
            f"/v1/queue/{READ_QUEUE}/scheduler-report",
            None,
            lambda r: r.status_code == 200,
        ),
        ("GET", "/v1/job/{job_id:str}/scheduler-report"): (
            f"/v1/job/{t.job_id}/scheduler-report",
            None,
            lambda r: r.status_code == 200,
        ),
        ("POST", "/api/v1/jobs"): ("/api/v1/jobs", by_queue, lambda r: len(r.json()["jobs"]) == 2),
        ("POST", "/api/v1/jobCount"): ("/api/v1/jobCount", by_queue, lambda r: r.json()["count"] == 2),
        ("POST", "/api/v1/jobGroups"): (
            "/api/v1/jobGroups",
            {},
            lambda r: READ_QUEUE in {g["name"] for g in r.json()["groups"]},
        ),
        ("POST", "/api/v1/groupJobs"): (
            "/api/v1/groupJobs",
            {"groupBy": {"column": "queue"}},
            lambda r: READ_QUEUE in {g["value"] for g in r.json()["groups"]},
        ),
        ("GET", "/api/v1/jobs/{job_id:str}"): (
            f"/api/v1/jobs/{t.job_id}",
            None,
            lambda r: r.status_code == 200,
        ),
        ("GET", "/api/v1/overview"): (
            "/api/v1/overview",
            None,
            lambda r: READ_QUEUE in {q["name"] for q in r.json()["queues"]},
        ),
    }


def test_every_read_route_has_a_visibility_check(secured: ApiServer) -> None:
    reads = {
        (method, path)
        for method, path, policy in app_routes(secured.app)
        if isinstance(policy, Watching) or (isinstance(policy, OnQueue) and policy.verb is V.WATCH)
    }
    assert reads == set(read_checks(ReadTarget("x", "y"))), "add the read route to read_checks"


@pytest.mark.parametrize("caller", [c for c in CALLERS if c.valid], ids=lambda c: c.name)
def test_reads_show_only_queues_the_caller_may_watch(
    secured: ApiServer, read_target: ReadTarget, caller: Caller, key: SigningKey
) -> None:
    """A non-watcher gets what a nonexistent job or queue would give: not found, UNKNOWN,
    nothing listed; queues' owners and permissions are hidden from it."""
    headers = authorization(caller, key)
    with httpx.Client(base_url=secured.url, timeout=30, headers=headers) as http:
        for (method, route), (path, body, shows) in read_checks(read_target).items():
            policy = EXPECTED_POLICIES[(method, route)]
            if isinstance(policy, Watching) and policy.also and policy.also not in caller.permissions:
                continue  # refused outright (403): test_matrix covers it
            response = http.request(method, path, json=body)
            where = f"{caller.name}: {method} {path} -> {response.status_code} {response.text[:200]}"
            assert response.status_code in (200, 403, 404), where
            assert shows(response) == watches(caller), where


def test_saved_views_are_each_callers_own(secured: ApiServer, key: SigningKey) -> None:
    """Every caller saves a view of one name: each reads back only its own (basic users,
    OIDC subjects and static tokens alike), and deleting it leaves the others'."""
    valid = [caller for caller in CALLERS if caller.valid]
    with httpx.Client(base_url=secured.url, timeout=30) as http:
        for caller in valid:
            state = {"query": f"owner={caller.name}"}
            saved = http.put(
                "/v1/lookout/views/mine", json={"state": state}, headers=authorization(caller, key)
            )
            assert saved.status_code == 200, f"{caller.name}: {saved.text}"
        for caller in valid:
            headers = authorization(caller, key)
            listed = http.get("/v1/lookout/views", headers=headers).json()["views"]
            assert [(v["name"], v["state"]) for v in listed] == [("mine", {"query": f"owner={caller.name}"})]
        first, *others = valid
        assert http.delete("/v1/lookout/views/mine", headers=authorization(first, key)).status_code == 200
        for caller in others:
            assert http.get("/v1/lookout/views/mine", headers=authorization(caller, key)).status_code == 200
        assert http.get("/v1/lookout/views/mine", headers=authorization(first, key)).status_code == 404
