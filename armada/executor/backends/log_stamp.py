"""The process backend's log stamper: one long-lived process per executor process.

Run as a script (``python -I -S log_stamp.py CONTROL_FD``). ``CONTROL_FD`` is a
``SOCK_SEQPACKET`` socket to the executor, which sends one message per run,
``run id NUL output path NUL max bytes``, with the read end of the run's stdout/stderr pipe
attached. Each line read from a pipe is written to the run's output prefixed with its
arrival time, as Kubernetes stamps log lines (``timestamps=true``), so that logs can be
read ``since`` a time. Once an output holds half of its max bytes it becomes
``OUTPUT.1`` (replacing the older half): a run's log never takes more than its max on disk.
When every writer of a run's pipe has gone, its output is closed and the run id is sent
back (the ids of runs that end together in one message), so the executor reports a run's
end only once all of its output is on disk.

Why one process and not one per run: starting an interpreter per run cost ~8 ms of CPU,
more than the run itself for short jobs. The stamper lives in its own session, so it
survives an executor restart (the runs' pipes stay open) and is not killed with any run;
it exits once its executor has gone and every pipe it holds has closed. Standard library
only, and no ``site``: it starts in milliseconds.
"""

from __future__ import annotations

import contextlib
import os
import resource
import selectors
import socket
import sys
import time

#: Longest piece of a line stamped at once (a longer line is cut into pieces).
PIECE_BYTES = 64 * 1024
_READ_BYTES = 64 * 1024
_CONTROL_BYTES = 8192
#: Largest answer message: run ids joined by NUL (the executor reads up to 4,096 bytes).
ANSWER_BYTES = 4096


