"""Environment variables of a run: Armada's own, and a container's ``env`` resolved locally.

Kubernetes resolves ``valueFrom.fieldRef`` and ``$(VAR)`` references itself; the process
backend has no kubelet, so it resolves them here from the lease (its annotations, labels
and ids), which is enough for the usual ``metadata.annotations['...']`` and
``metadata.uid`` cases.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import structlog

from armada.model.leases import Lease

log = structlog.get_logger(__name__)

_FIELD_INDEX = re.compile(r"^metadata\.(annotations|labels)\['([^']+)'\]$")
_VAR_REF = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


def armada_env(lease: Lease) -> dict[str, str]:
    """Variables every Armada run sees, whatever the backend."""
    env = {
        "ARMADA_JOB_ID": lease.job_id,
        "ARMADA_QUEUE": lease.queue,
        "ARMADA_JOB_SET_ID": lease.job_set_id,
    }
    if lease.gang_id:
        env["ARMADA_GANG_ID"] = lease.gang_id
        env["ARMADA_GANG_CARDINALITY"] = str(lease.gang_cardinality)
    if lease.gang_node_uniformity_label:
        env["ARMADA_GANG_NODE_UNIFORMITY_LABEL_NAME"] = lease.gang_node_uniformity_label
        env["ARMADA_GANG_NODE_UNIFORMITY_LABEL_VALUE"] = lease.gang_node_uniformity_value
    return env


def field_value(path: str, lease: Lease, *, pod_name: str, node: str) -> str | None:
    """The value of a pod ``fieldRef`` path, as far as it can be known without a kubelet."""
    indexed = _FIELD_INDEX.match(path)
    if indexed is not None:
        source = lease.annotations if indexed[1] == "annotations" else lease.labels
        return source.get(indexed[2], "")
    known = {
        "metadata.name": pod_name,
        "metadata.namespace": lease.namespace,
        "metadata.uid": lease.run_id,
        "spec.nodeName": node,
        "spec.serviceAccountName": "default",
        "status.podIP": "127.0.0.1",
        "status.hostIP": "127.0.0.1",
    }
    return known.get(path)


def expand_refs(text: str, env: Mapping[str, str]) -> str:
    """Kubernetes ``$(VAR)`` expansion: known variables are replaced, ``$$`` escapes ``$``."""

    def replace(match: re.Match[str]) -> str:
        if match[1] is None:
            return "$"
        return env.get(match[1], match[0])

    return _VAR_REF.sub(replace, text)


def container_env(container: Mapping[str, Any], lease: Lease, *, pod_name: str, node: str) -> dict[str, str]:
    """A container's ``env`` list resolved to plain values, after Armada's variables."""
    env = armada_env(lease)
    for entry in container.get("env") or []:
        name = str(entry.get("name", ""))
        if "value" in entry:
            env[name] = expand_refs(str(entry["value"]), env)
            continue
        field_ref = (entry.get("valueFrom") or {}).get("fieldRef")
        value = (
            field_value(str(field_ref.get("fieldPath", "")), lease, pod_name=pod_name, node=node)
            if (field_ref)
            else None
        )
        if value is None:
            log.warning("env var cannot be resolved locally; left empty", run_id=lease.run_id, name=name)
            value = ""
        env[name] = value
    return env
