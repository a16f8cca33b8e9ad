"""Run cases against a server, concurrently, and report one line per case as each ends."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

from armada.client import AsyncArmadaClient, ClientConfig
from armada.testsuite.jobs import CaseFailed, JobCase
from armada.testsuite.queues import run_queue_case
from armada.testsuite.spec import Case


@dataclass(frozen=True)
class CaseResult:
    name: str
    seconds: float
    failure: str = ""

    @property
    def passed(self) -> bool:
        return not self.failure

    def line(self) -> str:
        verdict = "PASS" if self.passed else "FAIL"
        return f"{verdict} {self.name} ({self.seconds:.1f}s)" + (f": {self.failure}" if self.failure else "")


def summary(results: list[CaseResult]) -> str:
    passed = sum(r.passed for r in results)
    return f"{passed} passed, {len(results) - passed} failed"


async def run_case(client: AsyncArmadaClient, case: Case) -> CaseResult:
    started = time.monotonic()
    job_case = JobCase(client, case) if case.queue_config is None else None
    failure = ""
    try:
        async with asyncio.timeout(case.timeout_seconds):
            if job_case is not None:
                await job_case.run()
            else:
                assert case.queue_config is not None
                await run_queue_case(client, case.queue, case.queue_config)
    except CaseFailed as exc:
        failure = str(exc)
    except TimeoutError:
        progress = f": {job_case.describe_progress()}" if job_case else ""
        failure = f"timed out after {case.timeout}{progress}"
    except Exception as exc:  # a broken server or network: the case fails, the run goes on
        failure = f"{type(exc).__name__}: {exc}"
    return CaseResult(case.name, time.monotonic() - started, failure)


async def run_cases(
    cases: list[Case], config: ClientConfig, *, concurrency: int, report: Callable[[CaseResult], None]
) -> list[CaseResult]:
    """Run ``cases`` (at most ``concurrency`` at once); results in the order of ``cases``."""
    limit = asyncio.Semaphore(max(1, concurrency))
    async with AsyncArmadaClient(config) as client:

        async def one(case: Case) -> CaseResult:
            async with limit:
                result = await run_case(client, case)
            report(result)
            return result

        return list(await asyncio.gather(*(one(case) for case in cases)))
