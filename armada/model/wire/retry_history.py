"""A job's retry history as every surface shows it: REST job details, the job's scheduler
report, Lookout's job drawer and ``armada job details``.

One entry per run (an *attempt*): how it ended, the failure's category, and what decided
what came next — a retry policy's ``Retry`` or ``Fail`` (with the rule), or the legacy
path. Built from the job's events by :mod:`armada.retries.history`; the text lines
here are shared by the CLI and the report so they read the same.
"""

from __future__ import annotations

from armada.model.numbers import Count
from armada.model.wire.base import Response


class RetryAttempt(Response):
    """One run of the job and what became of it."""

    #: 1-based: the job's first run is attempt 1.
    attempt: Count
    #: ``running``, ``succeeded``, ``failed``, ``expired`` (its executor went silent),
    #: ``returned`` (given back: free), ``preempted``, ``cancelled`` or ``rejected``.
    outcome: str
    #: Empty for a job ended while queued (the scheduler rejected its retry).
    run_id: str = ""
    node: str = ""
    failure_category: str = ""
    failure_subcategory: str = ""
    #: ``Retry`` or ``Fail`` when a retry policy decided; empty on the legacy path.
    decision: str = ""
    retry_policy: str = ""
    #: Index of the policy's rule that matched; absent (``None``): its ``defaultAction``.
    retry_rule: Count | None = None
    #: The job's retry budget spent once this attempt was decided.
    retries_used: Count = 0
    #: What a ``Retry`` rule's ``mutate`` changed for the next attempt.
    mutations: list[str] = []
    #: The run's end as the log tells it (the failure and the decision's explanation).
    reason: str = ""


class RetryHistory(Response):
    #: Retries the retry engine granted (the budget spent).
    retries_granted: Count = 0
    #: The policy that decided last (empty: none has).
    retry_policy: str = ""
    attempts: list[RetryAttempt] = []

    @property
    def eventful(self) -> bool:
        """Whether there is a retry story to tell: more than one attempt, or a policy decided
        (the text surfaces and Lookout show the history only then)."""
        return len(self.attempts) > 1 or any(attempt.decision for attempt in self.attempts)


def attempt_line(attempt: RetryAttempt) -> str:
    """One attempt as a line of text."""
    parts = [f"attempt {attempt.attempt}", attempt.run_id or "(no run)", attempt.outcome]
    if attempt.node:
        parts.append(f"on {attempt.node}")
    if attempt.failure_category:
        sub = f"/{attempt.failure_subcategory}" if attempt.failure_subcategory else ""
        parts.append(f"category {attempt.failure_category}{sub}")
    if attempt.decision:
        rule = "defaultAction" if attempt.retry_rule is None else f"rule {attempt.retry_rule}"
        parts.append(
            f"{attempt.decision} by {attempt.retry_policy!r} {rule} (retries used {attempt.retries_used})"
        )
    if attempt.mutations:
        parts.append("then " + ", ".join(attempt.mutations))
    line = ", ".join(parts)
    return f"{line}: {attempt.reason}" if attempt.reason else line


def history_lines(history: RetryHistory, indent: str = "  ") -> list[str]:
    """The history as text: a summary line, then one line per attempt."""
    by = f" by retry policy {history.retry_policy!r}" if history.retry_policy else ""
    runs = sum(1 for attempt in history.attempts if attempt.run_id)
    lines = [f"Retries: {history.retries_granted} granted{by}, {runs} attempts"]
    return lines + [indent + attempt_line(attempt) for attempt in history.attempts]
