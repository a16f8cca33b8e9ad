"""Job bodies for API tests."""

from __future__ import annotations

from typing import Any

from armada.model.wire.jobs import JobSubmitRequestItem


def pod_spec(cpu: str = "1", memory: str = "64Mi", **extra: Any) -> dict[str, Any]:
    resources = {"cpu": cpu, "memory": memory}
    return {
        "containers": [
            {
                "name": "main",
                "image": "alpine",
                "args": ["sleep", "1"],
                "resources": {"requests": dict(resources), "limits": dict(resources)},
            }
        ],
        **extra,
    }


def item(**fields: Any) -> JobSubmitRequestItem:
    fields.setdefault("namespace", "default")
    fields.setdefault("pod_spec", pod_spec())
    return JobSubmitRequestItem(**fields)


def raw_item(**fields: Any) -> dict[str, Any]:
    """A request item as JSON, for requests the typed client would not build."""
    return {"namespace": "default", "podSpec": pod_spec(), **fields}
