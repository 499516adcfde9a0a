"""Numba kernels of the genetic search (see :mod:`evolve.problems.rcpsp.search`).

Selection, survival and the bi-population generation step (the lists
themselves are built by :mod:`evolve.problems.rcpsp.lists`), all on flat
arrays so that a whole generation runs without returning to Python. ``pb``
(problem) is the instance as the tuple ``(dur, dem, cap, pred_ptr, pred_idx,
succ_ptr, succ_idx)``; swapping the predecessor and successor arrays gives
the reversed project, in which the serial SGS right-justifies. Randomness
comes only from the ``numpy.random.Generator`` passed in.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from evolve.problems.rcpsp.decode import (
    delay_kernel,
    parallel_kernel,
    reset_profile,
    serial_kernel,
    sort_by_finish,
)
from evolve.problems.rcpsp.lists import _crossover, _crossover_block, _rbrs_list, _shift_mutation

#: Makespan of an empty slot: larger than any real schedule.
BIG = np.int64(1) << 40
_BIG = BIG


# ``pb`` (problem) is the instance as a tuple (dur, dem, cap, pred_ptr, pred_idx,
# succ_ptr, succ_idx), which numba passes as one argument.


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
    if pool <= 1:
        return _select(rng, pop_ms, npop, size)
    d = 0
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
def _bp_decode(pb, lst, use_parallel, avail, out_s, out_l, delay=-1):  # type: ignore[no-untyped-def]
    """Decode ``lst`` in the world of ``pb`` and write the list of the
    opposite world: activities by decreasing finish time (ties: later in
    ``lst`` first). Decoding that list in the opposite world justifies the
    schedule, so every child is a justification pass. Returns the makespan.
    ``use_parallel`` with ``delay`` >= 0: the delay-bounded SGS instead of the parallel one."""
    dur, dem, cap, pred_ptr, pred_idx, succ_ptr, succ_idx = pb
    if use_parallel and delay >= 0:
        ms = delay_kernel(lst, dur, dem, pred_ptr, succ_ptr, succ_idx, avail, out_s, delay)
    elif use_parallel:
        ms = parallel_kernel(lst, dur, dem, pred_ptr, succ_ptr, succ_idx, avail, out_s)
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


@njit(cache=True, nogil=True)  # type: ignore[misc]
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


class GenerationParams(NamedTuple):
    """The settings of one generation step, as one typed record (numba passes a named
    tuple as one argument): :meth:`BiPopulationGA.step` builds it from
    :class:`~evolve.problems.rcpsp.search.GaParams` and the current adaptive share."""

    mut_rate: float  #: per-move probability of each of the ``mut_moves`` shift moves
    mut_moves: int
    tour_father: int  #: tournament sizes of the two parents
    tour_mother: int
    mate_pool: int  #: the mother is the most different of this many tournament winners
    crossover: int  #: a :class:`~evolve.problems.rcpsp.search.Crossover` value
    par_rate: float  #: share of children decoded by the parallel SGS
    polish: int  #: extra FBI on children within this of the best (``POLISH_OFF``: none)
    child_frac: float  #: children per generation, as a fraction of the population
    tiebreak: bool  #: among equal makespans prefer the smaller sum of starts
    distinct: int  #: a survivor differs from every better one in at least this many starts
    par_delay: int  #: the 'parallel' children's delay bound (< 0: the parallel SGS itself)
    ser_delay: int  #: the 'serial' children's delay bound (< 0: the serial SGS itself)


#: ``GenerationParams.polish`` that turns polishing off.
POLISH_OFF = -1000
#: ``GenerationParams.crossover`` values (the names are
#: :class:`~evolve.problems.rcpsp.search.Crossover`'s).
TWO_POINT = 0
BLOCK = 1


@njit(cache=True, nogil=True)  # type: ignore[misc]
def _bp_generation(rng, pb_tgt, avail, budget, src_pop, tgt_pop, spare, src, weights, sgs_stats, kp):  # type: ignore[no-untyped-def]
    """Children of the source population, decoded in the target world (one
    schedule each), compete with the target population.

    ``src_pop`` and ``tgt_pop`` are ``(lists, starts, makespans)`` of the two worlds, ``kp``
    the :class:`GenerationParams`. ``sgs_stats`` counts, per decoder, the children tried and
    those that beat the target population's median: ``[serial tried, serial won, parallel
    tried, parallel won]`` (what the adaptive serial/parallel mix learns from).

    ``spare`` = ``(ex_l, ex_s, ex_ms)`` (indexed by world, ``src`` the source's index) holds the
    schedules recycled from polishing: each backward pass of a polished child is a
    schedule of the source world, already paid for, so the best of them are kept in
    ``ex_*[src]`` and compete in that world's next survival, and those of the previous
    generation (``ex_*[1 - src]``) compete in this one beside the children."""
    src_l, _src_s, src_ms = src_pop
    tgt_l, tgt_s, tgt_ms = tgt_pop
    ex_l, ex_s, ex_ms = spare
    npop, n = src_l.shape
    nsrc = 0
    while nsrc < npop and src_ms[nsrc] < _BIG:
        nsrc += 1
    if nsrc == 0:
        return 0
    nch = max(1, min(int(npop * kp.child_frac + 0.5), budget))
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
        m = _select(rng, src_ms, nsrc, kp.tour_father)
        d = _select_mate(rng, src_l, src_ms, nsrc, kp.tour_mother, m, kp.mate_pool)
        if kp.crossover == BLOCK:
            _crossover_block(rng, pb_tgt, src_l[m], src_l[d], child)
        else:
            _crossover(rng, src_l[m], src_l[d], child)
        for _ in range(kp.mut_moves):
            if rng.random() < kp.mut_rate:
                _shift_mutation(rng, pb_tgt, child)
        par = rng.random() < kp.par_rate
        dl = kp.par_delay if par else kp.ser_delay
        ch_ms[c] = _bp_decode(pb_tgt, child, par or dl >= 0, avail, ch_s[c], ch_l[c], dl)
        used += 1
        sgs_stats[2 * par] += 1.0
        if ch_ms[c] < tgt_ms[npop // 2]:
            sgs_stats[2 * par + 1] += 1.0
        if kp.polish > POLISH_OFF and ch_ms[c] <= tgt_ms[0] + kp.polish:
            # promising child: justify it back and forth while that helps
            # (Tormos & Lova: spend extra passes only where they pay), and stop as soon as
            # a backward pass does not shorten it
            while used + 2 <= budget:
                back = _bp_decode(pb_src, ch_l[c], False, avail, tmp_s, tmp_l)
                _keep_better(out_l, out_s, out_ms, tmp_l, tmp_s, back)
                if back >= ch_ms[c]:
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
    _survive(tgt_l, tgt_s, tgt_ms, ch_l, ch_s, ch_ms, weights, kp.tiebreak, kp.distinct)
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
