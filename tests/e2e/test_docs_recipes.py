"""The docs' copy-and-paste recipes, run as written: extracted from the Markdown, so the
page cannot drift from what is tested.

A recipe is the ```bash (or ```python) blocks of a page that follow ``<!-- recipe: NAME -->``,
run in order in one ``bash -eu`` in an empty directory, with ``armada`` on the PATH. Only the
database URL is replaced (by a fresh database's); the recipe's ports are used as they are
unless something on this machine holds one, which is then moved to a free port.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from armada.client import ArmadaClient
from armada.client.config import ClientConfig
from armada.model.queues import Queue
from tests.databases import postgres_database
from tests.processes import ROOT, free_port, running_server

BIN = Path(sys.executable).parent
DATABASE_LINE = re.compile(r"^export ARMADA_DATABASE_URL=\S+$", re.MULTILINE)


def recipe(page: Path, name: str, language: str = "bash") -> str:
    """The ``language`` blocks of ``page`` marked ``<!-- recipe: name -->``, joined in order."""
    marked = rf"<!-- recipe: {re.escape(name)} -->\n```{language}\n(.*?)```"
    blocks = re.findall(marked, page.read_text(), re.DOTALL)
    assert blocks, f"{page.name} has no recipe {name!r}"
    return "".join(blocks)


def _taken(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


#: Where a recipe names a port of its own: ``--port N``, ``--grpc-port N``, ``http://127.0.0.1:N``.
PORT = r"(?:(?<=--port )|(?<=--grpc-port )|(?<=http://127\.0\.0\.1:))"


def ports_freed(script: str) -> str:
    """``script`` with each of its ports that is taken here moved to a free one."""
    ports = {int(p) for p in re.findall(PORT + r"\d+", script)}
    for port in sorted(p for p in ports if _taken(p)):
        script = re.sub(PORT + rf"{port}\b", str(free_port()), script)
    return script


def run_recipe(script: str, workdir: Path, timeout: float = 120, env: dict[str, str] | None = None) -> str:
    """Run ``script`` in ``bash -eu`` in ``workdir`` (with ``env`` added); its output. Whatever
    it left running is stopped afterwards (it runs in a session of its own)."""
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("ARMADA_")}, **(env or {})}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    process = subprocess.Popen(
        ["bash", "-eu", "-c", script],
        cwd=workdir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        text=True,
    )
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        output = f"(timed out after {timeout} s) {process.communicate()[0]}"
    finally:
        _stop_session(process.pid)
    assert process.returncode == 0, f"the recipe failed ({process.returncode}):\n{output}\n{_logs(workdir)}"
    return output


def _stop_session(pgid: int) -> None:
    """SIGTERM what the recipe left running, SIGKILL it if it will not go."""
    for signum, patience in ((signal.SIGTERM, 20.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pgid, signum)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + patience
        while time.monotonic() < deadline:
            try:
                os.killpg(pgid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)


def _logs(workdir: Path) -> str:
    return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}" for p in workdir.rglob("*.log"))


@pytest.mark.postgres
def test_two_replicas_with_authentication_on_one_machine(tmp_path: Path) -> None:
    script = recipe(ROOT / "docs" / "deployment.md", "two-replicas")
    assert len(DATABASE_LINE.findall(script)) == 1
    with postgres_database() as url:
        script = DATABASE_LINE.sub(f"export ARMADA_DATABASE_URL={url}", ports_freed(script))
        output = run_recipe(script, tmp_path)
    demo = tmp_path / "armada-demo"
    leaders = [name for name in output.split() if name.startswith("replica-") and name.endswith(".log")]
    assert len(leaders) == 1, output  # grep named exactly one leader
    standby = ({"replica-a.log", "replica-b.log"} - set(leaders)).pop()
    assert "standby: another replica leads the scheduler" in (demo / standby).read_text()
    assert "1 job(s) | succeeded: 1" in output, output  # the watch through the other replica
    assert "Last cycle" in output, output  # the report, whichever replica answers


def test_grpc_with_credentials_on_a_plaintext_channel(tmp_path: Path) -> None:
    script = recipe(ROOT / "docs" / "grpc.md", "grpc-plaintext-auth", "python")
    assert "127.0.0.1:50051" in script
    config = ROOT / "examples" / "config" / "auth-basic.yaml"
    port = 50051 if not _taken(50051) else free_port()
    with running_server(
        tmp_path, "--config", str(config), env={"ARMADA_SERVER_GRPC_PORT": str(port)}
    ) as server:
        admin = ClientConfig(armada_url=server.url, username="admin", password="admin-pass")
        with ArmadaClient(admin) as client:
            client.create_queue(Queue(name="docs"))
        result = subprocess.run(
            [sys.executable, "-c", script.replace("127.0.0.1:50051", f"127.0.0.1:{port}")],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert result.returncode == 0, result.stderr
    assert "'docs'" in result.stdout


def test_the_testsuite_runner_on_the_shipped_examples(tmp_path: Path) -> None:
    """Run from a directory holding the repository's ``examples`` (as from its root)."""
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    script = ports_freed(recipe(ROOT / "docs" / "testsuite.md", "testsuite"))
    grpc = {"ARMADA_SERVER_GRPC_PORT": str(free_port())} if _taken(50051) else {}  # the default port
    output = run_recipe(script, tmp_path, env=grpc)
    cases = len(list((ROOT / "examples" / "testsuite").glob("*.yaml")))
    assert f"{cases} passed, 0 failed" in output, output
