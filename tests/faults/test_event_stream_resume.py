"""A watcher cut off at random points (and by a server crash) resumes with ``fromMessageId``
and receives every event of its job set exactly once, in order."""

from __future__ import annotations

import random
import signal
import threading
from pathlib import Path

import httpx
import pytest

from armada.client import ArmadaApiError, ArmadaClient
from armada.model.queues import Queue
from tests.e2e.cluster import executor, fake_nodes
from tests.faults.workload import LOAD_EXECUTOR_ENV, LOAD_SERVER_ENV, Submitter, fault_seed
from tests.processes import free_port, running_server

pytestmark = pytest.mark.slow

JOBS = 400


class ResumingWatcher:
    """Watches a job set, hanging up after a random number of events and resuming."""

    def __init__(self, url: str, queue: str, job_set: str, rng: random.Random) -> None:
        self.url, self.queue, self.job_set, self.rng = url, queue, job_set, rng
        self.received: list[tuple[int, str, str]] = []  # (message id, type, job id)
        self.hang_ups = 0
        self.succeeded = 0

    @property
    def last_id(self) -> str:
        return str(self.received[-1][0]) if self.received else ""

    def watch_once(self) -> None:
        """One connection: read up to a random number of events, then hang up."""
        budget = self.rng.randint(1, 300)
        with ArmadaClient(self.url) as client:
            stream = client.job_set_events(self.queue, self.job_set, watch=True, from_message_id=self.last_id)
            try:
                for message in stream:
                    self.received.append((int(message.message_id), message.event.type, message.event.job_id))
                    self.succeeded += message.event.type == "succeeded"
                    budget -= 1
                    if budget == 0 or self.succeeded == JOBS:  # the last event of the job set
                        break
            except (httpx.TransportError, ArmadaApiError):
                pass  # the server went away mid-stream: resume like any other hang-up
            finally:
                stream.close()  # type: ignore[attr-defined]
        self.hang_ups += 1


def test_resumed_watcher_sees_every_event_once_in_order_across_hang_ups_and_a_crash(tmp_path: Path) -> None:
    seed = fault_seed()
    rng = random.Random(seed)
    port = free_port()
    crash_after = rng.uniform(1.0, 4.0)  # seconds into the workload, likely mid-stream
    with running_server(tmp_path, env=LOAD_SERVER_ENV, port=port) as first:
        with ArmadaClient(first.url) as client:
            client.create_queue(Queue(name="watched"))
        with executor(tmp_path, first.url, "sim", args=fake_nodes(20, cpu="4"), env=LOAD_EXECUTOR_ENV):
            submitter = Submitter(first.url, "watched", "set", JOBS, batch=20, command="sleep 0.5")
            submitter.start()
            watcher = ResumingWatcher(first.url, "watched", "set", rng)
            threading.Timer(crash_after, first.process.signal, (signal.SIGKILL,)).start()
            while first.process.process.poll() is None:
                watcher.watch_once()
            with running_server(tmp_path, env=LOAD_SERVER_ENV, port=port), ArmadaClient(first.url) as client:
                while watcher.succeeded < JOBS:
                    watcher.watch_once()
                submitter.finish(timeout=60)
                everything = [
                    (int(m.message_id), m.event.type, m.event.job_id)
                    for m in client.job_set_events("watched", "set", from_message_id="")
                ]
    context = f"seed {seed}, {watcher.hang_ups} hang-ups"
    ids = [message_id for message_id, _type, _job in watcher.received]
    assert ids == sorted(set(ids)), f"duplicated or out of order: {context}"
    assert watcher.received == everything, context
