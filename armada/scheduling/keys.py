"""The table of distinct scheduling keys: one row per set of interchangeable jobs.

Every per-job cost in a cycle is paid once per key instead (request vector, node mask,
priority class lookup), which is what makes a million queued jobs cheap.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from armada.model.quantities import format_units
from armada.model.resources import PODS, ResourceIndex, ResourceVector
from armada.scheduling.config import SchedulingConfig
from armada.scheduling.requirements import NodeSelectorTerm, SchedulingKey, Toleration


@dataclass(frozen=True, slots=True)
class KeyInfo:
    """Decoded scheduling key plus its priority class settings."""

    index: int
    requests: dict[str, int]
    priority_class: str
    priority: int
    preemptible: bool
    node_selector: tuple[tuple[str, str], ...]
    tolerations: tuple[Toleration, ...]
    affinity: tuple[NodeSelectorTerm, ...]
    pools: frozenset[str]
    #: 0 for a job outside any gang, else the gang's cardinality.
    gang_cardinality: int
    uniformity_label: str

    def allows_pool(self, pool: str) -> bool:
        return not self.pools or pool in self.pools

    def describe(self) -> str:
        """Human summary for scheduling reports, e.g. ``cpu=1 memory=4Gi armada-default zone=a``."""
        parts = [f"{name}={format_units(name, units)}" for name, units in sorted(self.requests.items())]
        parts.append(self.priority_class)
        parts += [f"{k}={v}" for k, v in self.node_selector]
        if self.affinity:
            parts.append("+affinity")
        if self.tolerations:
            parts.append(f"+{len(self.tolerations)} tolerations")
        if self.pools:
            parts.append("pools=" + ",".join(sorted(self.pools)))
        if self.gang_cardinality:
            parts.append(
                f"gang of {self.gang_cardinality}"
                + (f" by {self.uniformity_label}" if self.uniformity_label else "")
            )
        return " ".join(parts)

    def describe_constraints(self) -> str:
        parts = [f"{k}={v}" for k, v in self.node_selector]
        if self.affinity:
            parts.append("node affinity")
        return f"selector ({', '.join(parts)})" if parts else "selector"


class KeyTable:
    """Interns scheduling keys; request vectors are padded as new resources appear."""

    def __init__(self, config: SchedulingConfig, resources: ResourceIndex) -> None:
        self._config = config
        self._resources = resources
        self._index: dict[SchedulingKey, int] = {}
        self.infos: list[KeyInfo] = []
        self._requests: npt.NDArray[np.int64] = np.zeros((0, len(resources)), dtype=np.int64)
        self._priorities: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self._gangs: npt.NDArray[np.bool_] = np.zeros(0, dtype=np.bool_)

    def __len__(self) -> int:
        return len(self.infos)

    def intern(self, key: SchedulingKey) -> int:
        index = self._index.get(key)
        if index is None:
            requests, pc_name, selector, tolerations, affinity, pools, cardinality, label = key
            if pc_name not in self._config.priority_classes:
                raise ValueError(f"unknown priority class {pc_name!r}")
            pc = self._config.priority_classes[pc_name]
            index = self._index[key] = len(self.infos)
            self.infos.append(
                KeyInfo(
                    index=index,
                    requests=dict(requests),
                    priority_class=pc_name,
                    priority=pc.priority,
                    preemptible=pc.preemptible,
                    node_selector=selector,
                    tolerations=tolerations,
                    affinity=affinity,
                    pools=frozenset(pools),
                    gang_cardinality=cardinality,
                    uniformity_label=label,
                )
            )
            vector = self._resources.vector({**dict(requests), PODS: 1})  # one pod per job
            self._requests = np.vstack([self.requests(), vector[None, :]])
            self._priorities = np.append(self._priorities, pc.priority)
            self._gangs = np.append(self._gangs, cardinality > 0)
        return index

    def requests(self) -> npt.NDArray[np.int64]:
        """K x R request matrix over the current resource index."""
        width = len(self._resources)
        if self._requests.shape[1] < width:
            wider = np.zeros((self._requests.shape[0], width), dtype=np.int64)
            wider[:, : self._requests.shape[1]] = self._requests
            self._requests = wider
        return self._requests

    def request(self, index: int) -> ResourceVector:
        row: ResourceVector = self.requests()[index]
        return row

    def priorities(self) -> npt.NDArray[np.int64]:
        """Priority-class priority per key."""
        return self._priorities

    def gangs(self) -> npt.NDArray[np.bool_]:
        """Whether each key is a gang's (its jobs are placed together)."""
        return self._gangs
