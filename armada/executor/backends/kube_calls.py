"""Calls to the Kubernetes API: a timeout on every one, retries for 429/5xx, raw JSON.

kubernetes-asyncio has no default timeout, so a dropped connection would hang a create,
a delete or a watch for ever; every call here has one. Answers are read as raw JSON and
decoded with msgspec rather than into the client's models: the models cost ~2 ms of CPU
per pod on the event loop and reject objects a newer API server sends (client-side
validation), while the executor only reads a handful of fields.

Errors become ``KubeError`` carrying the API server's own message (its ``Status`` body),
so a refused create shows "exceeded quota: …" rather than "Forbidden".
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import msgspec
import structlog
from kubernetes_asyncio import client, config

from armada.executor.backend import BackendSetupError
from armada.executor.backends.kube_credentials import keep_fresh, load_kubeconfig, renewal
from armada.executor.backoff import Backoff
from armada.executor.settings import KubernetesSettings

log = structlog.get_logger(__name__)

Json = dict[str, Any]
#: Statuses worth retrying: throttled (429) and server-side trouble (5xx); 0 is no answer.
RETRIED_STATUS = frozenset({0, 429, 500, 502, 503, 504})


class KubeError(Exception):
    """An API call that failed: HTTP ``status`` (0: no answer: timeout or connection lost)."""

    def __init__(self, status: int, reason: str, message: str, retry_after: float | None = None) -> None:
        super().__init__(f"HTTP {status} {reason}: {message}" if status else f"no answer: {message}")
        self.status, self.reason, self.message, self.retry_after = status, reason, message, retry_after

    @property
    def ambiguous(self) -> bool:
        """Whether a change may have been applied even though it failed (5xx, no answer)."""
        return self.status == 0 or self.status >= 500


class WatchEvent(msgspec.Struct):
    """One line of a watch stream."""

    type: str
    object: Json


_decode_event = msgspec.json.Decoder(WatchEvent).decode
_decode_json = msgspec.json.Decoder(dict[str, Any]).decode


def _retry_after(headers: Any) -> float | None:
    value = headers.get("Retry-After") if headers is not None else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def error_from(status: int, body: bytes, headers: Any = None) -> KubeError:
    """A ``KubeError`` from an error answer's ``Status`` body (or its raw text)."""
    try:
        decoded = _decode_json(body)
        reason, message = str(decoded.get("reason") or ""), str(decoded.get("message") or "")
    except (msgspec.DecodeError, AttributeError):
        reason, message = "", body.decode(errors="replace")[:500]
    return KubeError(status, reason, message or f"HTTP {status}", _retry_after(headers))


async def _read(response: aiohttp.ClientResponse) -> bytes:
    """The whole body of an answer, which is released after; a connection lost is ``NoAnswer``."""
    try:
        return await response.read()
    except (TimeoutError, aiohttp.ClientError) as exc:
        raise KubeError(0, "NoAnswer", repr(exc)) from exc
    finally:
        response.release()


async def api_client_from(settings: KubernetesSettings) -> client.ApiClient:
    """An API client from ``kubeconfig``, else in-cluster config, else ``~/.kube/config``.

    Proxy variables in the environment (``HTTPS_PROXY``) are for the executor's calls to
    the Armada server, not for the API server: kubernetes-asyncio's session trusts the
    environment, so that is turned off (a proxy for the API server goes in the kubeconfig).
    Exec-plugin, GCP and OIDC tokens expire (EKS: ~15 min): they are renewed in the
    background (:mod:`.kube_credentials`).
    """
    configuration = client.Configuration()
    configuration.client_side_validation = False
    loader = None
    try:
        if settings.kubeconfig:
            loader = await load_kubeconfig(settings.kubeconfig, settings.context or None, configuration)
        else:
            try:
                # Refreshes the projected service-account token itself (try_refresh_token).
                config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
            except config.ConfigException:
                loader = await load_kubeconfig(None, settings.context or None, configuration)
    except (config.ConfigException, OSError) as exc:
        where = settings.kubeconfig or "in-cluster or ~/.kube/config"
        raise BackendSetupError(f"cannot load the Kubernetes configuration ({where}): {exc}") from exc
    api = client.ApiClient(configuration)
    api.rest_client.pool_manager._trust_env = False  # no public switch: see the docstring
    renew = renewal(loader) if loader is not None else None
    if loader is not None and renew is not None:
        refresher = asyncio.create_task(
            keep_fresh(renew, loader, configuration, settings.credential_refresh_seconds),
            name="kube-credentials",
        )
        _REFRESHERS[id(api)] = refresher
    return api


#: Background credential refreshers by client, cancelled by ``close_api``.
_REFRESHERS: dict[int, asyncio.Task[None]] = {}


async def close_api(api: client.ApiClient) -> None:
    """Close a client made by ``api_client_from`` and stop its credential refresher."""
    refresher = _REFRESHERS.pop(id(api), None)
    if refresher is not None:
        refresher.cancel()
    await api.close()


def after_watch_failure(exc: Exception, version: str, backoff: Backoff) -> tuple[str, float]:
    """The resource version to go on from after a list or watch failed, and the wait first.

    Only a 410 (the version is too old) forgets the version and so relists: at once when a
    watch said it, after a back-off when the relist itself did (its continue token expired
    again). Anything else (429 while a restarted API server rebuilds its watch cache, a 5xx,
    a reset stream) keeps the version, so the watch resumes where it was after a back-off
    with jitter (or the server's ``Retry-After``, if longer), as client-go's reflector does:
    an API server restart under thousands of executors and pods must not become a relist storm.
    """
    status = exc.status if isinstance(exc, KubeError) else 0
    if status == 410:
        return "", backoff.next_delay() if not version else 0.0
    retry_after = exc.retry_after if isinstance(exc, KubeError) else None
    return version, max(retry_after or 0.0, backoff.next_delay())


