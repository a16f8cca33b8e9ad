"""Drop to an unprivileged user, then run a job's command: ``python -I -S run_as.py UID GID ARGV...``.

The process backend's wrapper shell runs as the executor's user (root), so that a job can
neither forge its own record nor signal it; it runs this script with an empty environment
(a job's ``LD_PRELOAD`` or ``PATH`` must never reach a process running as root). The job's
environment comes on descriptor 3 (``NAME=value`` entries separated by NUL bytes), read
and closed before the switch. The command then runs as the same simple shell command as
without a user (``"$@"``), so a builtin such as ``exit 1`` still works. Standard library
only, run in isolated mode: it is started once per run.
"""

import os
import sys

_ENV_FD = 3


def _read_env() -> dict[str, str]:
    chunks = []
    while chunk := os.read(_ENV_FD, 1 << 16):
        chunks.append(chunk)
    os.close(_ENV_FD)
    entries = b"".join(chunks).split(b"\0")
    return dict(entry.decode("utf-8", "surrogateescape").split("=", 1) for entry in entries if b"=" in entry)


def main(argv: list[str]) -> None:
    uid, gid = int(argv[1]), int(argv[2])
    env = _read_env()
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    if os.getuid() != uid or os.geteuid() != uid or os.getegid() != gid:  # never run on as root
        sys.exit("armada-run-as: could not switch user")
    os.execve("/bin/sh", ["/bin/sh", "-c", '"$@"', "armada-run", *argv[3:]], env)


if __name__ == "__main__":
    main(sys.argv)
