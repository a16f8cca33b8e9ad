"""The users of ``examples/config/auth-basic.yaml`` (``<name>``/``<name>-pass``), as API tests sign in."""

from __future__ import annotations

import httpx
import msgspec

from armada.auth.permissions import GlobalPermission as P
from armada.client import ArmadaClient
from armada.client.config import ClientConfig
from armada.settings import Settings, load_settings
from tests.processes import ROOT
from tests.servers import ApiServer


def example_settings(*, open_lookout: bool = False) -> Settings:
    settings = load_settings(ROOT / "examples" / "config" / "auth-basic.yaml", env={})
    mapping = {**settings.auth.permission_group_mapping, P.VIEW_REPORTS: ["admins", "team-b"]}
    changes: dict[str, object] = {"permission_group_mapping": mapping}
    if open_lookout:  # (named only when set, so that this module also runs against older servers)
        changes["open_lookout"] = True
    auth = msgspec.structs.replace(settings.auth, **changes)
    return msgspec.structs.replace(settings, auth=auth)


def as_user(server: ApiServer, user: str) -> ArmadaClient:
    return ArmadaClient(ClientConfig(armada_url=server.url, username=user, password=f"{user}-pass"))


def http_as(server: ApiServer, user: str) -> httpx.Client:
    return httpx.Client(base_url=server.url, auth=(user, f"{user}-pass"), timeout=30)
