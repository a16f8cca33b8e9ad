"""The ``scheduler`` settings area: the scheduler service's loop, leases, executor bookkeeping
and container-log relay."""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import Meta

from armada.model.settings_area import SettingsArea


class SchedulerServiceSettings(SettingsArea):
    """The scheduler *service*: its loop, leases and executor bookkeeping (the algorithm's
    settings are the ``scheduling`` area)."""

    enabled: Annotated[
        bool,
        Meta(description="Run the scheduling loop in this replica (off: serve the API and executors only)."),
    ] = True
    cycle_period: Annotated[
        float, Meta(gt=0, description="Seconds between scheduling cycles when nothing wakes the scheduler.")
    ] = 1.0
    min_cycle_interval: Annotated[
        float,
        Meta(
            ge=0,
            description="Least seconds between the starts of two cycles, so a burst of submissions "
            "is scheduled together.",
        ),
    ] = 0.05
    executor_timeout: Annotated[
        float, Meta(gt=0, description="Seconds of executor silence after which its runs expire and requeue.")
    ] = 60.0
    max_retries: Annotated[
        int, Meta(ge=0, description="Requeues (lease returned or expired, node lost) before a job fails.")
    ] = 3
    avoid_node_labels_on_retry: Annotated[
        list[str],
        Meta(
            description="Node labels whose values a requeued job avoids: the values of the node its "
            "run failed on (lease returned after the pod started, expired, node lost), added to "
            "the job's node affinity when some other node could still hold it. The default avoids "
            "the node itself; add e.g. a rack label to avoid its rack; empty: retries may land anywhere."
        ),
    ] = msgspec.field(default_factory=lambda: ["kubernetes.io/hostname"])
    max_unacknowledged_leases_per_executor: Annotated[
        int,
        Meta(
            ge=1,
            description="Most runs leased to one executor and not yet reported back by it; "
            "an executor at the limit gets no new leases until it catches up. One scheduling "
            "cycle leases at most this many per executor taking leases (a bounded write).",
        ),
    ] = 5000
    max_leases_per_cycle: Annotated[
        int,
        Meta(
            ge=1,
            description="Most new leases one scheduling cycle makes over all executors: a cycle's "
            "decisions are written before the next cycle's, so this bounds a cycle's length "
            "however many clusters take leases (20 clusters at the per-executor limit alone "
            "would be 100,000 leases, a write of tens of seconds).",
        ),
    ] = 10_000
    max_leases_in_flight: Annotated[
        int,
        Meta(
            ge=1,
            description="Most runs leased over all executors and not yet reported pending or "
            "running; at this many a cycle leases nothing more. Leases outrunning the run "
            "reports (a server or executors short of CPU) would otherwise keep the append lock "
            "busy with more leases while the reports that free it wait.",
        ),
    ] = 50_000
    heartbeat_record_interval: Annotated[
        float, Meta(gt=0, description="Seconds between executor heartbeats recorded in the event log.")
    ] = 5.0
    leader_retry_interval: Annotated[
        float, Meta(gt=0, description="Seconds between attempts of a standby replica to become the leader.")
    ] = 1.0
    log_wait_seconds: Annotated[
        float,
        Meta(
            gt=0,
            le=300,
            description="Longest a log read (``/v1/binoculars/log``) waits for the executor that ran "
            "the job to answer before it fails with 503.",
        ),
    ] = 10.0
    max_log_reads_per_caller: Annotated[
        int,
        Meta(
            ge=1,
            description="Log reads one caller (user; anonymous callers per address) may have waiting "
            "on this replica at once; more are refused with 429 and `Retry-After`.",
        ),
    ] = 2
    log_reads_per_second_per_caller: Annotated[
        float,
        Meta(
            gt=0,
            description="Log reads one caller may start per second on this replica, on average "
            "(bursts: `logReadBurstPerCaller`); faster ones are refused with 429 and `Retry-After`. "
            "Lookout asks every 2 s per open log, `armada logs --follow` every second.",
        ),
    ] = 2.0
    log_read_burst_per_caller: Annotated[
        int,
        Meta(
            ge=1,
            description="Log reads one caller may start at once before `logReadsPerSecondPerCaller` applies.",
        ),
    ] = 10
    max_log_reads_per_executor: Annotated[
        int,
        Meta(
            ge=1,
            description="Log reads waiting on this replica for one executor at once, whoever asked; "
            "more are refused with 429 and `Retry-After` (the executor bounds its own, "
            "`executor.maxLogReads`).",
        ),
    ] = 4
    max_log_bytes: Annotated[
        int,
        Meta(
            ge=1024,
            le=4 * 1024 * 1024,
            description="Most bytes of log lines (as encoded JSON) in one answer: without `limitBytes` "
            "the newest lines that fit are sent; a larger `limitBytes` is refused (400). Each read "
            "costs the executor and the server ~30 ms of CPU per MiB (docs/performance.md).",
        ),
    ] = 256 * 1024
    max_log_lines: Annotated[
        int,
        Meta(
            ge=1,
            description="Most lines in one answer: a request without `tailLines` gets at most the "
            "newest this many; a larger `tailLines` is refused (400).",
        ),
    ] = 10_000