class KubeCalls:
    """API calls with a timeout, and retries with back-off that honour ``Retry-After``."""

    def __init__(self, api: client.ApiClient, settings: KubernetesSettings) -> None:
        self._core = client.CoreV1Api(api)
        self._networking = client.NetworkingV1Api(api)
        self._settings = settings

    @property
    def core(self) -> client.CoreV1Api:
        """The typed API whose methods are handed to ``once``/``retried``/``pages``/``watch``."""
        return self._core

    @property
    def networking(self) -> client.NetworkingV1Api:
        """The Ingress API (``networking.k8s.io/v1``), used like ``core``."""
        return self._networking

    def backoff(self) -> Backoff:
        return Backoff(self._settings.retry_initial_seconds, self._settings.retry_max_seconds)

    async def answer(
        self, call: Callable[..., Awaitable[Any]], *args: Any, timeout: Any = None, **kwargs: Any
    ) -> aiohttp.ClientResponse:
        """The raw answer of one call (status 2xx), or ``KubeError``."""
        try:
            response: aiohttp.ClientResponse = await call(
                *args,
                _preload_content=False,
                _request_timeout=timeout or self._settings.request_timeout_seconds,
                **kwargs,
            )
            if response.status >= 300:
                body = await response.read()
                response.release()
                raise error_from(response.status, body, response.headers)
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise KubeError(0, "NoAnswer", repr(exc)) from exc
        return response

    async def once(self, call: Callable[..., Awaitable[Any]], *args: Any, **kwargs: Any) -> Json:
        """One call's JSON answer (no retry)."""
        return _decode_json(await _read(await self.answer(call, *args, **kwargs)))

    async def text(self, call: Callable[..., Awaitable[Any]], *args: Any, **kwargs: Any) -> str:
        """One call's text answer (container logs)."""
        return (await _read(await self.answer(call, *args, **kwargs))).decode(errors="replace")

    async def retried(self, call: Callable[..., Awaitable[Any]], *args: Any, **kwargs: Any) -> Json:
        """An idempotent call, retried on 429, 5xx and no answer (``api_attempts`` in all)."""
        backoff = self.backoff()
        for attempt in range(1, self._settings.api_attempts + 1):
            try:
                return await self.once(call, *args, **kwargs)
            except KubeError as exc:
                if exc.status not in RETRIED_STATUS or attempt == self._settings.api_attempts:
                    raise
                delay = exc.retry_after if exc.retry_after is not None else backoff.next_delay()
                log.debug("kubernetes call retried", error=str(exc), retry_in=round(delay, 3))
                await asyncio.sleep(delay)
        raise AssertionError("unreachable")

    async def delete_pod(self, namespace: str, name: str, grace: int) -> bool:
        """Delete a pod, giving it ``grace`` seconds to stop (retried); False if it was absent."""
        try:
            await self.retried(self._core.delete_namespaced_pod, name, namespace, grace_period_seconds=grace)
        except KubeError as exc:
            if exc.status == 404:
                return False
            raise
        return True

    async def pages(
        self, call: Callable[..., Awaitable[Any]], **selectors: Any
    ) -> AsyncIterator[tuple[list[Json], str]]:
        """Every item, one page (``list_page_size``) at a time, with the list's resource version
        (meaningful once the last page is in).

        Pages are handed over as they come so that a caller turns each into what it keeps
        and the whole list never exists at once (100,000 pods' JSON would be gigabytes of
        objects for the garbage collector). Every list is a consistent read (no
        ``resourceVersion``), the documented way to paginate: a ``resourceVersion=0`` list
        is served from the API server's watch cache, which ignores ``limit`` and answers
        with the whole collection in one response; a consistent read is also what "a pod
        is gone" evidence needs.
        """
        token = ""
        while True:
            page_args: dict[str, Any] = {"limit": self._settings.list_page_size, **selectors}
            if token:
                page_args["_continue"] = token
            page = await self.retried(call, **page_args)
            metadata = page.get("metadata") or {}
            token = str(metadata.get("continue") or "")
            yield page.get("items") or [], str(metadata.get("resourceVersion") or "")
            if not token:
                return

    async def watch(
        self, call: Callable[..., Awaitable[Any]], version: str, seconds: float, **selectors: Any
    ) -> AsyncIterator[WatchEvent]:
        """Events after ``version`` until the API server ends the watch (after ``seconds``).

        Bookmarks are asked for, so the version to resume from stays recent; an ``ERROR``
        event (410: too old) raises ``KubeError`` with its status: the caller relists.
        """
        timeout = aiohttp.ClientTimeout(
            sock_connect=self._settings.request_timeout_seconds,
            sock_read=seconds + self._settings.request_timeout_seconds,
        )
        response = await self.answer(
            call,
            watch=True,
            resource_version=version,
            allow_watch_bookmarks=True,
            timeout_seconds=max(1, int(seconds)),
            timeout=timeout,
            **selectors,
        )
        try:
            async for line in response.content:
                if not line.strip():
                    continue
                event = _decode_event(line)
                if event.type == "ERROR":
                    raise error_from(int(event.object.get("code") or 0), msgspec.json.encode(event.object))
                yield event
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise KubeError(0, "NoAnswer", repr(exc)) from exc
        finally:
            response.release()
