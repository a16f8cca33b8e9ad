"""Runs placed in one go (:func:`place_runs`) land where best fit places them run after run."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from armada.scheduling.columns import reduce_columns
from armada.scheduling.placement import dominant_columns, place_identical
from armada.scheduling.runs import place_runs


def one_by_one(
    free: np.ndarray, keys: list[int], lengths: list[int], requests: np.ndarray, masks: dict[int, np.ndarray]
) -> list[int]:
    """Each run through :func:`place_identical` over every node, as the pool's turn does."""
    free = free.copy()
    scale = 1.0 / np.maximum(free.max(axis=0), 1)
    placed: list[int] = []
    for key, count in zip(keys, lengths, strict=True):
        got = place_identical(
            free, requests[key], masks[key], count, int(dominant_columns(requests[key], scale))
        )
        np.subtract.at(free, got.nodes, requests[key])
        placed += got.nodes.tolist()
        if len(got) < count:
            break
    return placed


@st.composite
def workloads(draw: st.DrawFn) -> tuple[np.ndarray, list[int], list[int], np.ndarray, dict[int, np.ndarray]]:
    nodes = draw(st.integers(1, 12))
    free = np.array(
        [[draw(st.integers(-1, 8)), draw(st.integers(0, 8)), draw(st.integers(0, 3))] for _ in range(nodes)],
        dtype=np.int64,
    )
    requests = np.array(
        [[draw(st.integers(0, 3)), draw(st.integers(0, 3)), 1] for _ in range(draw(st.integers(1, 3)))],
        dtype=np.int64,
    )
    masks = {key: np.array([draw(st.booleans()) for _ in range(nodes)]) for key in range(len(requests))}
    runs = draw(st.integers(1, 12))
    keys = [draw(st.integers(0, len(requests) - 1)) for _ in range(runs)]
    lengths = [draw(st.integers(1, 5)) for _ in range(runs)]
    return free, keys, lengths, requests, masks


@settings(max_examples=300, deadline=None)
@given(workloads())
def test_same_nodes_as_run_by_run(
    workload: tuple[np.ndarray, list[int], list[int], np.ndarray, dict[int, np.ndarray]],
) -> None:
    free, keys, lengths, requests, masks = workload
    scale = 1.0 / np.maximum(free.max(axis=0), 1)
    got = place_runs(
        free,
        keys=np.array(keys),
        bounds=np.concatenate([[0], np.cumsum(lengths)]),
        requests=requests,
        masks={key: masks[key] for key in set(keys)},
        dominant=dominant_columns(requests, scale),
        out_of_time=lambda: False,
    )
    assert got.tolist() == one_by_one(free, keys, lengths, requests, masks)


def test_reduce_columns_is_numpys_reduction() -> None:
    matrix = np.random.default_rng(0).integers(-5, 5, size=(50, 4))
    assert (reduce_columns(np.minimum, matrix) == matrix.min(axis=1)).all()
    assert (reduce_columns(np.logical_and, matrix > -3) == (matrix > -3).all(axis=1)).all()
    assert (reduce_columns(np.add, matrix[:, :1]) == matrix[:, 0]).all()
