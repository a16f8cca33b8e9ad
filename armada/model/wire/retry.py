"""Wire shape of the retry policy list (upstream ``api.RetryPolicyList``)."""

from __future__ import annotations

from armada.model.retry import RetryPolicy
from armada.model.wire.base import Response


class RetryPolicyList(Response):
    retry_policies: list[RetryPolicy] = []
