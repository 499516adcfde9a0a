"""Rows gathered as coordinates: stacking two sets equals gathering them in one, and the
matrix is the rows' dense form."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from evolve.model.sparse_rows import SparseRows

ROW = st.tuples(st.lists(st.tuples(st.integers(0, 5), st.floats(-3, 3)), max_size=4),
                st.floats(-5, 0), st.floats(0, 5))


Row = tuple[list[tuple[int, float]], float, float]


def dense(rows: list[Row], width: int) -> np.ndarray:
    out = np.zeros((len(rows), width))
    for i, (entries, _, _) in enumerate(rows):
        for col, value in entries:
            out[i, col] += value
    return out


@given(st.lists(ROW, max_size=5), st.lists(ROW, max_size=5))
def test_stacked_rows_are_the_rows_gathered_in_one(top: list[Row], below: list[Row]) -> None:
    a, b, whole = SparseRows(), SparseRows(), SparseRows()
    for entries, lo, hi in top:
        a.add(entries, lo, hi)
        whole.add(entries, lo, hi)
    for entries, lo, hi in below:
        b.add(entries, lo, hi)
        whole.add(entries, lo, hi)
    both = a.then(b)
    assert both == whole
    assert len(a) == len(top)  # neither part changed
    np.testing.assert_allclose(both.matrix(6).toarray(), dense(top + below, 6))


def test_a_row_with_only_an_upper_side_is_unbounded_below() -> None:
    rows = SparseRows()
    rows.add([(0, 1.0)], upper=2.0)
    assert rows.lower == [-math.inf] and rows.upper == [2.0]
