"""The CLI starts fast: help and user commands import neither the server nor the executor.

Each case runs ``armada.cli.main`` in a fresh interpreter and lists the modules it ended
with. The user commands talk to a port where nothing listens: they fail to connect, after
having imported everything a successful call needs (the client, the wire types).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.processes import ROOT, free_port, process_env

#: The server's and the executor's dependencies: none may load for a user's command.
HEAVY = ("litestar", "sqlalchemy", "alembic", "numpy", "uvicorn", "kubernetes_asyncio")

RUN_CLI = """
import json, sys
from armada.cli.main import main
sys.argv = ["armada", *json.loads(sys.argv[1])]
try:
    main()
except SystemExit:
    pass
finally:
    with open(MODULES, "w") as out:
        json.dump(sorted(sys.modules), out)
"""


def modules_after(tmp_path: Path, *args: str) -> set[str]:
    """The modules loaded by ``armada ARGS`` (whatever its exit status)."""
    listing = tmp_path / "modules.json"
    script = RUN_CLI.replace("MODULES", repr(str(listing)))
    env = process_env({"ARMADA_URL": f"http://127.0.0.1:{free_port()}"})
    subprocess.run(
        [sys.executable, "-c", script, json.dumps(args)],
        check=False,
        env=env,
        cwd=ROOT,
        capture_output=True,
        timeout=60,
    )
    return set(json.loads(listing.read_text()))


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["version"],
        ["serve", "--help"],
        ["executor", "--help"],
        ["queue", "list"],
        ["queue", "create", "example"],
        ["submit", str(ROOT / "examples" / "example-job.yaml")],
        ["watch", "example", "job-set-1", "--exit-if-inactive"],
        ["job", "status", "01hzzzzzzzzzzzzzzzzzzzzzzz"],
        ["logs", "01hzzzzzzzzzzzzzzzzzzzzzzz", "--since", "1m"],
        ["report", "scheduling"],
        ["executor", "list"],
        ["executor-settings", "cordon", "c1", "--reason", "upgrade"],
        ["node", "cordon", "n1"],
        ["cancel", "executor", "c1"],
        ["preempt", "node", "n1", "--executor", "c1"],
    ],
    ids=lambda args: " ".join(args[:2]),
)
def test_help_and_user_commands_import_no_server_or_executor_modules(tmp_path: Path, args: list[str]) -> None:
    loaded = modules_after(tmp_path, *args)
    heavy = sorted(name for name in loaded if name.split(".")[0] in HEAVY)
    assert not heavy, f"armada {' '.join(args)} imported {heavy}"
    assert "armada.cli.main" in loaded


def test_a_user_command_loads_the_client_and_the_wire_types(tmp_path: Path) -> None:
    """The check above is not vacuous: the command got as far as the client."""
    loaded = modules_after(tmp_path, "queue", "list")
    assert {"httpx", "msgspec", "armada.client.sync", "armada.model.wire.queues"} <= loaded
