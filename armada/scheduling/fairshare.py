"""Weighted dominant resource fairness: shares, demand-capped fair shares and queue cost.

A queue's *dominant share* is ``max_r multiplier[r] * allocated[r] / total[r]`` over the
configured DRF resources of a pool (multipliers default to 1). Its *cost* is
``(dominant share + decayed past usage) / weight``; the next job always goes to the queue
whose cost after taking it is lowest.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def drf_scale(totals: IntArray, names: list[str], multipliers: Mapping[str, float]) -> FloatArray:
    """``multiplier / total`` for DRF resources present in the pool, 0 elsewhere (so they never
    dominate); ``multipliers`` maps each considered resource to its multiplier (usually 1)."""
    scale = np.zeros(len(totals), dtype=np.float64)
    for column, name in enumerate(names):
        if name in multipliers and totals[column] > 0:
            scale[column] = multipliers[name] / float(totals[column])
    return scale


def dominant_shares(allocations: IntArray, scale: FloatArray) -> FloatArray:
    """Dominant share of each row of an ``n x R`` allocation matrix (or of one vector)."""
    if allocations.shape[-1] == 0:
        return np.zeros(allocations.shape[:-1], dtype=np.float64)
    shares: FloatArray = (allocations * scale).max(axis=-1)
    return shares


def water_fill(weights: FloatArray, demands: FloatArray) -> FloatArray:
    """Demand-capped weighted shares of a capacity of 1.

    Queues demanding less than their weighted share get their demand; what they leave is
    re-shared among the others in proportion to weight, until nothing is left over.
    """
    shares = np.zeros(len(weights), dtype=np.float64)
    open_ = demands > 0
    remaining = 1.0
    while open_.any() and remaining > 1e-12:
        offer = remaining * weights * open_ / weights[open_].sum()
        capped = open_ & (demands <= offer + 1e-12)
        if not capped.any():
            shares[open_] = offer[open_]
            break
        shares[capped] = demands[capped]
        remaining -= float(demands[capped].sum())
        open_ &= ~capped
    return shares


def fair_shares(weights: FloatArray, active: npt.NDArray[np.bool_]) -> FloatArray:
    """Plain weighted fair share: ``weight / sum of weights`` over active queues."""
    total = float(weights[active].sum())
    if total <= 0:
        return np.zeros(len(weights), dtype=np.float64)
    return np.where(active, weights / total, 0.0)
