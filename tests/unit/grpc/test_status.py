"""Domain errors map to the gRPC status codes of docs/grpc.md, by class."""

from __future__ import annotations

import grpc
import pytest

from armada.api.grpc.status import code_of
from armada.model import errors


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (errors.InvalidRequest, grpc.StatusCode.INVALID_ARGUMENT),
        (errors.Unauthenticated, grpc.StatusCode.UNAUTHENTICATED),
        (errors.PermissionDenied, grpc.StatusCode.PERMISSION_DENIED),
        (errors.NotFound, grpc.StatusCode.NOT_FOUND),
        (errors.HistoryRewound, grpc.StatusCode.ABORTED),
        (errors.Conflict, grpc.StatusCode.FAILED_PRECONDITION),
        (errors.LimitExceeded, grpc.StatusCode.RESOURCE_EXHAUSTED),
        (errors.ArmadaError, grpc.StatusCode.INVALID_ARGUMENT),
    ],
)
def test_codes(error: type[errors.ArmadaError], code: grpc.StatusCode) -> None:
    assert code_of(error("x")) == code
