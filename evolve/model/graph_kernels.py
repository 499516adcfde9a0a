"""The graph kernels every compiled layer shares: CSR build and transpose, Kahn's order, longest
tails and reachability, over integer nodes ``0..n-1``.

A graph is in CSR form: the neighbours of node ``v`` (its predecessors, or its
successors, as the caller keeps them) are ``idx[ptr[v]:ptr[v + 1]]``, repeats
allowed. The plain-Python meaning of each kernel is in :mod:`evolve.model.graph`
(over ``{node: [neighbours]}`` maps, what the validator and the Python scheduler
run): :func:`transpose` is :func:`~evolve.model.graph.successors`,
:func:`topological_order` is :func:`~evolve.model.graph.topological_order`,
:func:`longest_tails` is :func:`~evolve.model.graph.longest_tails` and
:func:`reach` is a union of :func:`~evolve.model.graph.upstream`; the tests hold
each kernel to its reference on random graphs.

Kernels of other files call these from compiled code; :mod:`evolve.model.kernel_cache`
is what makes that safe when this file changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain

import numpy as np
from numba import njit

import evolve.model.kernel_cache  # noqa: F401  (numba's cache folder, before the first @njit)
from evolve.model.compiled import BoolArray, FloatArray, IntArray


def csr(rows: Sequence[Sequence[int]]) -> tuple[IntArray, IntArray]:
    """``(ptr, idx)`` of the rows of neighbours ``rows`` (built from Python, in plain numpy)."""
    counts = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
    ptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    idx = np.fromiter(chain.from_iterable(rows), dtype=np.int64, count=int(ptr[-1]))
    return ptr, idx


@njit(cache=True, nogil=True)  # type: ignore[misc]
def transpose(ptr: IntArray, idx: IntArray, targets: int) -> tuple[IntArray, IntArray]:
    """The CSR transpose of ``ptr``/``idx`` over ``targets`` nodes: for each target, the sources
    that list it, ascending and with repeats (the successors of a predecessor graph, the readers
    of each fact)."""
    edges = ptr[ptr.shape[0] - 1]
    t_ptr = np.zeros(targets + 1, dtype=np.int64)
    for q in range(edges):
        t_ptr[idx[q] + 1] += 1
    for v in range(targets):
        t_ptr[v + 1] += t_ptr[v]
    fill = t_ptr[:targets].copy()
    t_idx = np.empty(edges, dtype=np.int64)
    for s in range(ptr.shape[0] - 1):
        for q in range(ptr[s], ptr[s + 1]):
            t_idx[fill[idx[q]]] = s
            fill[idx[q]] += 1
    return t_ptr, t_idx


@njit(cache=True, nogil=True)  # type: ignore[misc]
def topological_order(pred_ptr: IntArray, succ_ptr: IntArray, succ_idx: IntArray) -> IntArray:
    """Kahn's order of the graph with predecessor counts ``pred_ptr`` and successors
    ``succ_ptr``/``succ_idx`` (its transpose, repeats matching): FIFO, stable in node order, the
    nodes on or behind a cycle left out."""
    n = pred_ptr.shape[0] - 1
    waiting = np.empty(n, dtype=np.int64)
    order = np.empty(n, dtype=np.int64)
    placed = 0
    for v in range(n):
        waiting[v] = pred_ptr[v + 1] - pred_ptr[v]
        if waiting[v] == 0:
            order[placed] = v
            placed += 1
    head = 0
    while head < placed:
        v = order[head]
        head += 1
        for q in range(succ_ptr[v], succ_ptr[v + 1]):
            s = succ_idx[q]
            waiting[s] -= 1
            if waiting[s] == 0:
                order[placed] = s
                placed += 1
    return order[:placed]


@njit(cache=True, nogil=True)  # type: ignore[misc]
def longest_tails(dur: FloatArray, succ_ptr: IntArray, succ_idx: IntArray, from_zero: bool
                  ) -> FloatArray:
    """Each node's longest path to the end, its own duration included, for nodes numbered in a
    topological order (every successor has a higher number).

    ``from_zero`` says where the max over the successors starts, as two callers had it and
    still do: ``False``, Python's ``max(tails, default=0.0)`` (the first successor's tail, then
    any larger one), the scheduler's priority rule; ``True``, ``max([0.0, *tails])``, the
    tool-choice search's. They differ only for negative or NaN durations, which a problem file
    cannot hold but a problem built in Python can.
    """
    n = dur.shape[0]
    tail = np.empty(n, dtype=np.float64)
    for k in range(n - 1, -1, -1):
        lo, hi = succ_ptr[k], succ_ptr[k + 1]
        best = 0.0
        if hi > lo and not from_zero:
            best = tail[succ_idx[lo]]
            lo += 1
        for q in range(lo, hi):
            if tail[succ_idx[q]] > best:
                best = tail[succ_idx[q]]
        tail[k] = dur[k] + best
    return tail


@njit(cache=True, nogil=True)  # type: ignore[misc]
def reach(ptr: IntArray, idx: IntArray, starts: IntArray, seen: BoolArray) -> IntArray:
    """The nodes one or more edges away from ``starts`` and not yet ``seen``, marked in ``seen``
    and returned in the order found (breadth first).

    A node of ``starts`` is reached only through an edge. The walk does not pass through a
    ``seen`` node, so ``seen`` must be closed under the edges (what earlier calls leave): then the
    result is every node reachable from ``starts`` that was not seen before.
    """
    queue = np.empty(starts.shape[0] + seen.shape[0], dtype=np.int64)
    queue[:starts.shape[0]] = starts
    head, count = 0, starts.shape[0]
    while head < count:
        v = queue[head]
        head += 1
        for q in range(ptr[v], ptr[v + 1]):
            u = idx[q]
            if not seen[u]:
                seen[u] = True
                queue[count] = u
                count += 1
    return queue[starts.shape[0]:count]
