"""The executor's lease admission: its own settings, its own namespace, the same rules as the server."""

from __future__ import annotations

from pathlib import Path

from armada.executor.admission import ANY_NAMESPACE, LeaseAdmission, own_namespace
from armada.executor.settings import ExecutorSettings
from armada.model.leases import Lease
from armada.model.podsecurity import Profile

POD = {"containers": [{"name": "m", "image": "alpine"}]}


def _lease(namespace: str = "default", **spec: object) -> Lease:
    return Lease(
        run_id="r", job_id="j", queue="q", job_set_id="s", namespace=namespace, pod_spec={**POD, **spec}
    )


def test_own_namespace_is_configured_or_read_from_the_service_account_mount(tmp_path: Path) -> None:
    mounted = tmp_path / "namespace"
    assert own_namespace(ExecutorSettings(), mounted) == ""
    mounted.write_text("armada\n")
    assert own_namespace(ExecutorSettings(), mounted) == "armada"
    assert own_namespace(ExecutorSettings(own_namespace="ops"), mounted) == "ops"


def test_refusals_name_the_field() -> None:
    admission = LeaseAdmission(ExecutorSettings(allowed_namespaces=["default", "armada"]), "armada")
    assert admission.refusal(_lease()) is None
    assert "namespace: namespace 'armada' is reserved" in (admission.refusal(_lease("armada")) or "")
    assert "namespace: namespace 'other'" in (admission.refusal(_lease("other")) or "")
    assert "podSpec.hostIPC" in (admission.refusal(_lease(hostIPC=True)) or "")
    assert "podSpec.serviceAccountName" in (
        admission.refusal(_lease(serviceAccountName="armada-executor")) or ""
    )


def test_profiles_and_service_accounts_come_from_the_executors_settings() -> None:
    settings = ExecutorSettings(pod_security_profile=Profile.RESTRICTED, allowed_service_accounts=["runner"])
    admission = LeaseAdmission(settings, "")
    assert "allowPrivilegeEscalation" in (admission.refusal(_lease()) or "")
    privileged = LeaseAdmission(ExecutorSettings(pod_security_profile=Profile.PRIVILEGED), "")
    assert privileged.refusal(_lease(hostPID=True, serviceAccountName="anything")) is None
    assert privileged.refusal(_lease("elsewhere")) is not None  # namespaces hold for every profile


def test_a_star_allows_every_namespace_but_the_executors_own() -> None:
    admission = LeaseAdmission(ExecutorSettings(allowed_namespaces=[ANY_NAMESPACE]), "armada")
    assert admission.refusal(_lease("personal-anonymous")) is None
    assert "is reserved" in (admission.refusal(_lease("armada")) or "")
    assert "podSpec.hostIPC" in (admission.refusal(_lease("team-a", hostIPC=True)) or "")
