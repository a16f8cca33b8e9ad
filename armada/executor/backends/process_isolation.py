"""What isolates a process backend's jobs (a Unix user, nothing more) and when it must not start.

A job of the process backend is a process on this host. Run as the executor's own user it
can do what that user can: read the server's database, settings and secrets and other
runs' output, kill the server. So the backend refuses to serve a server reachable from
other machines unless ``executor.process.allowRemoteSubmitters`` accepts that everyone who
can submit there runs code here; and an executor running as root can run jobs as
``executor.process.runAsUser`` instead, in a clean environment, provided nothing the server
keeps private (its settings, database, keys) is readable by that user.
"""

from __future__ import annotations

import os
import pwd
import stat
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from armada.auth.bind_address import is_loopback
from armada.executor.backends.process_state import foreign_state, state_root
from armada.executor.settings import ProcessSettings

_HELPER = str(Path(__file__).with_name("run_as.py"))
#: ``PATH`` of a job run as another user (the executor's own may name its private tools).
_PATH = "/usr/local/bin:/usr/bin:/bin"
#: Variables of the executor's environment a job run as another user still gets.
_KEPT = ("LANG", "LC_ALL", "TZ")


class IsolationError(ValueError):
    """``executor.process.runAsUser`` cannot be used; the message says why."""


@dataclass(frozen=True)
class RunAs:
    """The user jobs run as: no supplementary groups, only its primary group."""

    name: str
    uid: int
    gid: int
    home: str

    def job_env(self) -> dict[str, str]:
        """What a job inherits instead of the executor's environment (which may hold secrets)."""
        base = {"PATH": _PATH, "HOME": self.home, "USER": self.name, "LOGNAME": self.name}
        return base | {name: os.environ[name] for name in _KEPT if name in os.environ}

    def helper_argv(self) -> list[str]:
        """The command that drops to this user before running a job (see ``run_as.py``)."""
        return [sys.executable, "-I", "-S", _HELPER, str(self.uid), str(self.gid)]


def resolve_run_as(user: str) -> RunAs | None:
    """The user ``executor.process.runAsUser`` names (a name or a uid); None if empty."""
    if not user:
        return None
    try:
        entry = pwd.getpwuid(int(user)) if user.isdigit() else pwd.getpwnam(user)
    except (KeyError, OverflowError) as exc:
        raise IsolationError(f"executor.process.runAsUser: no user {user!r} on this host") from exc
    if entry.pw_uid == 0:
        raise IsolationError("executor.process.runAsUser names root: name an unprivileged user")
    if os.geteuid() != 0:
        raise IsolationError(
            f"executor.process.runAsUser needs the executor to run as root (it runs as uid {os.geteuid()})"
        )
    return RunAs(name=entry.pw_name, uid=entry.pw_uid, gid=entry.pw_gid, home=entry.pw_dir)


def env_descriptor(env: dict[str, str]) -> int:
    """A descriptor (close-on-exec, at offset 0) holding ``env`` as ``run_as.py`` reads it:
    a job's variables, secrets among them, never appear on a command line or a disk."""
    fd = os.memfd_create("armada-run-env", os.MFD_CLOEXEC)
    data = b"\0".join(f"{name}={value}".encode("utf-8", "surrogateescape") for name, value in env.items())
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def readable_by(path: Path, user: RunAs) -> bool:
    """Whether ``user`` (its primary group only) could read ``path``: every directory on the
    way searchable, the file readable, by mode bits (ACLs are not looked at)."""
    target = path.resolve()
    for place in (*reversed(target.parents), target):
        try:
            info = place.stat()
        except OSError:
            return False
        need = stat.S_IXOTH if place != target else stat.S_IROTH
        if info.st_uid == user.uid:
            need <<= 6
        elif info.st_gid == user.gid:
            need <<= 3
        if not info.st_mode & need:
            return False
    return True


def process_refusals(
    settings: ProcessSettings,
    cluster_id: str,
    server_host: str,
    private: Iterable[Path],
    on_command_line: Mapping[str, str] | None = None,
) -> list[str]:
    """Why a process backend serving the server on ``server_host`` (its bind address, or the
    host of the executor's ``serverUrl``) must not start; ``private`` are files a job must not
    read (settings, database, keys), ``on_command_line`` the options given a secret on the
    command line (which every user can read in ``/proc``), each with where to give it
    instead. Empty: it may start."""
    refusals = foreign_state(state_root(settings, cluster_id))
    if not is_loopback(server_host) and not settings.allow_remote_submitters:
        refusals.append(
            f"the process backend runs every job as a process on this host, and the server ({server_host!r}) "
            "is not on loopback: anyone who can submit jobs there could run code here. Set "
            "executor.process.allowRemoteSubmitters true to accept that (docs/security.md), or use "
            "the kubernetes backend"
        )
    try:
        user = resolve_run_as(settings.run_as_user)
    except IsolationError as exc:
        return [*refusals, str(exc)]
    if user is not None:
        refusals += [
            f"{path} is readable by executor.process.runAsUser {user.name!r}, so any job could read it: "
            f"make it private (chmod 600 {path})"
            for path in private
            if path.exists() and readable_by(path, user)
        ]
        refusals += [
            f"{option} holds a secret on the command line, which every user of this host (any job) "
            f"can read: give it in {instead}"
            for option, instead in (on_command_line or {}).items()
        ]
    return refusals


def url_host(url: str) -> str:
    """The host of a server URL, as :func:`process_refusals` takes it."""
    return urlsplit(url).hostname or ""
