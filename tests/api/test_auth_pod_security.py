"""Only ``administer_queue_security`` may set or change a queue's pod security fields: a
caller who may create queues cannot give one the ``privileged`` profile, extra namespaces
or service accounts (that would make ``create_queue`` a cluster-admin permission)."""

from __future__ import annotations

import msgspec
import pytest

from armada.auth.permissions import GlobalPermission
from armada.client import ArmadaApiError
from armada.model.podsecurity import Profile
from armada.model.queues import Queue
from armada.settings import Settings, load_settings
from tests.api.accounts import as_user
from tests.api.jobs import item, pod_spec
from tests.databases import SQLITE_ONLY
from tests.processes import ROOT
from tests.servers import ApiServer

pytestmark = SQLITE_ONLY


@pytest.fixture(scope="module")
def settings() -> Settings:
    settings = load_settings(ROOT / "examples" / "config" / "auth-basic.yaml", env={})
    mapping = dict(settings.auth.permission_group_mapping)
    mapping[GlobalPermission.CREATE_QUEUE] = ["admins", "team-a"]  # alice may create queues...
    assert mapping[GlobalPermission.ADMINISTER_QUEUE_SECURITY] == ["admins"]  # ...but not this
    auth = msgspec.structs.replace(settings.auth, permission_group_mapping=mapping)
    return msgspec.structs.replace(settings, auth=auth)


def _forbidden(caught: pytest.ExceptionInfo[ArmadaApiError], field: str) -> None:
    assert (caught.value.status, caught.value.field) == (403, field)
    assert "administer_queue_security" in caught.value.detail


@pytest.mark.parametrize(
    ("fields", "wire_name"),
    [
        ({"pod_security_profile": Profile.PRIVILEGED}, "podSecurityProfile"),
        ({"pod_security_profile": Profile.BASELINE}, "podSecurityProfile"),
        ({"allowed_namespaces": ["team-a"]}, "allowedNamespaces"),
        ({"allowed_service_accounts": ["armada-executor"]}, "allowedServiceAccounts"),
    ],
)
def test_queue_creators_cannot_set_security_fields(
    server: ApiServer, fields: dict[str, object], wire_name: str
) -> None:
    with as_user(server, "alice") as alice:
        with pytest.raises(ArmadaApiError) as caught:
            alice.create_queue(Queue(name=f"a-{wire_name}", **fields))  # type: ignore[arg-type]
        _forbidden(caught, wire_name)
        (failure,) = alice.create_queues([Queue(name=f"b-{wire_name}", **fields)]).failed_queues  # type: ignore[arg-type]
        assert "administer_queue_security" in failure.error


def test_privileged_profile_on_a_queue_needs_the_permission(server: ApiServer) -> None:
    with as_user(server, "alice") as alice, as_user(server, "admin") as admin:
        alice.create_queue(Queue(name="alices", group_owners=["team-a"]))
        with pytest.raises(ArmadaApiError) as caught:
            alice.update_queue(
                Queue(name="alices", group_owners=["team-a"], pod_security_profile=Profile.PRIVILEGED)
            )
        _forbidden(caught, "podSecurityProfile")
        hostpath = item(pod_spec=pod_spec(volumes=[{"name": "r", "hostPath": {"path": "/"}}]))
        with pytest.raises(ArmadaApiError) as refused:
            alice.submit_jobs("alices", "set", [hostpath])
        assert refused.value.status == 400

        privileged = msgspec.structs.replace(
            alice.get_queue("alices"), pod_security_profile=Profile.PRIVILEGED
        )
        admin.update_queue(privileged)
        assert alice.submit_jobs("alices", "set", [hostpath])

        # Its labels stay the owner's to change; the profile it was given stays put.
        alice.update_queue(msgspec.structs.replace(alice.get_queue("alices"), labels={"tier": "gold"}))
        assert alice.get_queue("alices").pod_security_profile is Profile.PRIVILEGED
        with pytest.raises(ArmadaApiError) as caught:
            alice.update_queue(msgspec.structs.replace(alice.get_queue("alices"), pod_security_profile=None))
        _forbidden(caught, "podSecurityProfile")