def _stamp() -> bytes:
    nanos = time.time_ns()
    whole, rest = divmod(nanos, 1_000_000_000)
    return (time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{rest:09d}Z ").encode()


def _private(path: str, flags: int) -> int:
    """Output is read by the executor's user alone (it may hold a job's secrets)."""
    return os.open(path, flags, 0o600)


class Output:
    """One run's stamped output file, rotated at half of its cap."""

    __slots__ = ("file", "half", "path", "pending", "run_id", "size")

    def __init__(self, run_id: str, path: str, max_bytes: int) -> None:
        self.run_id = run_id
        self.path = path
        self.half = max(1, max_bytes // 2)
        self.pending = b""
        self.file = open(path, "ab", buffering=0, opener=_private)  # noqa: SIM115 (reopened on rotation)
        self.size = self.file.tell()

    def feed(self, data: bytes) -> None:
        """Stamp and write each whole line of what has arrived; keep a partial last line."""
        lines = (self.pending + data).split(b"\n")
        self.pending = lines.pop()
        pieces = [piece for line in lines for piece in _pieces(line)]
        while len(self.pending) >= PIECE_BYTES:
            pieces.append(self.pending[:PIECE_BYTES])
            self.pending = self.pending[PIECE_BYTES:]
        if pieces:
            stamp = _stamp()
            self._write([stamp + piece + b"\n" for piece in pieces])

    def finish(self) -> None:
        """The pipe has closed: write a last unterminated line, close the file."""
        if self.pending:
            self._write([_stamp() + self.pending + b"\n"])
            self.pending = b""
        self.file.close()

    def _write(self, records: list[bytes]) -> None:
        batch: list[bytes] = []
        batched = 0
        for record in records:
            if self.size + batched + len(record) > self.half and self.size + batched:
                self._append(batch)
                self.file.close()
                os.replace(self.path, self.path + ".1")
                self.file = open(self.path, "ab", buffering=0, opener=_private)  # noqa: SIM115
                self.size, batch, batched = 0, [], 0
            batch.append(record)
            batched += len(record)
        self._append(batch)

    def _append(self, batch: list[bytes]) -> None:
        if batch:
            data = b"".join(batch)
            self.file.write(data)
            self.size += len(data)


def _pieces(line: bytes) -> list[bytes]:
    if len(line) <= PIECE_BYTES:
        return [line]
    return [line[i : i + PIECE_BYTES] for i in range(0, len(line), PIECE_BYTES)]


class Stamper:
    """The select loop: the control socket and one pipe per run still writing."""

    def __init__(self, control: socket.socket) -> None:
        self.control: socket.socket | None = control
        self.selector = selectors.DefaultSelector()
        self.selector.register(control, selectors.EVENT_READ, None)
        self.outputs: dict[int, Output | None] = {}  # None: the output could not be opened
        #: Run ids whose end the executor has not been told yet (its socket was full).
        self.answers: list[bytes] = []
        self.waiting_for_room = False

    def run(self) -> None:
        while self.control is not None or self.outputs:
            for key, events in self.selector.select():
                if key.data is not None:
                    self._pump(key.fd, key.data)
                    continue
                if events & selectors.EVENT_WRITE:
                    self._answer()
                if events & selectors.EVENT_READ and self.control is not None:
                    self._receive()

    def _receive(self) -> None:
        assert self.control is not None
        message, fds, _, _ = socket.recv_fds(self.control, _CONTROL_BYTES, 1)
        if not message and not fds:  # the executor has gone: finish what is open, then exit
            self.selector.unregister(self.control)
            self.control.close()
            self.control = None
            return
        run_id, path, max_bytes = message.decode().split("\0")
        for fd in fds:
            try:
                output: Output | None = Output(run_id, path, int(max_bytes))
            except OSError as exc:  # still drain the pipe: the run must not die of SIGPIPE
                print(f"log stamper: run {run_id}: cannot open {path}: {exc}", file=sys.stderr)
                output = None
            self.outputs[fd] = output
            self.selector.register(fd, selectors.EVENT_READ, run_id)

    def _pump(self, fd: int, run_id: str) -> None:
        output = self.outputs[fd]
        data = os.read(fd, _READ_BYTES)
        if output is not None:
            try:
                if data:
                    output.feed(data)
                else:
                    output.finish()
            except OSError as exc:  # e.g. the run's directory was removed: drop its output only
                print(f"log stamper: run {run_id}: {exc}", file=sys.stderr)
                with contextlib.suppress(OSError):
                    output.file.close()
                self.outputs[fd] = None
        if not data:
            self.selector.unregister(fd)
            os.close(fd)
            del self.outputs[fd]
            self._tell_drained(run_id)

    def _tell_drained(self, run_id: str) -> None:
        if self.control is not None:
            self.answers.append(run_id.encode())
            self._answer()

    def _answer(self) -> None:
        """Send the waiting run ids, as many per message as fit. The socket's buffer holds
        ~280 small messages: when runs end faster than a busy executor reads, the rest wait
        for room (the control socket is then watched for it) rather than be dropped, which
        made each of their runs wait out the executor's bound (2 s) for its end."""
        assert self.control is not None
        while self.answers:
            count, size = 1, len(self.answers[0])
            while count < len(self.answers) and size + 1 + len(self.answers[count]) <= ANSWER_BYTES:
                size += 1 + len(self.answers[count])
                count += 1
            try:
                self.control.send(b"\0".join(self.answers[:count]), socket.MSG_DONTWAIT)
            except BlockingIOError:
                break
            except OSError:  # the executor has gone: nobody is waiting for these
                self.answers.clear()
                break
            del self.answers[:count]
        if self.control is not None and bool(self.answers) != self.waiting_for_room:
            self.waiting_for_room = bool(self.answers)
            events = selectors.EVENT_READ | (selectors.EVENT_WRITE if self.waiting_for_room else 0)
            self.selector.modify(self.control, events, None)


def _raise_open_file_limit() -> None:
    """Two descriptors per run still writing: allow as many as the hard limit does."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


if __name__ == "__main__":
    if os.fork():  # detach: the executor waits for this parent only, init reaps the stamper
        os._exit(0)
    _raise_open_file_limit()
    Stamper(socket.socket(fileno=int(sys.argv[1]))).run()
