"""Container logs in the API double: what the kubelet keeps and how pods/log serves it.

Lines are kept with the time the kubelet stamped them, so that ``timestamps``,
``sinceSeconds``, ``tailLines``, ``limitBytes`` and ``previous`` answer as a real API
server does, including its 400s (a container not named, two ``since`` parameters, no
previous instance).
"""

from __future__ import annotations

import time
from typing import Any

import aiohttp.web

from tests.integration.executor.kube_store import ApiError, Store


def flag(query: Any, name: str) -> bool:
    """A boolean query parameter as the API server parses it (Go's ``ParseBool``)."""
    return str(query.get(name, "")).lower() in ("1", "t", "true")


def rfc3339(at: float) -> str:
    """As a kubelet stamps log lines: RFC 3339 with nanoseconds, trailing zeros dropped."""
    whole = int(at)
    fraction = f"{round((at - whole) * 1e9):09d}".rstrip("0")
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + (f".{fraction}" if fraction else "") + "Z"


class PodLogs:
    """Mixed into ``KubeDouble`` (which sets ``logs``, ``log_lines`` and ``previous_logs``)."""

    store: Store
    logs: dict[tuple[str, str, str], str]
    log_lines: dict[tuple[str, str, str], list[tuple[float, str]]]
    previous_logs: dict[tuple[str, str, str], list[tuple[float, str]]]

    def write_log(
        self, pod: str, line: str, *, at: float, container: str = "main", previous: bool = False
    ) -> None:
        """The kubelet records ``line`` of a container of ``pod`` (namespace ``default``)."""
        (self.previous_logs if previous else self.log_lines)[("default", pod, container)].append((at, line))

    def serve_log(self, ns: str, name: str, query: Any) -> aiohttp.web.Response:
        pod = self.store.get("pods", ns, name)
        if pod is None:
            raise ApiError(404, "NotFound", f'pods "{name}" not found')
        containers = [c["name"] for c in pod["spec"].get("containers") or []]
        container = query.get("container") or (containers[0] if len(containers) == 1 else "")
        if not container:
            choices = " ".join(containers)
            raise ApiError(
                400,
                "BadRequest",
                f"a container name must be specified for pod {name}, choose one of: [{choices}]",
            )
        if container not in containers:
            raise ApiError(400, "BadRequest", f"container {container} is not valid for pod {name}")
        key = (ns, name, container)
        if key in self.logs:
            return aiohttp.web.Response(text=self.logs[key])
        entries = self.log_lines.get(key, [])
        if flag(query, "previous"):
            entries = self.previous_logs.get(key, [])
            if not entries:
                message = f'previous terminated container "{container}" in pod "{name}" not found'
                raise ApiError(400, "BadRequest", message)
        if "sinceSeconds" in query and "sinceTime" in query:
            raise ApiError(400, "BadRequest", "at most one of sinceTime or sinceSeconds may be specified")
        if "sinceSeconds" in query:
            entries = [(at, line) for at, line in entries if at >= time.time() - int(query["sinceSeconds"])]
        if "tailLines" in query:
            entries = entries[len(entries) - int(query["tailLines"]) :] if int(query["tailLines"]) else []
        stamped = flag(query, "timestamps")
        text = "".join(f"{rfc3339(at)} {line}\n" if stamped else f"{line}\n" for at, line in entries)
        if "limitBytes" in query:
            text = text.encode()[: int(query["limitBytes"])].decode(errors="ignore")
        return aiohttp.web.Response(text=text)
