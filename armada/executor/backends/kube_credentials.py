"""Keeping kubeconfig credentials fresh: exec plugins, GCP and OIDC ``auth-provider`` tokens.

Cloud and OIDC tokens live minutes (EKS: ~15). kubernetes-asyncio reads them once when the
kubeconfig is loaded; its own background refresher knows only exec plugins and GCP, and
stops for good at the first failure. Here one loop renews whichever kind the kubeconfig
uses every ``credential_refresh_seconds``: each loader call returns the cached token while
it is valid and fetches a new one when it expires within five minutes, so the client always
holds a token that is still valid. A failed renewal (the identity provider briefly down) is
logged and retried on the next tick, while the current token keeps working until it expires.

OIDC renewal is done here rather than by kubernetes-asyncio, whose requestor turns TLS
verification *off* unless the kubeconfig carries the provider's CA: the refresh token and
client secret must only ever go to the real identity provider. The renewed tokens are written
back to the kubeconfig when it is writable (a rotated refresh token must survive a restart).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import ssl
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote

import aiohttp
import structlog
from kubernetes_asyncio import client
from kubernetes_asyncio.config.kube_config import (
    KUBE_CONFIG_DEFAULT_LOCATION,
    KubeConfigLoader,
    KubeConfigMerger,
)

log = structlog.get_logger(__name__)

#: Renew a token this long before it expires (kubernetes-asyncio's margin for exec and GCP).
RENEW_BEFORE_SECONDS = 300.0
#: Longest wait for the identity provider.
_IDP_TIMEOUT = aiohttp.ClientTimeout(total=30)


class Loader(KubeConfigLoader):
    """kubernetes-asyncio's kubeconfig loader, with OIDC renewal that verifies the provider."""

    async def _load_oid_token(self) -> str:
        user: Any = self._user
        values: dict[str, Any] = user["auth-provider"]["config"].value
        token = str(values.get("id-token") or "")
        if not token or _expires_within(token, RENEW_BEFORE_SECONDS):
            token = await _renew_oidc(values)
            self._persist()
        self.token = f"Bearer {token}"
        return self.token

    def _persist(self) -> None:
        if self._config_persister is None:
            return
        try:
            self._config_persister()
        except OSError as exc:  # a read-only kubeconfig (a mounted secret): keep it in memory
            log.info("renewed kubernetes credentials not saved", error=repr(exc))


async def load_kubeconfig(
    path: str | None, context: str | None, configuration: client.Configuration
) -> Loader:
    """Load ``path`` (else ``$KUBECONFIG`` or ``~/.kube/config``) into ``configuration``."""
    merger = KubeConfigMerger(path or KUBE_CONFIG_DEFAULT_LOCATION)
    loader = Loader(
        config_dict=merger.config,
        config_base_path=None,
        active_context=context,
        config_persister=merger.save_changes,
    )
    await loader.load_and_set(configuration)
    return loader


def renewal(loader: KubeConfigLoader) -> Callable[[], Awaitable[Any]] | None:
    """The loader call that renews this kubeconfig user's token; ``None``: nothing expires."""
    user: Any = loader._user or {}
    provider = getattr(loader, "provider", None)
    if provider == "gcp":
        return loader.load_gcp_token
    if provider == "oidc":
        return loader._load_oid_token
    if "exec" in user:
        return loader.load_from_exec_plugin
    return None


async def keep_fresh(
    renew: Callable[[], Awaitable[Any]],
    loader: KubeConfigLoader,
    configuration: client.Configuration,
    interval: float,
) -> None:
    """Renew the token every ``interval`` seconds and hand it to the client; for ever."""
    while True:
        await asyncio.sleep(interval)
        try:
            await renew()
        except Exception as exc:  # the identity provider is down: keep the token, try again
            log.warning("kubernetes credentials not renewed", error=repr(exc), retry_in=interval)
            continue
        token = getattr(loader, "token", "")  # absent for client-certificate credentials
        if token:
            configuration.api_key["BearerToken"] = token


def _expires_within(token: str, seconds: float) -> bool:
    """Whether a JWT expires within ``seconds`` (an unreadable one: yes; no ``exp``: never)."""
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        expires = claims.get("exp")
    except (IndexError, ValueError, binascii.Error, AttributeError):
        return True
    return isinstance(expires, int | float) and expires - time.time() < seconds


async def _renew_oidc(values: dict[str, Any]) -> str:
    """The refresh-token grant at the provider's token endpoint; stores the new tokens."""
    refresh = values.get("refresh-token")
    if not refresh:
        raise ValueError("oidc: the id-token expires and there is no refresh-token to renew it")
    issuer = str(values["idp-issuer-url"]).rstrip("/")
    tls = _tls(values)
    form = {"grant_type": "refresh_token", "refresh_token": str(refresh)}
    client_id, secret = str(values["client-id"]), values.get("client-secret")
    headers = {"Authorization": _basic(client_id, str(secret))} if secret else {}
    if not secret:
        form["client_id"] = client_id  # a public client
    async with aiohttp.ClientSession(timeout=_IDP_TIMEOUT, raise_for_status=True) as session:
        async with session.get(f"{issuer}/.well-known/openid-configuration", ssl=tls) as found:
            endpoint = str((await found.json())["token_endpoint"])
        async with session.post(endpoint, data=form, headers=headers, ssl=tls) as answer:
            body = await answer.json()
    token = str(body["id_token"])
    values["id-token"] = token
    if body.get("refresh_token"):
        values["refresh-token"] = str(body["refresh_token"])
    log.info("kubernetes oidc token renewed", issuer=issuer)
    return token


def _basic(client_id: str, secret: str) -> str:
    """HTTP Basic client authentication as OAuth 2 specifies it (RFC 6749 section 2.3.1)."""
    pair = f"{quote(client_id, safe='')}:{quote(secret, safe='')}"
    return "Basic " + base64.b64encode(pair.encode()).decode()


def _tls(values: dict[str, Any]) -> ssl.SSLContext:
    """Verify the provider against its CA from the kubeconfig, else the system's."""
    if data := values.get("idp-certificate-authority-data"):
        return ssl.create_default_context(cadata=base64.b64decode(data).decode())
    if path := values.get("idp-certificate-authority"):
        return ssl.create_default_context(cafile=str(path))
    return ssl.create_default_context()
