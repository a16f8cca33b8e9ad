"""What a refused pod creation means for the run: the job's fault, or the cluster's.

A 400/422 (an invalid pod) or an admission webhook's or Pod Security's 403 is the job's
own fault: the run fails and is not retried. A quota that is full (403 "exceeded quota")
is temporary, as is one whose usage the quota controller has not computed yet ("status
unknown for quota", after a quota is created or the controller restarts); a missing
PriorityClass, a missing or terminating namespace are the
cluster's configuration, not the job's: those return the lease (retryable, not counted as
an attempt) so that the job runs elsewhere or later. Either way the reason is the API
server's own message. (Upstream Armada fails the job on every 403 and 422, so a full quota
fails every job sent to that namespace until it frees up.)
"""

from __future__ import annotations

import re

from armada.executor.backend import RunStatus
from armada.executor.backends.kube_calls import KubeError

#: 403 messages that are about the cluster's state or configuration, not the pod.
_CLUSTER_SIDE = re.compile(
    r"exceeded quota|status unknown for quota|is being terminated|no PriorityClass with name|"
    r"unable to create new content in namespace",
    re.IGNORECASE,
)


def create_refused(run_id: str, pod_name: str, error: KubeError) -> RunStatus:
    """The run status of a create refused with ``error`` (a 4xx other than 409 and 429)."""
    reason = f"pod creation refused: {error.message or error.reason or error.status}"
    cluster_side = error.status == 404 or (error.status == 403 and bool(_CLUSTER_SIDE.search(error.message)))
    if cluster_side:
        return RunStatus(
            run_id=run_id, kind="leaseReturned", pod_name=pod_name, reason=reason, retryable=True
        )
    return RunStatus(
        run_id=run_id, kind="failed", pod_name=pod_name, reason=reason, cause="Error", retryable=False
    )
