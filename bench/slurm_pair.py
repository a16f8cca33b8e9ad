"""Side by side with Slurm, measured the same way on both sides, by the submitting client's clock.

    python bench/slurm_pair.py [--reps 3] [--jobs 2000] [-- extra bench/e2e.py arguments]
    python bench/slurm_pair.py --slurm-mode loop --slurm-submitters 4 -- --batch 1

Runs ``slurm_peer.sh`` (``array``: one ``sbatch --array`` of ``date`` jobs; ``loop``: one
``sbatch`` per job from ``--slurm-submitters`` shell loops at once, the peer of our
``--batch 1`` with 4 requests in flight; submit -> ``squeue`` empty), then ``bench/e2e.py
--backend process --process-cpu 256 --command date --client-wall`` as many times (first
submit call -> ``POST /v1/job/status`` shows every job SUCCEEDED). Both sides keep every
repetition's files until all their repetitions are done and delete them afterwards: the
Slurm peer does so, and deleting ~10,000 files makes the next minute's file creations
several times dearer on this host's file system (ext4 with ``discard``), so a side that
cleans up between repetitions measures its own clean-up. The last line is JSON: each
side's runs and median in jobs/s, and the ratio of the medians.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import arguments, report

ROOT = Path(__file__).resolve().parents[1]
#: ``<mode>  <rep>  <jobs>  <submit_s>  <submit_j/s>  <e2e_s>  <done_j/s> ...`` in the peer's table.
_SLURM_REP = r"^{mode}\s+\d+\s+\d+\s+\S+\s+\S+\s+\S+\s+(\S+)"


def slurm_runs(peer: Path, mode: str, submitters: int, reps: int, jobs: int) -> list[float]:
    """Slurm's completion rate per repetition, jobs/s."""
    env = {**os.environ, "MODES": mode, "SUBMITTERS": str(submitters), "REPS": str(reps), "N": str(jobs)}
    output = subprocess.run(["bash", str(peer)], env=env, capture_output=True, text=True, check=True).stdout
    runs = [float(rate) for rate in re.findall(_SLURM_REP.format(mode=mode), output, re.MULTILINE)]
    if len(runs) != reps:
        raise SystemExit(f"slurm_peer.sh printed {len(runs)} repetitions, not {reps}:\n{output}")
    return runs


def our_runs(reps: int, jobs: int, extra: list[str]) -> list[dict[str, Any]]:
    """``bench/e2e.py``'s result per repetition; every work directory kept until the last."""
    command = [sys.executable, str(ROOT / "bench" / "e2e.py"), "--backend", "process", "--executors", "1"]
    command += ["--process-cpu", "256", "--jobs", str(jobs), "--queues", "1", "--command", "date"]
    command += ["--client-wall", *extra]
    kept = Path(tempfile.mkdtemp(prefix="armada-slurm-pair-"))
    try:
        results = []
        for rep in range(reps):
            workdir = kept / str(rep)
            workdir.mkdir()
            argv = [*command, "--workdir", str(workdir)]
            run = subprocess.run(argv, capture_output=True, text=True, check=True)
            results.append(json.loads(run.stdout.strip().splitlines()[-1]))
        return results
    finally:
        shutil.rmtree(kept, ignore_errors=True)


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--slurm-mode", choices=["array", "loop"], default="array")
    parser.add_argument("--slurm-submitters", type=int, default=1, help="parallel sbatch loops (loop mode)")
    parser.add_argument("--slurm-peer", type=Path, default=ROOT.parent / "shared" / "tools" / "slurm_peer.sh")
    parser.add_argument("extra", nargs="*", help="more bench/e2e.py arguments, after --")
    args = parser.parse_args()
    slurm = slurm_runs(args.slurm_peer, args.slurm_mode, args.slurm_submitters, args.reps, args.jobs)
    ours = our_runs(args.reps, args.jobs, args.extra)
    ours_rates = [result["client_jobs_per_second"] for result in ours]
    report(
        {
            "benchmark": "slurm_pair",
            "jobs": args.jobs,
            "slurm_mode": args.slurm_mode,
            "slurm_jobs_per_second_runs": slurm,
            "slurm_jobs_per_second": statistics.median(slurm),
            "ours_client_jobs_per_second_runs": ours_rates,
            "ours_client_jobs_per_second": statistics.median(ours_rates),
            "ours_executor_cpu_s_per_1000_jobs_runs": [r["executors_cpu_s_per_1000_jobs"] for r in ours],
            "ratio_of_medians": round(statistics.median(ours_rates) / statistics.median(slurm), 2),
        }
    )


if __name__ == "__main__":
    main()
