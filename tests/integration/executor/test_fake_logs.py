"""The fake backend answers log reads with synthetic lines: one per simulated second."""

from __future__ import annotations

import pytest

from armada.executor.backends.fake import FakeBackend
from armada.executor.log_lines import LogMissing
from armada.executor.settings import FakeSettings
from armada.model.leases import LogOrder
from tests.integration.executor.conftest import lease
from tests.integration.executor.recorder import Recorder


def order(run_id: str, **fields: object) -> LogOrder:
    return LogOrder(request_id="q", run_id=run_id, job_id=f"job-{run_id}", **fields)  # type: ignore[arg-type]


async def test_lines_while_running_and_after() -> None:
    backend, recorder = FakeBackend(FakeSettings(nodes=1, speed=20.0), "sim"), Recorder()
    await backend.start(recorder)
    await backend.launch(lease("r1", argv=["sleep", "4"]))  # 0.2 s of real time
    await recorder.wait_for(lambda: "running" in recorder.kinds("r1"))
    assert [line.line for line in await backend.read_log(order("r1"))][:1] == ["job-r1 second 0"]
    await recorder.wait_for(lambda: recorder.finished("r1"))
    await backend.release("r1")
    lines = await backend.read_log(order("r1"))
    assert [line.line for line in lines] == [f"job-r1 second {i}" for i in range(5)]
    assert all(line.timestamp.endswith("Z") for line in lines)
    assert [line.line for line in await backend.read_log(order("r1", tail_lines=1))] == ["job-r1 second 4"]
    with pytest.raises(LogMissing):
        await backend.read_log(order("never"))
    await backend.close()
