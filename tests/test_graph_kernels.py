"""The shared graph kernels equal their plain-Python meaning in :mod:`evolve.model.graph`, on random
graphs: cycles, self-loops and repeated edges included wherever the kernel accepts them."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from evolve.model.graph import longest_tails as tails_reference
from evolve.model.graph import successors, topological_order, upstream
from evolve.model.graph_kernels import csr, longest_tails, reach, transpose
from evolve.model.graph_kernels import topological_order as kahn

Rows = list[list[int]]


@st.composite
def digraphs(draw: st.DrawFn, max_nodes: int = 12) -> Rows:
    """Any graph as rows of neighbours: cycles, self-loops and repeats allowed."""
    n = draw(st.integers(0, max_nodes))
    if n == 0:
        return []
    return draw(st.lists(st.lists(st.integers(0, n - 1), max_size=4), min_size=n, max_size=n))


@st.composite
def dags(draw: st.DrawFn, max_nodes: int = 12) -> Rows:
    """A graph numbered in a topological order, as rows of successors (each above its node)."""
    n = draw(st.integers(0, max_nodes))
    return [draw(st.lists(st.integers(v + 1, n - 1), max_size=4)) if v + 1 < n else []
            for v in range(n)]


def as_map(rows: Rows) -> dict[int, list[int]]:
    return dict(enumerate(rows))


def rows_of(ptr: np.ndarray, idx: np.ndarray) -> Rows:
    return [[int(x) for x in idx[ptr[v]:ptr[v + 1]]] for v in range(ptr.shape[0] - 1)]


@given(digraphs())
@settings(max_examples=200, deadline=None)
def test_csr_keeps_the_rows(rows: Rows) -> None:
    ptr, idx = csr(rows)
    assert ptr.dtype == idx.dtype == np.int64
    assert rows_of(ptr, idx) == rows


@given(digraphs())
@settings(max_examples=200, deadline=None)
def test_transpose_is_successors(preds: Rows) -> None:
    """Each node's successors in node order, repeats kept: :func:`successors` of the map."""
    ptr, idx = csr(preds)
    t_ptr, t_idx = transpose(ptr, idx, len(preds))
    assert rows_of(t_ptr, t_idx) == [successors(as_map(preds))[v] for v in range(len(preds))]


@given(digraphs())
@settings(max_examples=200, deadline=None)
def test_kahn_order_is_the_reference_order(preds: Rows) -> None:
    """FIFO, stable in node order, nodes on or behind a cycle left out, like the validator's."""
    ptr, idx = csr(preds)
    succ_ptr, succ_idx = transpose(ptr, idx, len(preds))
    assert kahn(ptr, succ_ptr, succ_idx).tolist() == topological_order(as_map(preds))


durations = st.one_of(st.floats(0, 100), st.floats(allow_nan=True, allow_infinity=True),
                      st.sampled_from([0.0, -0.0, -1.0, float("nan")]))


@given(dags(), st.data(), st.booleans())
@settings(max_examples=300, deadline=None)
def test_longest_tails_are_the_reference_tails(succ: Rows, data: st.DataObject, from_zero: bool
                                               ) -> None:
    """Both seeds of the max, to the bit, NaN and negative durations included (where they differ)."""
    n = len(succ)
    dur = data.draw(st.lists(durations, min_size=n, max_size=n))
    ptr, idx = csr(succ)
    tail = longest_tails(np.array(dur, dtype=np.float64), ptr, idx, from_zero)
    expected = tails_reference(list(range(n)), as_map(succ), dict(enumerate(dur)), from_zero)
    np.testing.assert_array_equal(tail, np.array([expected[v] for v in range(n)]))
    assert [str(x) for x in tail] == [str(expected[v]) for v in range(n)]  # -0.0 and 0.0 apart


@given(dags(), st.data())
@settings(max_examples=200, deadline=None)
def test_the_two_seeds_agree_on_durations_a_problem_file_allows(succ: Rows, data: st.DataObject
                                                                ) -> None:
    n = len(succ)
    dur = np.array(data.draw(st.lists(st.floats(0, 1e6), min_size=n, max_size=n)), dtype=np.float64)
    ptr, idx = csr(succ)
    np.testing.assert_array_equal(longest_tails(dur, ptr, idx, False), longest_tails(dur, ptr, idx, True))


@given(digraphs(), st.data())
@settings(max_examples=300, deadline=None)
def test_reach_is_the_union_of_upstream_sets(rows: Rows, data: st.DataObject) -> None:
    """From ``starts``, past a ``seen`` set closed under the edges (what earlier calls leave)."""
    n = len(rows)
    graph = as_map(rows)
    nodes = st.lists(st.integers(0, n - 1), max_size=4) if n else st.just([])
    starts, earlier = data.draw(nodes), data.draw(nodes)
    closed = set(earlier).union(*(upstream(v, graph) for v in earlier))
    seen = np.zeros(n, dtype=np.bool_)
    seen[list(closed)] = True
    ptr, idx = csr(rows)
    found = reach(ptr, idx, np.array(starts, dtype=np.int64), seen)
    expected = set().union(*(upstream(v, graph) for v in starts)) - closed
    assert sorted(found.tolist()) == sorted(expected)
    assert len(found) == len(expected)  # each node once
    assert set(np.flatnonzero(seen).tolist()) == closed | expected
