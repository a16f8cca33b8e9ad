"""Runs' output pipes, handed to the executor's one log stamper (``log_stamp.py``).

Each run writes its stdout and stderr into a pipe whose read end goes to the stamper over a
``SOCK_SEQPACKET`` socket pair (``SCM_RIGHTS``); the stamper answers with the run's id once
that pipe has closed and its output is on disk. The stamper is started on first use, in its
own session: it outlives this executor process (a restarted executor starts its own, and
the old one exits once its runs' pipes have closed). This process keeps its own copy of
each read end until the run's answer: if the stamper dies, the runs' pipes still have a
reader (no ``SIGPIPE``) and are handed to a new stamper, losing at most a partial line.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from armada.executor.backends.log_stamp import ANSWER_BYTES

_STAMPER = str(Path(__file__).with_name("log_stamp.py"))


#: A run's pipe goes to at most this many stampers (each died while holding it).
_HAND_OVERS = 3


@dataclass
class _Pipe:
    """A run's pipe whose output the stamper has not finished yet."""

    message: bytes
    read_end: int
    drained: asyncio.Future[None]
    stamper: _Stamper | None = None
    hand_overs: int = 0


class OutputPipes:
    """The executor's end of its log stamper."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._stamper: _Stamper | None = None
        self._starting = asyncio.Lock()
        self._pipes: dict[str, _Pipe] = {}
        self._handing_again: set[asyncio.Task[None]] = set()

    async def open(self, run_id: str, output: Path, max_bytes: int) -> int:
        """A new pipe's write end for the run's stdout and stderr (the caller closes it once
        the run's process has it); the stamper writes what arrives, stamped, to ``output``."""
        read_end, write_end = os.pipe()
        message = f"{run_id}\0{output}\0{max_bytes}".encode()
        pipe = self._pipes[run_id] = _Pipe(message, read_end, asyncio.get_running_loop().create_future())
        try:
            await self._hand_over(pipe)
        except BaseException:
            self._finished(run_id)
            os.close(write_end)
            raise
        return write_end

    async def drained(self, run_id: str, within: float) -> None:
        """Wait (at most ``within`` seconds) until the stamper has written the run's last
        output; at once for a run this process did not start (adopted after a restart)."""
        pipe = self._pipes.get(run_id)
        if pipe is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(pipe.drained), within)

    async def close(self) -> None:
        """Let go of the stamper: it carries on until the runs' pipes have closed."""
        for task in self._handing_again:
            task.cancel()
        await asyncio.gather(*self._handing_again, return_exceptions=True)
        if self._stamper is not None:
            await self._stamper.let_go()
        for run_id in list(self._pipes):
            self._finished(run_id)

    async def _hand_over(self, pipe: _Pipe) -> None:
        """Send the pipe's read end to the current stamper; if that fails, the stamper is
        taken for dead, and its death hands this pipe (and the others) to a new one."""
        stamper = await self._current()
        pipe.stamper = stamper
        pipe.hand_overs += 1
        try:
            await _send_with_fd(stamper.control, pipe.message, pipe.read_end)
        except OSError:
            await stamper.fail()

    async def _current(self) -> _Stamper:
        async with self._starting:
            if self._stamper is None or self._stamper.lost:
                self._stamper = _Stamper(await _start(self._root), self._finished, self._replace)
            return self._stamper

    def _finished(self, run_id: str) -> None:
        """The run's output is done (or given up on): close our read end, end its wait."""
        pipe = self._pipes.pop(run_id, None)
        if pipe is not None:
            os.close(pipe.read_end)
            if not pipe.drained.done():
                pipe.drained.set_result(None)

    def _replace(self, dead: _Stamper) -> None:
        """A stamper died: hand every run it had not finished to a new one."""
        for run_id, pipe in list(self._pipes.items()):
            if pipe.stamper is dead:
                task = asyncio.get_running_loop().create_task(self._hand_again(run_id, pipe))
                self._handing_again.add(task)
                task.add_done_callback(self._handing_again.discard)

    async def _hand_again(self, run_id: str, pipe: _Pipe) -> None:
        if pipe.hand_overs >= _HAND_OVERS:
            self._finished(run_id)  # its writers get SIGPIPE: better than blocking for ever
            return
        try:
            await self._hand_over(pipe)
        except OSError:  # no stamper could be started
            self._finished(run_id)


class _Stamper:
    """One stamper process, through its control socket."""

    def __init__(
        self, control: socket.socket, answered: Callable[[str], None], died: Callable[[_Stamper], None]
    ) -> None:
        self.control = control
        self.lost = False
        self._answered = answered
        self._died = died
        self._listener = asyncio.create_task(self._listen())

    async def let_go(self) -> None:
        """Stop talking to it; it carries on with the pipes it has."""
        if not self.lost:
            self.lost = True
            self._listener.cancel()
            await asyncio.gather(self._listener, return_exceptions=True)
            self.control.close()

    async def fail(self) -> None:
        """Sending to it failed: take it for dead."""
        if not self.lost:
            await self.let_go()
            self._died(self)

    async def _listen(self) -> None:
        loop = asyncio.get_running_loop()
        with contextlib.suppress(OSError):
            while answer := await loop.sock_recv(self.control, ANSWER_BYTES):
                for run_id in answer.decode().split("\0"):  # the stamper sends several at once
                    self._answered(run_id)
        self.lost = True
        self.control.close()
        self._died(self)


async def _start(root: Path) -> socket.socket:
    """Start a stamper (it detaches itself: nobody here has to reap it) and connect to it."""
    errors = os.open(root / "stamper.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        launcher = await asyncio.create_subprocess_exec(
            sys.executable,
            "-I",
            "-S",
            _STAMPER,
            str(theirs.fileno()),
            pass_fds=(theirs.fileno(),),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=errors,
            cwd=root,
            start_new_session=True,
        )
        await launcher.wait()
    except BaseException:
        ours.close()
        raise
    finally:
        theirs.close()
        os.close(errors)
    ours.setblocking(False)
    return ours


async def _send_with_fd(stamper: socket.socket, message: bytes, fd: int) -> None:
    """Send one message with a descriptor attached, waiting while the socket is full."""
    loop = asyncio.get_running_loop()
    while True:
        try:
            socket.send_fds(stamper, [message], [fd])
            return
        except BlockingIOError:
            writable = loop.create_future()
            loop.add_writer(stamper.fileno(), writable.set_result, None)
            try:
                await writable
            finally:
                loop.remove_writer(stamper.fileno())
