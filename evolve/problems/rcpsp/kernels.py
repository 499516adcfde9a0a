"""Numba kernels of the genetic search (see :mod:`evolve.problems.rcpsp.search`).

Sampling, crossover, mutation, survival and the bi-population generation
step, all on flat arrays so that a whole generation runs without returning
to Python. ``pb`` (problem) is the instance as the tuple ``(dur, dem, cap,
pred_ptr, pred_idx, succ_ptr, succ_idx)``; swapping the predecessor and
successor arrays gives the reversed project, in which the serial SGS
right-justifies. Randomness comes only from the ``numpy.random.Generator``
passed in.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from evolve.problems.rcpsp.decode import (
    parallel_kernel,
    reset_profile,
    serial_kernel,
    sort_by_finish,
)

#: Makespan of an empty slot: larger than any real schedule.
BIG = np.int64(1) << 40
_BIG = BIG


# ``pb`` (problem) is the instance as a tuple (dur, dem, cap, pred_ptr, pred_idx,
# succ_ptr, succ_idx), which numba passes as one argument.


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


@njit(cache=True)  # type: ignore[misc]
def _hash(starts, weights):  # type: ignore[no-untyped-def]
    h = np.int64(0)
    for j in range(starts.shape[0]):
        h += starts[j] * weights[j]
    return h


@njit(cache=True)  # type: ignore[misc]
def _select(rng, pop_ms, npop, size):  # type: ignore[no-untyped-def]
    """Tournament selection of ``size`` random individuals."""
    a = rng.integers(0, npop)
    for _ in range(size - 1):
        b = rng.integers(0, npop)
        if pop_ms[b] < pop_ms[a]:
            a = b
    return a


@njit(cache=True)  # type: ignore[misc]
def _select_mate(rng, pop_l, pop_ms, npop, size, m, pool):  # type: ignore[no-untyped-def]
    """The second parent: of ``pool`` tournament winners (``size`` each), the one whose
    list differs from ``m``'s in the most positions (one tournament when ``pool`` <= 1).

    Two parents with nearly the same list give a child that is one of them, decoded
    again; preferring the most different of a few good mates keeps the crossover
    recombining. Distinct lists cost nothing to find: no schedule is decoded."""
    d = _select(rng, pop_ms, npop, size)
    if pool <= 1:
        return d
    # with a pool, that first draw is not a candidate: it only keeps the random stream
    # of the published figures (two integers a child; dropping it changes every result)
    n = pop_l.shape[1]
    far = -1
    for _ in range(pool):
        e = _select(rng, pop_ms, npop, size)
        h = 0
        for k in range(n):
            if pop_l[e, k] != pop_l[m, k]:
                h += 1
        if h > far:
            far = h
            d = e
    return d


@njit(cache=True)  # type: ignore[misc]
def _differ_less(a, b, k):  # type: ignore[no-untyped-def]
    """Whether fewer than ``k`` positions of ``a`` and ``b`` differ (stops counting at ``k``)."""
    diff = 0
    for j in range(a.shape[0]):
        if a[j] != b[j]:
            diff += 1
            if diff >= k:
                return False
    return True


@njit(cache=True)  # type: ignore[misc]
def _max_valid(a, b):  # type: ignore[no-untyped-def]
    m = np.int64(0)
    for x in a:
        if x < _BIG and x > m:
            m = x
    for x in b:
        if x < _BIG and x > m:
            m = x
    return m


@njit(cache=True)  # type: ignore[misc]
def _survive(pop_l, pop_s, pop_ms, ch_l, ch_s, ch_ms, weights, tiebreak, distinct):  # type: ignore[no-untyped-def]
    """(mu + lambda) survival in place: keep the best distinct schedules of
    parents + children (ties favour children, which lets the population
    drift across plateaus); duplicates only fill up if too few are distinct.

    A schedule counts as a duplicate of a better survivor when fewer than
    ``distinct`` activities start at other times in it (``distinct`` <= 1: only
    identical schedules). Near-copies of one good schedule would otherwise fill
    the population, and crossing near-copies decodes the same schedule again."""
    npop, n = pop_l.shape
    nch = ch_l.shape[0]
    # (mu + lambda) survival without duplicate schedules; ties favour children
    tot = npop + nch
    key = np.empty(tot, dtype=np.int64)
    # secondary criterion among equal makespans: a smaller sum of start times
    # (a more compact schedule, more room for the next justification)
    span = np.int64(1)
    if tiebreak:
        span = n * (_max_valid(pop_ms, ch_ms) + 1)
    for i in range(tot):
        if i < npop:
            ms_i, s_i, old = pop_ms[i], pop_s[i], 1
        else:
            ms_i, s_i, old = ch_ms[i - npop], ch_s[i - npop], 0
        if ms_i >= _BIG:
            key[i] = _BIG * _BIG + i
            continue
        sec = np.int64(0)
        if tiebreak:
            for j in range(n):
                sec += s_i[j]
        key[i] = ((ms_i * span + sec) * 2 + old) * tot + i
    srt = np.argsort(key)
    new_l = np.empty((npop, n), dtype=np.int64)
    new_s = np.empty((npop, n), dtype=np.int64)
    new_ms = np.empty(npop, dtype=np.int64)
    hashes = np.empty(npop, dtype=np.int64)
    kept = 0
    dupes = np.empty(tot, dtype=np.int64)
    nd = 0
    for r in range(tot):
        if kept >= npop:
            break
        i = srt[r]
        if i < npop:
            li, si, mi = pop_l[i], pop_s[i], pop_ms[i]
        else:
            li, si, mi = ch_l[i - npop], ch_s[i - npop], ch_ms[i - npop]
        if mi >= _BIG:
            continue
        h = _hash(si, weights)
        dup = False
        for q in range(kept):
            if (hashes[q] == h and new_ms[q] == mi) or (
                    distinct > 1 and _differ_less(new_s[q], si, distinct)):
                dup = True
                break
        if dup:
            dupes[nd] = i
            nd += 1
            continue
        new_l[kept] = li
        new_s[kept] = si
        new_ms[kept] = mi
        hashes[kept] = h
        kept += 1
    # too few distinct individuals: refill with duplicates (still valid)
    r = 0
    while kept < npop and r < nd:
        i = dupes[r]
        r += 1
        if i < npop:
            new_l[kept], new_s[kept], new_ms[kept] = pop_l[i], pop_s[i], pop_ms[i]
        else:
            new_l[kept], new_s[kept], new_ms[kept] = ch_l[i - npop], ch_s[i - npop], ch_ms[i - npop]
        kept += 1
    for q in range(kept):
        pop_l[q] = new_l[q]
        pop_s[q] = new_s[q]
        pop_ms[q] = new_ms[q]
    for q in range(kept, npop):
        pop_ms[q] = _BIG


@njit(cache=True)  # type: ignore[misc]
def _bp_decode(pb, lst, use_parallel, avail, out_s, out_l):  # type: ignore[no-untyped-def]
    """Decode ``lst`` in the world of ``pb`` and write the list of the
    opposite world: activities by decreasing finish time (ties: later in
    ``lst`` first). Decoding that list in the opposite world justifies the
    schedule, so every child is a justification pass. Returns the makespan."""
    dur, dem, cap, pred_ptr, pred_idx, _succ_ptr, _succ_idx = pb
    if use_parallel:
        ms = parallel_kernel(lst, dur, dem, pred_ptr, pred_idx, avail, out_s)
    else:
        ms = serial_kernel(lst, dur, dem, pred_ptr, pred_idx, avail, out_s)
    reset_profile(avail, cap, ms)
    sort_by_finish(out_s, lst, dur, ms, out_l)
    return ms


@njit(cache=True)  # type: ignore[misc]
def _bp_mirror(pb1, avail, budget, used, pop_l, pop_s, pop_ms, first):  # type: ignore[no-untyped-def]
    """Right-justify slots ``first..`` of world 0 into world 1, one schedule
    each within ``budget``. Returns the schedules used, ``used`` included."""
    for i in range(first, pop_l.shape[1]):
        if used >= budget or pop_ms[0, i] >= _BIG:
            pop_ms[1, i] = _BIG
            continue
        pop_ms[1, i] = _bp_decode(pb1, pop_l[0, i], False, avail, pop_s[1, i], pop_l[1, i])
        used += 1
    return used


@njit(cache=True)  # type: ignore[misc]
def _bp_init(rng, pb0, pb1, prio, alpha, avail, budget, pop_l, pop_s, pop_ms, first):  # type: ignore[no-untyped-def]
    """Sample lists into world 0 (alternating serial/parallel SGS), then
    right-justify each into world 1. Fills slots ``first..`` of both."""
    npop = pop_l.shape[1]
    n = pop_l.shape[2]
    lst = np.empty(n, dtype=np.int64)
    used = 0
    for i in range(first, npop):
        if used >= budget:
            pop_ms[0, i] = _BIG
            continue
        _rbrs_list(rng, pb0, prio, alpha, lst)
        pop_ms[0, i] = _bp_decode(pb0, lst, i % 2 == 1, avail, pop_s[0, i], pop_l[0, i])
        used += 1
    return _bp_mirror(pb1, avail, budget, used, pop_l, pop_s, pop_ms, first)


@njit(cache=True)  # type: ignore[misc]
def _bp_generation(  # type: ignore[no-untyped-def]
    rng,
    pb_tgt,
    avail,
    budget,
    src_l,
    src_s,
    src_ms,
    tgt_l,
    tgt_s,
    tgt_ms,
    weights,
    mut_rate,
    mut_moves,
    peak_rate,
    peak_min,
    peak_max,
    tour_f,
    tour_m,
    tiebreak,
    par_rate,
    elite_rate,
    xover,
    polish,
    child_frac,
    sgs_stats,
    mate_pool,
    distinct,
    polish_early,
    ex_l,
    ex_s,
    ex_ms,
    src,
):
    """Children of the source population, decoded in the target world (one
    schedule each), compete with the target population.

    ``sgs_stats`` counts, per decoder and per crossover, the children tried and
    those that beat the target population's median: ``[serial tried, serial won,
    parallel tried, parallel won, other crossover tried, won, peak crossover
    tried, won]`` (what the adaptive mixes learn from).

    ``ex_l``/``ex_s``/``ex_ms`` (indexed by world, ``src`` the source's index) hold the
    schedules recycled from polishing: each backward pass of a polished child is a
    schedule of the source world, already paid for, so the best of them are kept in
    ``ex_*[src]`` and compete in that world's next survival, and those of the previous
    generation (``ex_*[1 - src]``) compete in this one beside the children."""
    npop, n = src_l.shape
    nsrc = 0
    while nsrc < npop and src_ms[nsrc] < _BIG:
        nsrc += 1
    if nsrc == 0:
        return 0
    nch = max(1, min(int(npop * child_frac + 0.5), budget))
    nex = ex_ms.shape[1]
    ch_l = np.empty((nch + nex, n), dtype=np.int64)
    ch_s = np.empty((nch + nex, n), dtype=np.int64)
    ch_ms = np.full(nch + nex, _BIG, dtype=np.int64)
    out_l, out_s, out_ms = ex_l[src], ex_s[src], ex_ms[src]
    out_ms[:] = _BIG
    child = np.empty(n, dtype=np.int64)
    pb_src = (pb_tgt[0], pb_tgt[1], pb_tgt[2], pb_tgt[5], pb_tgt[6], pb_tgt[3], pb_tgt[4])
    tmp_s = np.empty(n, dtype=np.int64)
    tmp_l = np.empty(n, dtype=np.int64)
    new_s = np.empty(n, dtype=np.int64)
    new_l = np.empty(n, dtype=np.int64)
    used = 0
    for c in range(nch):
        if used >= budget:
            break
        m = _select(rng, src_ms, nsrc, tour_f)
        d = _select_mate(rng, src_l, src_ms, nsrc, tour_m, m, mate_pool)
        op = 0
        if rng.random() < elite_rate:
            # intensify: a mutant of the best individual (population is sorted)
            for k in range(n):
                child[k] = src_l[0, k]
            _shift_mutation(rng, pb_tgt, child)
        elif rng.random() < peak_rate:
            op = 1
            _peak_crossover(rng, pb_tgt, src_s[m], src_ms[m], src_s[d], src_ms[d], peak_min, peak_max, child)
        elif xover == 1:
            _crossover_uniform(rng, src_l[m], src_l[d], child)
        elif xover == 2:
            _crossover_keys(rng, pb_tgt, src_l[m], src_l[d], child)
        elif xover == 3:
            _crossover_block(rng, pb_tgt, src_l[m], src_l[d], child)
        else:
            _crossover(rng, src_l[m], src_l[d], child)
        for _ in range(mut_moves):
            if rng.random() < mut_rate:
                _shift_mutation(rng, pb_tgt, child)
        par = rng.random() < par_rate
        ch_ms[c] = _bp_decode(pb_tgt, child, par, avail, ch_s[c], ch_l[c])
        used += 1
        sgs_stats[2 * par] += 1.0
        sgs_stats[4 + 2 * op] += 1.0
        if ch_ms[c] < tgt_ms[npop // 2]:
            sgs_stats[2 * par + 1] += 1.0
            sgs_stats[5 + 2 * op] += 1.0
        if polish > -1000 and ch_ms[c] <= tgt_ms[0] + polish:
            # promising child: justify it back and forth while that helps
            # (Tormos & Lova: spend extra passes only where they pay)
            while used + 2 <= budget:
                back = _bp_decode(pb_src, ch_l[c], False, avail, tmp_s, tmp_l)
                _keep_better(out_l, out_s, out_ms, tmp_l, tmp_s, back)
                if polish_early and back >= ch_ms[c]:
                    used += 1
                    break
                ms2 = _bp_decode(pb_tgt, tmp_l, False, avail, new_s, new_l)
                used += 2
                if ms2 >= ch_ms[c]:
                    break
                ch_ms[c] = ms2
                ch_s[c] = new_s
                ch_l[c] = new_l
    tgt = 1 - src
    for q in range(nex):
        ch_l[nch + q], ch_s[nch + q], ch_ms[nch + q] = ex_l[tgt, q], ex_s[tgt, q], ex_ms[tgt, q]
        ex_ms[tgt, q] = _BIG
    _survive(tgt_l, tgt_s, tgt_ms, ch_l, ch_s, ch_ms, weights, tiebreak, distinct)
    return used


@njit(cache=True)  # type: ignore[misc]
def _keep_better(keep_l, keep_s, keep_ms, lst, starts, ms):  # type: ignore[no-untyped-def]
    """Keep a schedule in a bounded buffer: in a free slot (makespan ``BIG``), else in
    place of the worst kept one if it is shorter."""
    if keep_ms.shape[0] == 0:
        return
    w = 0
    for q in range(1, keep_ms.shape[0]):
        if keep_ms[q] > keep_ms[w]:
            w = q
    if ms < keep_ms[w]:
        keep_ms[w] = ms
        keep_s[w] = starts
        keep_l[w] = lst
