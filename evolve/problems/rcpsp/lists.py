"""Numba kernels that build precedence-feasible activity lists for the genetic search
(see :mod:`evolve.problems.rcpsp.search`): regret-biased sampling, the two crossovers (two-point
and block) and the shift mutation.

Kept apart from :mod:`evolve.problems.rcpsp.kernels`, which selects, decodes and keeps
individuals with them. ``pb`` (problem) is the instance as the tuple ``(dur, dem, cap,
pred_ptr, pred_idx, succ_ptr, succ_idx)``, which numba passes as one argument; swapping the
predecessor and successor arrays gives the reversed project. Randomness comes only from the
``numpy.random.Generator`` passed in.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)  # type: ignore[misc]
def _take(elig, ne, pick, left, succ_ptr, succ_idx, out, k):  # type: ignore[no-untyped-def]
    """Move ``elig[pick]`` to ``out[k]`` and make eligible the successors it was
    the last predecessor of. Returns the new number of eligible activities."""
    j = elig[pick]
    elig[pick] = elig[ne - 1]
    ne -= 1
    out[k] = j
    for q in range(succ_ptr[j], succ_ptr[j + 1]):
        s = succ_idx[q]
        left[s] -= 1
        if left[s] == 0:
            elig[ne] = s
            ne += 1
    return ne


@njit(cache=True)  # type: ignore[misc]
def _rbrs_list(rng, pb, prio, alpha, out):  # type: ignore[no-untyped-def]
    """Regret-biased random sampling: build a list one eligible activity at a
    time, with probability growing with (max priority - priority + 1)^alpha
    (smaller ``prio`` = more urgent)."""
    dur, _dem, _cap, pred_ptr, _pred_idx, succ_ptr, succ_idx = pb
    n = dur.shape[0]
    left = np.empty(n, dtype=np.int64)
    for j in range(n):
        left[j] = pred_ptr[j + 1] - pred_ptr[j]
    elig = np.empty(n, dtype=np.int64)
    ne = 0
    for j in range(n):
        if left[j] == 0:
            elig[ne] = j
            ne += 1
    w = np.empty(n, dtype=np.float64)
    for k in range(n):
        worst = prio[elig[0]]
        for e in range(1, ne):
            if prio[elig[e]] > worst:
                worst = prio[elig[e]]
        tot = 0.0
        for e in range(ne):
            w[e] = (worst - prio[elig[e]] + 1.0) ** alpha
            tot += w[e]
        u = rng.random() * tot
        pick = ne - 1
        acc = 0.0
        for e in range(ne):
            acc += w[e]
            if u < acc:
                pick = e
                break
        ne = _take(elig, ne, pick, left, succ_ptr, succ_idx, out, k)


@njit(cache=True)  # type: ignore[misc]
def _cut_points(rng, n):  # type: ignore[no-untyped-def]
    """Two cut positions ``q1 <= q2`` in ``0..n``, drawn uniformly (two draws of ``rng``)."""
    q1 = rng.integers(0, n + 1)
    q2 = rng.integers(0, n + 1)
    if q1 > q2:
        q1, q2 = q2, q1
    return q1, q2


@njit(cache=True)  # type: ignore[misc]
def _crossover(rng, mom, dad, out):  # type: ignore[no-untyped-def]
    """Hartmann's two-point crossover: mom's head, dad's order for the middle,
    mom's order for the tail. Keeps precedence feasibility of both parents."""
    n = mom.shape[0]
    q1, q2 = _cut_points(rng, n)
    taken = np.zeros(n, dtype=np.bool_)
    k = 0
    for i in range(q1):
        out[k] = mom[i]
        taken[mom[i]] = True
        k += 1
    for i in range(n):
        if k >= q2:
            break
        a = dad[i]
        if not taken[a]:
            out[k] = a
            taken[a] = True
            k += 1
    for i in range(n):
        a = mom[i]
        if not taken[a]:
            out[k] = a
            taken[a] = True
            k += 1


@njit(cache=True)  # type: ignore[misc]
def _crossover_block(rng, pb, mom, dad, out):  # type: ignore[no-untyped-def]
    """Block crossover (in the spirit of Zamani's magnet-based crossover): the father's
    positions q1..q2-1 are kept whole, in his order, and inserted into the mother's order of
    the other activities at position q1, or later if an outside predecessor of the block
    comes later in her list; her activities that depend on the block wait until it is placed.

    Lists are sorted by start time, so a run of consecutive positions is a stretch of the
    father's schedule, packed as he packed it; Hartmann's two-point crossover keeps only the
    relative order of the middle activities, interleaved with the mother's."""
    _dur, _dem, _cap, pred_ptr, pred_idx, _succ_ptr, _succ_idx = pb
    n = mom.shape[0]
    q1, q2 = _cut_points(rng, n)
    inb = np.zeros(n, dtype=np.bool_)
    for i in range(q1, q2):
        inb[dad[i]] = True
    # outside predecessors of the block still to emit
    need = 0
    isneed = np.zeros(n, dtype=np.bool_)
    for i in range(q1, q2):
        j = dad[i]
        for q in range(pred_ptr[j], pred_ptr[j + 1]):
            a = pred_idx[q]
            if not inb[a] and not isneed[a]:
                isneed[a] = True
                need += 1
    wait = np.zeros(n, dtype=np.bool_)
    pend = np.empty(n, dtype=np.int64)
    npend = 0
    k = 0
    placed = q2 == q1
    for i in range(n):
        a = mom[i]
        if inb[a]:
            continue
        if not placed:
            dep = False
            for q in range(pred_ptr[a], pred_ptr[a + 1]):
                b = pred_idx[q]
                if inb[b] or wait[b]:
                    dep = True
                    break
            if dep:
                wait[a] = True
                pend[npend] = a
                npend += 1
                continue
        out[k] = a
        k += 1
        if isneed[a]:
            need -= 1
        if not placed and need == 0 and k >= q1:
            k = _put_block(out, k, dad, q1, q2, pend, npend)
            placed = True
    if not placed:
        _put_block(out, k, dad, q1, q2, pend, npend)


@njit(cache=True)  # type: ignore[misc]
def _put_block(out, k, dad, q1, q2, pend, npend):  # type: ignore[no-untyped-def]
    """Write ``dad[q1:q2]`` and then the ``npend`` waiting activities at ``out[k:]``; returns
    the next free position."""
    for t in range(q1, q2):
        out[k] = dad[t]
        k += 1
    for t in range(npend):
        out[k] = pend[t]
        k += 1
    return k


@njit(cache=True)  # type: ignore[misc]
def _shift_mutation(rng, pb, lst):  # type: ignore[no-untyped-def]
    """Move one random activity to a random position between its last
    predecessor and its first successor in the list."""
    _dur, _dem, _cap, pred_ptr, pred_idx, succ_ptr, succ_idx = pb
    n = lst.shape[0]
    pos = np.empty(n, dtype=np.int64)
    for k in range(n):
        pos[lst[k]] = k
    i = rng.integers(0, n)
    j = lst[i]
    lo = 0
    for q in range(pred_ptr[j], pred_ptr[j + 1]):
        v = pos[pred_idx[q]] + 1
        if v > lo:
            lo = v
    hi = n - 1
    for q in range(succ_ptr[j], succ_ptr[j + 1]):
        v = pos[succ_idx[q]] - 1
        if v < hi:
            hi = v
    if hi <= lo:
        return
    t = rng.integers(lo, hi + 1)
    if t > i:
        for k in range(i, t):
            lst[k] = lst[k + 1]
    else:
        for k in range(i, t, -1):
            lst[k] = lst[k - 1]
    lst[t] = j
