"""Backups taken while the system runs restore into a consistent database, and a restore
taken before a batch started (the clusters are ahead of the database) converges by itself."""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

import pytest

from armada.client import ArmadaClient
from armada.eventstore.dialects import libpq_conninfo
from armada.model import events as ev
from armada.model.queues import Queue
from tests.databases import postgres_database, sqlite_url
from tests.e2e.cluster import FAST_SERVER_ENV, executor, fake_nodes, job, states_are, wait_for
from tests.faults.process_groups import alive, process_groups
from tests.faults.workload import LOAD_EXECUTOR_ENV, LOAD_SERVER_ENV, Submitter, admin_check
from tests.processes import armada_command, free_port, process_env, running_server

pytestmark = [pytest.mark.slow]


def admin_backup(database_url: str, target: Path) -> subprocess.CompletedProcess[str]:
    command = armada_command("admin", "backup", str(target), "--database-url", database_url)
    return subprocess.run(
        command, check=False, env=process_env(), capture_output=True, text=True, timeout=120
    )


def sqlite_client_ids(path: Path) -> set[str]:
    with sqlite3.connect(path) as conn:
        return {row[0] for row in conn.execute("SELECT client_id FROM jobs")}


def test_sqlite_backup_under_load_restores_consistent(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path)
    backups = [tmp_path / "backup-1.db", tmp_path / "backup-2.db"]
    with running_server(tmp_path, database_url=url, env=LOAD_SERVER_ENV) as server:
        with ArmadaClient(server.url) as client:
            client.create_queue(Queue(name="load"))
        with executor(tmp_path, server.url, "sim", args=fake_nodes(50, cpu="8"), env=LOAD_EXECUTOR_ENV):
            submitter = Submitter(server.url, "load", "backup", 3000, batch=100, command="sleep 1")
            submitter.start()
            for target in backups:  # each taken while jobs are submitted, leased and run
                wait_for(lambda: len(submitter.acknowledged) >= 300, what="submissions under way")
                result = admin_backup(url, target)
                assert result.returncode == 0, result.stdout + result.stderr
                assert f"backed up to {target}" in result.stdout
            acknowledged = submitter.finish(timeout=300)
    refused = admin_backup(url, backups[0])
    assert refused.returncode == 2 and "exists" in refused.stderr  # never overwritten
    for target in backups:
        assert target.stat().st_mode & 0o777 == 0o600
        copied = sqlite_client_ids(target)
        assert copied and copied <= set(acknowledged)  # a prefix of what was acknowledged
        check = admin_check(f"sqlite:///{target}")
        assert check.returncode == 0, check.stdout + check.stderr
    restored = f"sqlite:///{backups[-1]}"
    with (
        running_server(tmp_path, database_url=restored, env=FAST_SERVER_ENV) as server,
        ArmadaClient(server.url) as client,
    ):
        [job_id] = client.submit_jobs("load", "after-restore", [job("true")])
        assert client.job_status([job_id]) == {job_id: "QUEUED"}
    check = admin_check(restored)
    assert check.returncode == 0, check.stdout + check.stderr


def test_backup_of_a_postgresql_database_is_refused_with_the_procedure() -> None:
    result = admin_backup("postgresql://postgres@127.0.0.1/x", Path("/nonexistent/backup.db"))
    assert result.returncode == 2
    assert "pg_dump" in result.stderr and "docs/operations.md" in result.stderr


def pg_dump(url: str, target: Path) -> None:
    subprocess.run(["pg_dump", "-Fc", "-f", str(target), libpq_conninfo(url)], check=True, timeout=120)


def pg_restore(url: str, dump: Path) -> None:
    """Drop everything in the database and load ``dump`` in its place (a restore)."""
    conninfo = libpq_conninfo(url)
    subprocess.run(
        ["psql", "-q", "-c", "DROP SCHEMA public CASCADE; CREATE SCHEMA public;", conninfo],
        check=True,
        timeout=60,
    )
    subprocess.run(["pg_restore", "--no-owner", "-d", conninfo, str(dump)], check=True, timeout=120)


