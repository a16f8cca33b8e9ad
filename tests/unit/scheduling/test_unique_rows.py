import numpy as np
import pytest

from armada.scheduling.unique_rows import unique_rows


@pytest.mark.parametrize("shape", [(0, 3), (1, 3), (7, 1), (500, 4), (2_000, 2)])
def test_unique_rows_agrees_with_numpy(shape: tuple[int, int]) -> None:
    rng = np.random.default_rng(shape[0])
    matrix = rng.integers(-3, 4, size=shape).astype(np.int64)
    values, inverse, counts = unique_rows(matrix)
    expected, expected_inverse, expected_counts = np.unique(
        matrix, axis=0, return_inverse=True, return_counts=True
    )
    assert values.tolist() == expected.tolist()
    assert inverse.tolist() == expected_inverse.ravel().tolist()
    assert counts.tolist() == expected_counts.tolist()
    assert (values[inverse] == matrix).all()


def test_large_values_are_not_confused() -> None:
    big = np.iinfo(np.int64).max
    matrix = np.array([[big, 0], [big, 1], [big, 0], [0, big]], dtype=np.int64)
    values, inverse, counts = unique_rows(matrix)
    assert values.tolist() == [[0, big], [big, 0], [big, 1]]
    assert inverse.tolist() == [1, 2, 1, 0]
    assert counts.tolist() == [1, 2, 1]
