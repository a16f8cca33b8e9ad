"""CLI start-up: ``armada`` commands against the bare imports they cannot avoid.

    python bench/cli_startup.py --runs 9
    python bench/cli_startup.py --url http://127.0.0.1:8080   # an existing server

Each figure is the median wall time of ``--runs`` fresh interpreters, the four commands
interleaved so that a neighbour's load hits them alike:

- ``armada --help`` beside ``python -c "import typer"``;
- ``armada queue list`` (a real round trip to a real server, started here on a temporary
  SQLite file unless ``--url`` is given) beside ``python -c "import typer, httpx, msgspec"``.

A user waits for the interpreter and the imports before anything happens, so the ratios are
what the CLI adds to the floor (goal: at most 1.5 each). Beside wall time, each run's CPU
time (user + system, of the child process) is reported: on a shared machine it is the
steadier figure. The last line is JSON.
"""

from __future__ import annotations

import argparse
import resource
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


def timed(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run of ``command``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def ratios(medians: dict[str, float], suffix: str) -> dict[str, float]:
    return {
        f"help_ratio{suffix}": round(medians["help"] / medians["import_typer"], 2),
        f"queue_list_ratio{suffix}": round(medians["queue_list"] / medians["import_typer_httpx_msgspec"], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--runs", type=int, default=9, help="runs of each command (median reported)")
    parser.add_argument("--url", help="server for `queue list` (default: start one)")
    args = parser.parse_args()
    with server(args.url) as url:
        env = process_env({"ARMADA_URL": url})
        for command in COMMANDS.values():  # warm the page cache and .pyc files
            timed(command, env)
        walls: dict[str, list[float]] = {name: [] for name in COMMANDS}
        cpus: dict[str, list[float]] = {name: [] for name in COMMANDS}
        for _ in range(args.runs):
            for name, command in COMMANDS.items():
                wall, cpu = timed(command, env)
                walls[name].append(wall)
                cpus[name].append(cpu)
    wall_medians = {name: round(statistics.median(values), 4) for name, values in walls.items()}
    cpu_medians = {name: round(statistics.median(values), 4) for name, values in cpus.items()}
    for name, values in walls.items():
        print(
            f"{name:28} wall median {wall_medians[name]:.3f} s (min {min(values):.3f}, max {max(values):.3f})"
            f"  cpu median {cpu_medians[name]:.3f} s"
        )
    report(
        {
            "runs": args.runs,
            **{f"{name}_s": value for name, value in wall_medians.items()},
            **ratios(wall_medians, ""),
            **{f"{name}_cpu_s": value for name, value in cpu_medians.items()},
            **ratios(cpu_medians, "_cpu"),
        }
    )


if __name__ == "__main__":
    main()
