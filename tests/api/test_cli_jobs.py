"""``armada jobs`` against a real server with basic users (``examples/config/auth-basic.yaml``)
on SQLite and PostgreSQL: filters, ``--owner me``, output formats, terminal width, read
rights and ``--watch``."""

from __future__ import annotations

import json
import os
import queue as queues
import subprocess
import sys
import threading
import uuid

import msgspec
import pytest
import yaml
from typer.testing import CliRunner, Result

from armada.cli.main import app
from armada.model.queues import Queue
from armada.settings import Settings
from tests.api.accounts import as_user, example_settings
from tests.api.jobs import item, start
from tests.processes import ROOT
from tests.servers import ApiServer

LONG_SET = "a-job-set-with-a-name-far-longer-than-any-terminal-column-should-be-" + "x" * 40


@pytest.fixture(scope="module")
def settings() -> Settings:
    return example_settings()


class Planted(msgspec.Struct, frozen=True):
    queue: str
    alice_running: str
    alice_queued: str
    admins: str


@pytest.fixture(scope="module")
def planted(server: ApiServer) -> Planted:
    """A team-a queue: two jobs of alice's (one running) and one of the admin's."""
    name = f"a-{uuid.uuid4().hex[:8]}"
    with as_user(server, "admin") as admin:
        admin.create_queue(Queue(name=name, group_owners=["team-a"]))
        (admins,) = admin.submit_jobs(name, "admin-set", [item()])
    with as_user(server, "alice") as alice:
        running, queued = alice.submit_jobs(name, LONG_SET, [item(), item()])
    start(server, name, LONG_SET, running)
    return Planted(name, running, queued, admins)


def armada(server: ApiServer, user: str, *args: str, columns: int = 200) -> Result:
    env = {
        "ARMADA_URL": server.url,
        "ARMADA_USERNAME": user,
        "ARMADA_PASSWORD": f"{user}-pass",
        "COLUMNS": str(columns),
    }
    return CliRunner().invoke(app, ["jobs", *args], env=env)


def ids(result: Result) -> list[str]:
    assert result.exit_code == 0, result.output
    return result.stdout.split()


def test_whoami_names_the_caller_and_its_groups(server: ApiServer) -> None:
    with as_user(server, "alice") as alice:
        me = alice.whoami()
    assert (me.name, me.groups) == ("alice", ["everyone", "team-a"])


def test_filters_and_owner_me(server: ApiServer, planted: Planted) -> None:
    everything = ids(armada(server, "alice", "--queue", planted.queue, "-o", "name"))
    assert everything == [planted.alice_queued, planted.alice_running, planted.admins]  # newest first
    mine = ids(armada(server, "alice", "--queue", planted.queue, "--owner", "me", "-o", "name"))
    assert mine == [planted.alice_queued, planted.alice_running]
    admins = ids(armada(server, "alice", "-q", planted.queue, "--owner", "admin", "-o", "name"))
    assert admins == [planted.admins]
    running = ids(armada(server, "alice", "-q", planted.queue, "--state", "running", "-o", "name"))
    assert running == [planted.alice_running]
    both = armada(server, "alice", "-q", planted.queue, "--state", "RUNNING,queued", "--state", "failed")
    assert [line.split()[0] for line in both.stdout.splitlines()[1:]] == everything
    by_set = ids(armada(server, "alice", "-q", planted.queue, "--job-set", "admin-set", "-o", "name"))
    assert by_set == [planted.admins]
    assert ids(armada(server, "alice", "-q", planted.queue, "--since", "1h", "-o", "name")) == everything
    assert ids(armada(server, "alice", "-q", planted.queue, "--limit", "1", "-o", "name")) == everything[:1]


def test_bad_options_exit_2_naming_the_option(server: ApiServer) -> None:
    for args, named in ((["--since", "yesterday"], "--since"), (["--state", "runing"], "--state")):
        result = armada(server, "alice", *args)
        assert result.exit_code == 2
        assert named in result.stderr


def test_table_fits_the_terminal_and_wide_shows_more(server: ApiServer, planted: Planted) -> None:
    table = armada(server, "alice", "-q", planted.queue, columns=80).stdout.splitlines()
    assert table[0].split() == ["JOB", "ID", "QUEUE", "JOB", "SET", "STATE", "AGE"]
    assert all(len(line) <= 80 for line in table)
    running = next(line for line in table if line.startswith(planted.alice_running))
    assert "RUNNING" in running and "…" in running  # the long job set gave up width
    wide = armada(server, "alice", "-q", planted.queue, "-o", "wide", columns=400).stdout.splitlines()
    assert wide[0].split()[-8:] == ["OWNER", "PRIORITY", "CPU", "MEMORY", "GPU", "CLUSTER", "NODE", "REASON"]
    running = next(line for line in wide if line.startswith(planted.alice_running))
    assert LONG_SET in running and "alice" in running and "cluster-1" in running and "node-1" in running


def test_json_and_yaml_carry_every_field(server: ApiServer, planted: Planted) -> None:
    as_json = json.loads(armada(server, "alice", "-q", planted.queue, "--owner", "me", "-o", "json").stdout)
    assert [job["jobId"] for job in as_json] == [planted.alice_queued, planted.alice_running]
    assert (as_json[1]["state"], as_json[1]["owner"], as_json[1]["node"]) == ("RUNNING", "alice", "node-1")
    documents = list(yaml.safe_load_all(armada(server, "alice", "-q", planted.queue, "-o", "yaml").stdout))
    listed = [document["jobId"] for document in documents]
    assert listed == [*(job["jobId"] for job in as_json), planted.admins]


def test_only_queues_the_caller_may_read(server: ApiServer, planted: Planted) -> None:
    """Bob (team-b) lists nothing of team-a's queue, whichever filter he tries."""
    assert ids(armada(server, "bob", "-q", planted.queue, "-o", "name")) == []
    assert planted.admins not in ids(armada(server, "bob", "--owner", "admin", "-o", "name"))
    assert ids(armada(server, "bob", "--owner", "me", "-o", "name")) == []
    assert planted.admins in ids(armada(server, "admin", "--owner", "me", "-o", "name"))


def test_watch_prints_jobs_as_they_change(server: ApiServer) -> None:
    name = f"w-{uuid.uuid4().hex[:8]}"
    with as_user(server, "admin") as admin:
        admin.create_queue(Queue(name=name, group_owners=["team-a"]))
    with as_user(server, "alice") as alice:
        (first,) = alice.submit_jobs(name, "first", [item()])
    env = {**os.environ, "ARMADA_USERNAME": "alice", "ARMADA_PASSWORD": "alice-pass", "COLUMNS": "200"}
    args = [sys.executable, "-m", "armada", "jobs", "--url", server.url, "-q", name, "--watch"]
    with subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True) as process:
        lines: queues.Queue[str] = queues.Queue()
        reader = threading.Thread(target=lambda: [lines.put(line) for line in process.stdout or ()])
        reader.start()
        try:
            assert lines.get(timeout=60).startswith("JOB ID")
            assert lines.get(timeout=60).split()[:2] == [first, name]
            with as_user(server, "alice") as alice:
                (new,) = alice.submit_jobs(name, "later", [item()])
            assert lines.get(timeout=60).split()[:2] == [new, name]
            start(server, name, "later", new)
            changed = lines.get(timeout=60).split()
            while changed[0] == new and "RUNNING" not in changed:  # it may pass through LEASED first
                changed = lines.get(timeout=60).split()
            assert changed[0] == new and "RUNNING" in changed
        finally:
            process.terminate()
            reader.join(timeout=30)
