"""CLI start-up: ``armada`` commands against the bare imports they cannot avoid.

    python bench/cli_startup.py --runs 9
    python bench/cli_startup.py --url http://127.0.0.1:8080   # an existing server

Each figure is the median wall time of ``--runs`` fresh interpreters, the four commands
interleaved so that a neighbour's load hits them alike:

- ``armada --help`` beside ``python -c "import typer"``;
- ``armada queue list`` (a real round trip to a real server, started here on a temporary
  SQLite file unless ``--url`` is given) beside ``python -c "import typer, httpx, msgspec"``.

A user waits for the interpreter and the imports before anything happens, so the ratios are
what the CLI adds to the floor (goal: at most 1.5 each). The last line is JSON.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import report
from tests.processes import ArmadaProcess, free_port, process_env, wait_until_healthy

COMMANDS: dict[str, list[str]] = {
    "help": [sys.executable, "-m", "armada", "--help"],
    "import_typer": [sys.executable, "-c", "import typer"],
    "queue_list": [sys.executable, "-m", "armada", "queue", "list"],
    "import_typer_httpx_msgspec": [sys.executable, "-c", "import typer, httpx, msgspec"],
}


@contextmanager
def server(url: str | None) -> Iterator[str]:
    """The given server, or a fresh ``armada serve`` with one queue to list."""
    if url:
        yield url
        return
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        process = ArmadaProcess(
            ["serve", "--port", str(port), "--database-url", f"sqlite:///{tmp}/armada.db"],
            cwd=Path(tmp),
            log_path=Path(tmp) / "serve.log",
            env={"ARMADA_LOGGING_LEVEL": "warning"},
        )
        try:
            base = f"http://127.0.0.1:{port}"
            wait_until_healthy(base, process)
            create = [sys.executable, "-m", "armada", "queue", "create", "bench", "--url", base]
            subprocess.run(create, env=process_env(), check=True, capture_output=True)
            yield base
        finally:
            process.stop()


def timed(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--runs", type=int, default=9, help="runs of each command (median reported)")
    parser.add_argument("--url", help="server for `queue list` (default: start one)")
    args = parser.parse_args()
    with server(args.url) as url:
        env = process_env({"ARMADA_URL": url})
        for command in COMMANDS.values():  # warm the page cache and .pyc files
            timed(command, env)
        samples: dict[str, list[float]] = {name: [] for name in COMMANDS}
        for _ in range(args.runs):
            for name, command in COMMANDS.items():
                samples[name].append(timed(command, env))
    medians = {name: round(statistics.median(values), 4) for name, values in samples.items()}
    for name, values in samples.items():
        print(f"{name:28} median {medians[name]:.3f} s  min {min(values):.3f} s  max {max(values):.3f} s")
    report(
        {
            "runs": args.runs,
            **{f"{name}_s": value for name, value in medians.items()},
            "help_ratio": round(medians["help"] / medians["import_typer"], 2),
            "queue_list_ratio": round(medians["queue_list"] / medians["import_typer_httpx_msgspec"], 2),
        }
    )


if __name__ == "__main__":
    main()