@pytest.mark.postgres
def test_restore_from_before_a_batch_started_converges_with_the_running_executor(tmp_path: Path) -> None:
    """The batch was queued in the backup; after the restore the executor still runs it
    under runs the database never heard of: those are killed, the jobs run again once."""
    state = tmp_path / "state"
    args = ("--process-cpu", "4", "--process-state-dir", str(state))
    port = free_port()
    dump = tmp_path / "before.dump"
    with postgres_database() as url:
        with running_server(tmp_path, database_url=url, env=FAST_SERVER_ENV, port=port) as server:
            client = ArmadaClient(server.url)
            client.create_queue(Queue(name="q"))
            ids = client.submit_jobs("q", "batch", [job("sleep 20") for _ in range(4)])
            pg_dump(url, dump)  # nothing leased yet: no executor
            with executor(tmp_path, server.url, "c1", backend="process", args=args) as running:
                wait_for(states_are(client, ids, "RUNNING"), what="the batch running")
                before_restore = process_groups(state)
                assert len(before_restore) == 4
                server.process.stop()
                pg_restore(url, dump)
                with running_server(tmp_path, database_url=url, env=FAST_SERVER_ENV, port=port):
                    wait_for(
                        lambda: not any(alive(pid) for pid in before_restore),
                        timeout=60,
                        what="the runs the restored database does not know killed",
                    )
                    wait_for(states_are(client, ids, "RUNNING"), timeout=60, what="the batch running again")
                    assert len(process_groups(state)) == 4  # each job runs once
                    events = [e.event for e in client.job_set_events("q", "batch")]
                    assert running.process.poll() is None  # the executor carried on
        client.close()
        leased = [e for e in events if isinstance(e, ev.JobLeased)]
        assert sorted(e.job_id for e in leased) == sorted(ids)  # one run each in the restored log
        check = admin_check(url)
        assert check.returncode == 0, check.stdout + check.stderr


@pytest.mark.postgres
def test_restore_from_while_a_batch_ran_ends_its_runs_once_and_reruns_them(tmp_path: Path) -> None:
    """The backup holds runs that have since finished and been forgotten by the executor: the
    restored server ends each as lost once and the retry rules run the job again."""
    args = ("--process-cpu", "4", "--process-state-dir", str(tmp_path / "state"))
    port = free_port()
    dump = tmp_path / "during.dump"
    with postgres_database() as url:
        with running_server(tmp_path, database_url=url, env=FAST_SERVER_ENV, port=port) as server:
            client = ArmadaClient(server.url)
            client.create_queue(Queue(name="q"))
            with executor(tmp_path, server.url, "c1", backend="process", args=args):
                ids = client.submit_jobs("q", "batch", [job("sleep 4") for _ in range(3)])
                wait_for(states_are(client, ids, "RUNNING"), what="the batch running")
                pg_dump(url, dump)  # the runs are active in the backup
                wait_for(states_are(client, ids, "SUCCEEDED"), timeout=60, what="the batch done")
                server.process.stop()
                pg_restore(url, dump)
                with running_server(tmp_path, database_url=url, env=FAST_SERVER_ENV, port=port):
                    wait_for(states_are(client, ids, "SUCCEEDED"), timeout=90, what="the batch run again")
                    events = [e.event for e in client.job_set_events("q", "batch")]
        client.close()
        for job_id in ids:
            mine = [e for e in events if e.job_id == job_id]
            runs = [e.run_id for e in mine if isinstance(e, ev.JobLeased)]
            assert len(runs) == 2, [e.type for e in mine]  # the restored run, and its rerun
            ended_first = [
                e.type for e in mine if e.run_id == runs[0] and e.type not in ("leased", "pending", "running")
            ]
            assert len(ended_first) == 1, ended_first  # the restored run ended once, as lost
            assert [e.type for e in mine if e.type == "succeeded"] == ["succeeded"]
        check = admin_check(url)
        assert check.returncode == 0, check.stdout + check.stderr
