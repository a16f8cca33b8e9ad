"""Shared pieces of the benchmarks: process memory and the one-JSON-line result."""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
from pathlib import Path
from typing import Any


def rss_mb() -> float:
    """Peak resident memory of this process in MiB (Linux reports KiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def cpu_seconds() -> float:
    """CPU time (user + system) this process has used so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def process_cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) another process ``pid`` has used so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def report(result: dict[str, Any]) -> None:
    """Print the result as the last line of output, as every benchmark does."""
    sys.stdout.write(json.dumps(result) + "\n")


def arguments(doc: str | None) -> argparse.ArgumentParser:
    """A benchmark's argument parser, its docstring as the help."""
    return argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)


def database_arguments(doc: str | None, default_url: str) -> argparse.ArgumentParser:
    """A benchmark's argument parser: its docstring as the help, and ``--database-url``."""
    parser = arguments(doc)
    parser.add_argument("--database-url", default=default_url)
    return parser


def workload_arguments(parser: argparse.ArgumentParser, jobs: int, batch: int) -> None:
    """``--jobs`` submitted over ``--queues`` queues, ``--batch`` jobs per submit call."""
    parser.add_argument("--jobs", type=int, default=jobs)
    parser.add_argument("--queues", type=int, default=10)
    parser.add_argument("--batch", type=int, default=batch, help="jobs per submit call")
