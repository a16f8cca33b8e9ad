"""``armada watch`` follows a job set for as long as the user wants: through a minute of
silence (twice the client's 30 s timeout) and a server restart, until Ctrl-C."""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import pytest

from tests.processes import ROOT, armada_command, free_port, process_env, running_server

pytestmark = pytest.mark.slow

SILENCE = 60.0
EXAMPLE = ROOT / "examples" / "example-job.yaml"


class Lines:
    """The lines of a pipe, read by a thread so that the test can wait with a timeout."""

    def __init__(self, pipe: IO[str]) -> None:
        self._pipe = pipe
        self._lines: queue.Queue[str] = queue.Queue()
        self._reader = threading.Thread(target=self._read, args=(pipe,), daemon=True)
        self._reader.start()

    def _read(self, pipe: IO[str]) -> None:
        for line in pipe:
            self._lines.put(line.rstrip("\n"))

    def next(self, timeout: float = 30) -> str:
        return self._lines.get(timeout=timeout)

    def close(self) -> None:
        """After the process has exited: the reader has seen the end, the pipe can go."""
        self._reader.join(timeout=10)
        self._pipe.close()

    def pending(self) -> list[str]:
        lines = []
        while not self._lines.empty():
            lines.append(self._lines.get_nowait())
        return lines


@contextmanager
def ctrl_c_reaches_children() -> Iterator[None]:
    """Children started inside get SIGINT's default, as a terminal's foreground job has it.

    A test run started in the background by a non-interactive shell (``pytest … &``) has SIGINT
    ignored, and an ignored signal is inherited across exec: the watcher would never see the
    Ctrl-C this test sends. A handled signal is reset to its default by exec instead."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def submit(url: str) -> None:
    subprocess.run(
        armada_command("submit", str(EXAMPLE)), env=process_env({"ARMADA_URL": url}), check=True, timeout=60
    )


def events(lines: Lines, count: int) -> list[tuple[int, str, str]]:
    """The next ``count`` events as (message id, type, job id)."""
    found = []
    for _ in range(count):
        result = json.loads(lines.next())["result"]
        ((kind, fields),) = result["message"].items()
        found.append((int(result["id"]), kind, fields["jobId"]))
    return found


def test_watch_outlasts_silence_and_a_server_restart_and_only_ctrl_c_ends_it(tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = process_env({"ARMADA_URL": url})
    watcher: subprocess.Popen[str] | None = None
    pipes: list[Lines] = []
    try:
        with running_server(tmp_path, port=port):
            subprocess.run(armada_command("queue", "create", "example"), env=env, check=True, timeout=60)
            watch = armada_command("watch", "example", "job-set-1", "--raw")
            pipe = subprocess.PIPE
            with ctrl_c_reaches_children():
                watcher = subprocess.Popen(watch, env=env, stdout=pipe, stderr=pipe, text=True)
            assert watcher.stdout is not None and watcher.stderr is not None
            out, err = pipes = [Lines(watcher.stdout), Lines(watcher.stderr)]
            time.sleep(SILENCE)
            assert watcher.poll() is None, err.pending()
            submit(url)
            first = events(out, 2)
        assert "lost" in err.next(), "the watcher says that it reconnects"
        with running_server(tmp_path, port=port):
            submit(url)
            second = events(out, 2)
            assert watcher.poll() is None
        assert [kind for _, kind, _ in first + second] == ["submitted", "queued"] * 2
        ids = [message_id for message_id, _, _ in first + second]
        assert ids == sorted(set(ids)), "each event once, in order"
        assert first[0][2] != second[0][2]
    finally:
        if watcher is not None:
            watcher.send_signal(signal.SIGINT)
            code = watcher.wait(timeout=30)
        for lines in pipes:
            lines.close()
    assert code == 130
