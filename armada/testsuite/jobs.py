"""Running a case with jobs: submit in batches, watch the job set, fire the action, match events."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Sequence

import httpx
import msgspec

from armada.client import ArmadaApiError, AsyncArmadaClient
from armada.client.errors import ArmadaTransportError, NotFound
from armada.model.queues import Queue
from armada.model.wire.jobs import JobSubmitRequestItem
from armada.tasks import cancel_and_wait
from armada.testsuite.progress import Progress
from armada.testsuite.spec import Case

#: Rounds of reading and extending a shared queue's namespaces before giving up.
QUEUE_ATTEMPTS = 5
#: Pause between those rounds.
QUEUE_PAUSE_SECONDS = 0.1
#: Pause before retrying a call that failed for a reason that may pass (queue being created).
RETRY_SECONDS = 0.5


class CaseFailed(Exception):
    """The case failed; the message says why."""


def short_id() -> str:
    return uuid.uuid4().hex[:8]


async def ensure_queue(client: AsyncArmadaClient, name: str, namespaces: Sequence[str] = ()) -> None:
    """Create the queue unless it exists, allowing the case's namespaces.

    Upstream's cases submit to namespaces such as ``personal-anonymous``, and cases sharing
    a queue may use different ones; a queue allows only the server's default namespaces
    (``default`` here) unless it lists others. So the queue's list is extended to the case's
    namespaces (which needs ``administer_queue_security``), read back and extended again
    until it holds them: cases or runners doing the same at once converge on the union.
    """
    for _ in range(QUEUE_ATTEMPTS):
        try:
            current: Queue | None = await client.get_queue(name)
        except ArmadaApiError:
            current = None
        # An empty list means the server's defaults: taken to be ``default``.
        allowed = set(current.allowed_namespaces if current is not None else ()) or {"default"}
        missing = set(namespaces) - allowed
        with contextlib.suppress(ArmadaApiError):
            if current is None:
                listed = sorted(allowed | missing) if missing else []
                await client.create_queue(Queue(name=name, allowed_namespaces=listed))
            elif missing:
                extended = sorted(allowed | missing)
                await client.update_queue(msgspec.structs.replace(current, allowed_namespaces=extended))
            else:
                return
        await asyncio.sleep(QUEUE_PAUSE_SECONDS)  # another case's change may still be committing
    raise CaseFailed(f"queue {name} could not be made to allow namespaces {sorted(set(namespaces))}")


class JobCase:
    """One run of a job case against a server."""

    def __init__(self, client: AsyncArmadaClient, case: Case) -> None:
        self.client = client
        self.case = case
        self.job_set = f"{case.job_set_id or case.name}-{short_id()}"
        self.progress = Progress(case.expected)
        self.changed = asyncio.Event()
        self.fired = False

    async def run(self) -> None:
        """Pass, or raise :class:`CaseFailed` (``TimeoutError`` at the case's timeout)."""
        await ensure_queue(self.client, self.case.queue, [job.namespace for job in self.case.jobs])
        watcher = asyncio.create_task(self._watch())
        try:
            await self._submit_batches()
            await self._until_decided()
        finally:
            await cancel_and_wait(watcher)
            await self._clean_up()

    def describe_progress(self) -> str:
        return self.progress.summary()

    async def _submit_batches(self) -> None:
        case = self.case
        for batch in range(case.num_batches):
            if batch and case.interval_seconds:
                await asyncio.sleep(case.interval_seconds)
            items = [self._item(job) for _ in range(case.batch_size) for job in case.jobs]
            self.progress.expect(await self._submit(items))
            self.changed.set()

    def _item(self, job: JobSubmitRequestItem) -> JobSubmitRequestItem:
        if self.case.random_client_id:
            return msgspec.structs.replace(job, client_id=str(uuid.uuid4()))
        return job

    async def _submit(self, items: list[JobSubmitRequestItem]) -> list[str]:
        """Submit, retrying while the queue does not exist yet (it may be being created)."""
        while True:
            try:
                return await self.client.submit_jobs(self.case.queue, self.job_set, items)
            except (NotFound, ArmadaTransportError):
                pass
            except ArmadaApiError as exc:
                raise CaseFailed(f"submission refused: {exc}") from exc
            await asyncio.sleep(RETRY_SECONDS)

    async def _watch(self) -> None:
        """Follow the job set's events, resuming after the last message id on a disconnect."""
        last = ""
        while True:
            try:
                events = self.client.job_set_events(
                    self.case.queue, self.job_set, watch=True, from_message_id=last
                )
                async for streamed in events:
                    last = streamed.message_id
                    if streamed.event.job_id:
                        self.progress.add(streamed.event.job_id, streamed.event.type)
                        self.changed.set()
            except (httpx.HTTPError, ArmadaApiError):
                pass
            await asyncio.sleep(RETRY_SECONDS)

    async def _until_decided(self) -> None:
        progress = self.progress
        while True:
            if failure := progress.failure():
                raise CaseFailed(failure)
            if not self.fired and self.case.action and progress.all_saw(self.case.trigger):
                self.fired = True
                await self._fire()
            if progress.passed():
                return
            await self.changed.wait()
            self.changed.clear()

    async def _fire(self) -> None:
        case, client, ids = self.case, self.client, self.progress.submitted
        fields = case.action_fields
        reason = str(fields.get("reason", ""))
        try:
            if case.cancel is not None:
                await client.cancel_jobs(case.queue, self.job_set, ids, reason)
            elif case.cancel_job_set is not None:
                states = (fields.get("filter") or {}).get("states", [])
                await client.cancel_job_set(case.queue, self.job_set, states, reason)
            elif case.preempt is not None:
                await client.preempt_jobs(case.queue, self.job_set, ids, reason)
            elif case.reprioritize is not None:
                chosen = [] if case.reprioritize.by_job_set else ids
                await client.reprioritize_jobs(case.queue, self.job_set, chosen, float(fields["newPriority"]))
        except (ArmadaApiError, KeyError) as exc:
            raise CaseFailed(f"{case.action} failed: {exc}") from exc

    async def _clean_up(self) -> None:
        """Cancel whatever the case left unfinished, so it does not hold the cluster."""
        with contextlib.suppress(ArmadaApiError, httpx.HTTPError):
            await self.client.cancel_job_set(self.case.queue, self.job_set, reason="test case finished")
