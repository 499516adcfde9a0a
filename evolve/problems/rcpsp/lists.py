"""Numba kernels that build precedence-feasible activity lists for the genetic search
(see :mod:`evolve.problems.rcpsp.search`): regret-biased sampling, the crossovers (two-point,
block, uniform, random-key, peak) and the shift mutation.

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
def _crossover_uniform(rng, mom, dad, out):  # type: ignore[no-untyped-def]
    """Hartmann's uniform crossover: each position takes the next unused
    activity of a randomly chosen parent. Keeps precedence feasibility."""
    n = mom.shape[0]
    taken = np.zeros(n, dtype=np.bool_)
    im = 0
    idd = 0
    for k in range(n):
        if rng.random() < 0.5:
            while taken[mom[im]]:
                im += 1
            a = mom[im]
        else:
            while taken[dad[idd]]:
                idd += 1
            a = dad[idd]
        out[k] = a
        taken[a] = True


@njit(cache=True)  # type: ignore[misc]
def _crossover_keys(rng, pb, mom, dad, out):  # type: ignore[no-untyped-def]
    """Random-key two-point crossover over activity numbers: activities
    q1..q2-1 take dad's list position as priority, the others mom's."""
    n = mom.shape[0]
    key = np.empty(n, dtype=np.float64)
    for k in range(n):
        key[mom[k]] = k
    q1, q2 = _cut_points(rng, n)
    for k in range(n):
        a = dad[k]
        if q1 <= a < q2:
            key[a] = k
    _keys_to_list(pb, key, out)


@njit(cache=True)  # type: ignore[misc]
def _keys_to_list(pb, key, out):  # type: ignore[no-untyped-def]
    """Precedence-feasible list from priority keys: repeatedly take the
    eligible activity with the smallest key (ties: smallest index)."""
    dur, _dem, _cap, pred_ptr, _pred_idx, succ_ptr, succ_idx = pb
    n = dur.shape[0]
    left = np.empty(n, dtype=np.int64)
    elig = np.empty(n, dtype=np.int64)
    ne = 0
    for j in range(n):
        left[j] = pred_ptr[j + 1] - pred_ptr[j]
        if left[j] == 0:
            elig[ne] = j
            ne += 1
    for k in range(n):
        b = 0
        for e in range(1, ne):
            a = elig[e]
            if key[a] < key[elig[b]] or (key[a] == key[elig[b]] and a < elig[b]):
                b = e
        ne = _take(elig, ne, b, left, succ_ptr, succ_idx, out, k)


@njit(cache=True)  # type: ignore[misc]
def _peak_crossover(rng, pb, f_s, f_ms, m_s, m_ms, min_frac, max_frac, out):  # type: ignore[no-untyped-def]
    """Peak crossover (after Valls et al. 2008 and Debels & Vanhoucke 2007).

    Parents are schedules of the other world; keys are their mirrored start
    times, i.e. start times in the world of ``pb`` where the child is decoded.
    The child inherits the father's order for the activities inside the time
    window of highest resource utilisation (the part of a schedule that is
    hardest to get right and that the father did well), and the mother's
    order for the rest, placed before or after the window as in the mother.
    """
    dur, dem, cap, _pred_ptr, _pred_idx, _succ_ptr, _succ_idx = pb
    n = dur.shape[0]
    nres = cap.shape[0]
    util = np.zeros(f_ms + 1, dtype=np.float64)
    for j in range(n):
        a = f_ms - f_s[j] - dur[j]
        w = 0.0
        for r in range(nres):
            w += dem[j, r] / cap[r]
        for t in range(a, a + dur[j]):
            util[t] += w
    lo = max(1, int(min_frac * f_ms))
    hi = max(lo, int(max_frac * f_ms))
    L = rng.integers(lo, hi + 1)
    if f_ms < L:
        L = f_ms
    acc = 0.0
    for t in range(L):
        acc += util[t]
    best = acc
    t1 = 0
    for t in range(L, f_ms):
        acc += util[t] - util[t - L]
        if acc > best:
            best = acc
            t1 = t - L + 1
    key = np.empty(n, dtype=np.float64)
    big = 4.0 * (f_ms + m_ms + 1)
    for j in range(n):
        fm = f_ms - f_s[j] - dur[j]
        mm = m_ms - m_s[j] - dur[j]
        if t1 <= fm < t1 + L:
            key[j] = fm
        elif mm < t1:
            key[j] = mm - big
        else:
            key[j] = mm + big
    _keys_to_list(pb, key, out)


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
