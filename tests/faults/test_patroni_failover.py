"""The primary of a Patroni-managed PostgreSQL pair fails under load: two armada replicas,
an executor and a submitter carry on by themselves. Nothing acknowledged is lost (synchronous
replication), no job ends twice, no run is leased twice; the time from the kill to the next
successful submit is printed (docs/deployment.md, "High availability")."""

from __future__ import annotations

import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from armada.client import ArmadaClient
from armada.eventstore.dialects import libpq_conninfo
from armada.model.queues import Queue
from tests.e2e.cluster import executor, fake_nodes, job, wait_for
from tests.faults.patroni_cluster import Member, PatroniCluster, patroni_cluster
from tests.faults.workload import (
    LOAD_EXECUTOR_ENV,
    LOAD_SERVER_ENV,
    Submitter,
    assert_invariants_hold,
    duplicated_client_ids,
    event_counts,
    failure_reasons,
    job_states,
    wait_until_all_finished,
)
from tests.processes import running_server

pytestmark = [pytest.mark.slow]

JOBS = 800
#: Jobs the recovery probes submit.
PROBES = 2


@pytest.fixture(scope="session")
def ha_cluster() -> Iterator[PatroniCluster]:
    with patroni_cluster() as cluster:
        yield cluster


def fresh_database(cluster: PatroniCluster, *, proxied: bool) -> str:
    """A new database's URL: through HAProxy, or the members' multi-host URL."""
    name = f"armada_ha_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(libpq_conninfo(cluster.url), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    if proxied:
        return cluster.proxy_url.removesuffix("/postgres") + f"/{name}"
    return cluster.url.replace("@/postgres?", f"@/{name}?")


def first_submit_after(url: str, since: float) -> float:
    """Seconds from ``since`` until a submission gets a 200 (retrying as a client would)."""
    probe = job("true", cpu="100m", memory="16Mi")
    probe.client_id = f"probe-{uuid.uuid4().hex}"  # a retry whose answer was lost is not doubled
    with ArmadaClient(url) as client:
        while True:
            try:
                client.submit_jobs("ha", "probe", [probe])
                return time.monotonic() - since
            except Exception:  # 503 (Retry-After) or a dropped connection during the failover
                time.sleep(0.1)


@pytest.mark.parametrize("fault", ["postgres", "node", "patroni"])
def test_primary_fails_under_load_and_nothing_is_lost(
    ha_cluster: PatroniCluster, fault: str, tmp_path: Path
) -> None:
    """``postgres``: SIGKILL of the primary's postmaster (Patroni restarts it or fails over);
    ``node``: SIGKILL of its Patroni and postmaster together (a lost machine: the standby is
    promoted once the leader key expires); ``patroni``: SIGKILL of its Patroni alone, armada
    behind HAProxy — the old primary keeps running, writable, and must be fenced off (with
    the multi-host URL armada would stay on it, its synchronous commits waiting forever)."""
    if fault == "patroni" and shutil.which("haproxy") is None:
        pytest.skip("HAProxy is not installed (apt-get install haproxy)")
    ha_cluster.restart_stopped()
    primary = ha_cluster.wait_healthy()
    url = fresh_database(ha_cluster, proxied=fault == "patroni")
    with (
        running_server(tmp_path, database_url=url, env=LOAD_SERVER_ENV) as first,
        running_server(tmp_path, database_url=url, env=LOAD_SERVER_ENV) as second,
        executor(tmp_path, second.url, "sim", args=fake_nodes(50, cpu="8"), env=LOAD_EXECUTOR_ENV),
    ):
        with ArmadaClient(first.url) as client:
            client.create_queue(Queue(name="ha"))
        submitter = Submitter(first.url, "ha", "load", JOBS, batch=50, command="sleep 1")
        submitter.start()
        wait_for(lambda: "RUNNING" in job_states(url).values(), what="jobs running")
        killed = time.monotonic()
        if fault in ("node", "patroni"):
            primary.kill_patroni()
        if fault in ("node", "postgres"):
            primary.kill_postgres()
        recovery = first_submit_after(first.url, killed)
        if fault == "postgres":  # Patroni restarts it in place (it still holds the leader key)
            now_primary = ha_cluster.wait_healthy()
        else:  # the standby is promoted once the leader key expires

            def promoted() -> Member | None:
                member = ha_cluster.primary()
                return member if member is not None and member is not primary else None

            now_primary = wait_for(promoted, timeout=60, what="the standby promoted")
        took_over = time.monotonic() - killed
        then = first_submit_after(first.url, time.monotonic())
        print(
            f"\n{fault} fault: first submit answered {recovery:.1f}s after the kill; "
            f"{now_primary.name} primary {took_over:.1f}s after it; a submit then took {then:.1f}s"
        )
        acknowledged = submitter.finish(timeout=300)
        states = wait_until_all_finished(url, JOBS + PROBES, timeout=300)
    context = f"submit failures {dict(submitter.failures)}, failures {dict(failure_reasons(url))}"
    assert len(acknowledged) == JOBS, context
    assert {states[job_id] for job_id in acknowledged.values()} == {"SUCCEEDED"}, context
    assert len(states) == JOBS + PROBES, context  # and the probes' jobs
    assert duplicated_client_ids(url) == [], context
    events = event_counts(url)
    ended = events["succeeded"] + events["failed"] + events["cancelled"]
    assert ended == JOBS + PROBES, events  # every job ended exactly once
    assert events["leaseExpired"] == 0 and events["leased"] == JOBS + PROBES, events  # none leased twice
    assert_invariants_hold(url)
    print(f"{fault} fault: {JOBS + PROBES} jobs checked, {dict(submitter.failures)} failed submit attempts")
