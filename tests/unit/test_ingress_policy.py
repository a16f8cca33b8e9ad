"""The ingress policy's defaults: NodePort is off, except under ``serve --dev`` (local
processes, where a NodePort is only the job's own port on this host), and what an operator
sets wins there too."""

from __future__ import annotations

from armada.model.ingress_policy import MAX_SERVICE_NAME_LENGTH
from armada.settings import load_settings


def test_nodeport_is_off_by_default_and_on_under_dev() -> None:
    plain = load_settings(env={})
    assert plain.submission.ingress_policy.allowed_service_types == ["Headless"]
    assert plain.executor.ingress_policy.allowed_service_types == ["Headless"]
    dev = load_settings(env={"ARMADA_SERVER_DEV": "true"})
    assert dev.submission.ingress_policy.allowed_service_types == ["NodePort", "Headless"]
    assert dev.executor.ingress_policy.allowed_service_types == ["NodePort", "Headless"]
    assert dev.submission.ingress_policy.allowed_annotations == []  # the rest stays closed
    strict = load_settings(
        env={"ARMADA_SERVER_DEV": "true", "ARMADA_SUBMISSION_INGRESS_POLICY": '{"allowedServiceTypes": []}'}
    )
    assert strict.submission.ingress_policy.allowed_service_types == []


def test_a_named_service_fits_a_dns_label_under_the_jobs_prefix() -> None:
    assert len(f"armada-{'0' * 26}-0-{'n' * MAX_SERVICE_NAME_LENGTH}") == 63
