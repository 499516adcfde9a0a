"""Genetic search over activity lists with forward-backward improvement.

The algorithm follows the best published activity-list GAs (Hartmann 1998;
Valls, Ballestin & Quintanilla 2005/2008; Debels & Vanhoucke 2007):

* initial population by regret-biased random sampling on the latest-finish-
  time (LFT) priority, decoded alternately by the serial and the parallel
  SGS, because the two schemes reach different parts of the search space;
* every decoded schedule is double-justified (FBI) and the individual keeps
  the list sorted by the justified schedule's start times, so that crossover
  recombines schedules, not arbitrary permutations;
* precedence-preserving two-point crossover, shift mutation that keeps the
  list precedence-feasible, duplicate-free (mu + lambda) replacement, and a
  partial restart around the best individual when the population stagnates.

Schedules are counted as the literature does: every SGS run and every
justification pass is one schedule, and the search never exceeds the budget.
All randomness comes from one :class:`numpy.random.Generator` seeded with
``SeedSequence(seed)`` and passed into the numba kernels, so a seed fixes the
result.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from numba import njit

from evolve.rcpsp.decode import (
    new_profile,
    parallel_kernel,
    reset_profile,
    reverse_pass,
    serial_kernel,
    sort_by_start,
)
from evolve.rcpsp.instance import IntArray, RcpspInstance, critical_path_bound, latest_finishes

_BIG = np.int64(1) << 40


@dataclass(frozen=True)
class GaParams:
    """Tunable GA settings; the defaults are what the PSPLIB runs use."""

    pop_size: int | None = None  #: None: chosen from the schedule budget
    mutation_rate: float = 0.1  #: per-child probability of each shift move
    mutation_moves: int = 2
    restart_after: int = 8  #: generations without improvement before a partial restart
    keep_on_restart: float = 0.25  #: fraction of the population kept at a restart
    rbrs_alpha: float = 2.0  #: regret exponent of the biased sampling
    child_pass: int = 2  #: first pass for children, see ``_evaluate``
    pop_per_schedules: float = 30.0  #: population = budget / this, within 10..100
    peak_rate: float = 0.5  #: share of children made by peak crossover (bpga)
    peak_min: float = 0.1  #: peak window length range, as fractions of the makespan
    peak_max: float = 0.5
    algorithm: str = "bpga"  #: "bpga" (bi-population) or "ga" (GA with FBI on every child)


@dataclass(frozen=True)
class RcpspResult:
    """Best schedule found, with the effort spent on it."""

    makespan: int
    starts: IntArray
    activity_list: IntArray
    schedules_used: int
    seconds: float

    @property
    def finishes(self) -> IntArray:
        """Not stored: depends on durations; see :func:`finishes`."""
        raise AttributeError("use evolve.rcpsp.search.finishes(instance, result)")


def finishes(inst: RcpspInstance, result: RcpspResult) -> IntArray:
    """Finish time of every activity of a result."""
    return result.starts + inst.durations  # type: ignore[no-any-return]


# --------------------------------------------------------------------------
# numba kernels
# --------------------------------------------------------------------------

# ``I`` is the instance as a tuple (dur, dem, cap, pred_ptr, pred_idx,
# succ_ptr, succ_idx), which numba passes as one argument.


@njit(cache=True)  # type: ignore[misc]
def _rbrs_list(rng, I, prio, alpha, out):  # type: ignore[no-untyped-def]
    """Regret-biased random sampling: build a list one eligible activity at a
    time, with probability growing with (max priority - priority + 1)^alpha
    (smaller ``prio`` = more urgent)."""
    dur, dem, cap, pred_ptr, pred_idx, succ_ptr, succ_idx = I
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


@njit(cache=True)  # type: ignore[misc]
def _evaluate(I, lst, first_pass, avail, budget, out_starts, out_list):  # type: ignore[no-untyped-def]
    """Decode ``lst`` and justify it, spending at most ``budget`` schedules.

    ``first_pass``: 0 = forward serial SGS then double justification (3
    schedules); 1 = the same with the parallel SGS; 2 = backward serial SGS
    on the reversed list then left-justification (2 schedules: the list
    already encodes a left-justified schedule, so the first forward decode
    mostly repeats it). Writes the final schedule and its start-sorted list;
    returns (makespan, schedules used).
    """
    dur, dem, cap, pred_ptr, pred_idx, succ_ptr, succ_idx = I
    n = dur.shape[0]
    if budget <= 0:
        return _BIG, 0
    used = 0
    mid_s = np.empty(n, dtype=np.int64)
    mid_o = np.empty(n, dtype=np.int64)
    if first_pass == 2:
        for k in range(n):
            mid_o[k] = lst[n - 1 - k]
        ms = serial_kernel(mid_o, dur, dem, succ_ptr, succ_idx, avail, mid_s)
        reset_profile(avail, cap, ms)
        used = 1
    else:
        s0 = np.empty(n, dtype=np.int64)
        if first_pass == 1:
            ms = parallel_kernel(lst, dur, dem, pred_ptr, pred_idx, avail, s0)
        else:
            ms = serial_kernel(lst, dur, dem, pred_ptr, pred_idx, avail, s0)
        reset_profile(avail, cap, ms)
        if budget == 1:
            for j in range(n):
                out_starts[j] = s0[j]
            sort_by_start(s0, lst, out_list)
            return ms, 1
        ms = reverse_pass(s0, lst, dur, dem, cap, succ_ptr, succ_idx, avail, mid_o, mid_s)
        used = 2
    if used >= budget:
        # stop right-justified: mirror back to real time
        rev = mid_o[::-1].copy()
        for j in range(n):
            out_starts[j] = ms - mid_s[j] - dur[j]
        sort_by_start(out_starts, rev, out_list)
        return ms, used
    fin_o = np.empty(n, dtype=np.int64)
    ms = reverse_pass(mid_s, mid_o, dur, dem, cap, pred_ptr, pred_idx, avail, fin_o, out_starts)
    sort_by_start(out_starts, fin_o, out_list)
    return ms, used + 1


@njit(cache=True)  # type: ignore[misc]
def _crossover(rng, mom, dad, out):  # type: ignore[no-untyped-def]
    """Hartmann's two-point crossover: mom's head, dad's order for the middle,
    mom's order for the tail. Keeps precedence feasibility of both parents."""
    n = mom.shape[0]
    q1 = rng.integers(0, n + 1)
    q2 = rng.integers(0, n + 1)
    if q1 > q2:
        q1, q2 = q2, q1
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
def _keys_to_list(I, key, out):  # type: ignore[no-untyped-def]
    """Precedence-feasible list from priority keys: repeatedly take the
    eligible activity with the smallest key (ties: smallest index)."""
    dur, dem, cap, pred_ptr, pred_idx, succ_ptr, succ_idx = I
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
        j = elig[b]
        elig[b] = elig[ne - 1]
        ne -= 1
        out[k] = j
        for q in range(succ_ptr[j], succ_ptr[j + 1]):
            v = succ_idx[q]
            left[v] -= 1
            if left[v] == 0:
                elig[ne] = v
                ne += 1


@njit(cache=True)  # type: ignore[misc]
def _peak_crossover(rng, I, f_s, f_ms, m_s, m_ms, min_frac, max_frac, out):  # type: ignore[no-untyped-def]
    """Peak crossover (after Valls et al. 2008 and Debels & Vanhoucke 2007).

    Parents are schedules of the other world; keys are their mirrored start
    times, i.e. start times in the world of ``I`` where the child is decoded.
    The child inherits the father's order for the activities inside the time
    window of highest resource utilisation (the part of a schedule that is
    hardest to get right and that the father did well), and the mother's
    order for the rest, placed before or after the window as in the mother.
    """
    dur, dem, cap, pred_ptr, pred_idx, succ_ptr, succ_idx = I
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
    if L > f_ms:
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
    _keys_to_list(I, key, out)


@njit(cache=True)  # type: ignore[misc]
def _shift_mutation(rng, I, lst):  # type: ignore[no-untyped-def]
    """Move one random activity to a random position between its last
    predecessor and its first successor in the list."""
    dur, dem, cap, pred_ptr, pred_idx, succ_ptr, succ_idx = I
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
def _init_population(rng, I, prio, alpha, avail, budget, pop_l, pop_s, pop_ms, first):  # type: ignore[no-untyped-def]
    """Fill ``pop[first:]`` by biased sampling; alternate serial/parallel SGS.
    Returns schedules used; unfilled slots get makespan _BIG."""
    n = I[0].shape[0]
    used = 0
    lst = np.empty(n, dtype=np.int64)
    for i in range(first, pop_l.shape[0]):
        _rbrs_list(rng, I, prio, alpha, lst)
        ms, u = _evaluate(I, lst, i % 2, avail, budget - used, pop_s[i], pop_l[i])
        used += u
        pop_ms[i] = ms
    return used


@njit(cache=True)  # type: ignore[misc]
def _select(rng, pop_ms, npop):  # type: ignore[no-untyped-def]
    a = rng.integers(0, npop)
    b = rng.integers(0, npop)
    return a if pop_ms[a] <= pop_ms[b] else b


@njit(cache=True)  # type: ignore[misc]
def _survive(pop_l, pop_s, pop_ms, ch_l, ch_s, ch_ms, weights):  # type: ignore[no-untyped-def]
    """(mu + lambda) survival in place: keep the best distinct schedules of
    parents + children (ties favour children, which lets the population
    drift across plateaus); duplicates only fill up if too few are distinct."""
    npop, n = pop_l.shape
    nch = ch_l.shape[0]
    # (mu + lambda) survival without duplicate schedules; ties favour children
    tot = npop + nch
    key = np.empty(tot, dtype=np.int64)
    for i in range(npop):
        key[i] = pop_ms[i] * 4 * tot + 2 * tot + i
    for i in range(nch):
        key[npop + i] = ch_ms[i] * 4 * tot + i
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
            if hashes[q] == h and new_ms[q] == mi:
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
def _generation(rng, I, avail, budget, pop_l, pop_s, pop_ms, weights, mut_rate, mut_moves, child_pass):  # type: ignore[no-untyped-def]
    """One generation: as many children as the population, then keep the best
    distinct individuals of parents + children. Returns schedules used."""
    npop, n = pop_l.shape
    ch_l = np.empty((npop, n), dtype=np.int64)
    ch_s = np.empty((npop, n), dtype=np.int64)
    ch_ms = np.full(npop, _BIG, dtype=np.int64)
    child = np.empty(n, dtype=np.int64)
    used = 0
    for c in range(npop):
        if used >= budget:
            break
        m = _select(rng, pop_ms, npop)
        d = _select(rng, pop_ms, npop)
        _crossover(rng, pop_l[m], pop_l[d], child)
        for _ in range(mut_moves):
            if rng.random() < mut_rate:
                _shift_mutation(rng, I, child)
        ms, u = _evaluate(I, child, child_pass, avail, budget - used, ch_s[c], ch_l[c])
        ch_ms[c] = ms
        used += u
    _survive(pop_l, pop_s, pop_ms, ch_l, ch_s, ch_ms, weights)
    return used


@njit(cache=True)  # type: ignore[misc]
def _bp_decode(I, lst, use_parallel, avail, out_s, out_l):  # type: ignore[no-untyped-def]
    """Decode ``lst`` in the world of ``I`` and write the list of the
    opposite world: activities by decreasing finish time (ties: later in
    ``lst`` first). Decoding that list in the opposite world justifies the
    schedule, so every child is a justification pass. Returns the makespan."""
    dur, dem, cap, pred_ptr, pred_idx, succ_ptr, succ_idx = I
    n = dur.shape[0]
    if use_parallel:
        ms = parallel_kernel(lst, dur, dem, pred_ptr, pred_idx, avail, out_s)
    else:
        ms = serial_kernel(lst, dur, dem, pred_ptr, pred_idx, avail, out_s)
    reset_profile(avail, cap, ms)
    key = np.empty(n, dtype=np.int64)
    for k in range(n):
        j = lst[k]
        key[j] = (ms - out_s[j] - dur[j]) * n + (n - 1 - k)
    srt = np.argsort(key)
    for k in range(n):
        out_l[k] = srt[k]
    return ms


@njit(cache=True)  # type: ignore[misc]
def _bp_init(rng, I0, I1, prio, alpha, avail, budget, pop_l, pop_s, pop_ms, first):  # type: ignore[no-untyped-def]
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
        _rbrs_list(rng, I0, prio, alpha, lst)
        pop_ms[0, i] = _bp_decode(I0, lst, i % 2 == 1, avail, pop_s[0, i], pop_l[0, i])
        used += 1
    for i in range(first, npop):
        if used >= budget or pop_ms[0, i] >= _BIG:
            pop_ms[1, i] = _BIG
            continue
        pop_ms[1, i] = _bp_decode(I1, pop_l[0, i], False, avail, pop_s[1, i], pop_l[1, i])
        used += 1
    return used


@njit(cache=True)  # type: ignore[misc]
def _bp_generation(rng, I_tgt, avail, budget, src_l, src_s, src_ms, tgt_l, tgt_s, tgt_ms, weights, mut_rate, mut_moves, peak_rate, peak_min, peak_max):  # type: ignore[no-untyped-def]
    """Children of the source population, decoded in the target world (one
    schedule each), compete with the target population."""
    npop, n = src_l.shape
    nsrc = 0
    while nsrc < npop and src_ms[nsrc] < _BIG:
        nsrc += 1
    if nsrc == 0:
        return 0
    nch = min(npop, budget)
    ch_l = np.empty((nch, n), dtype=np.int64)
    ch_s = np.empty((nch, n), dtype=np.int64)
    ch_ms = np.empty(nch, dtype=np.int64)
    child = np.empty(n, dtype=np.int64)
    for c in range(nch):
        m = _select(rng, src_ms, nsrc)
        d = _select(rng, src_ms, nsrc)
        if rng.random() < peak_rate:
            _peak_crossover(rng, I_tgt, src_s[m], src_ms[m], src_s[d], src_ms[d],
                            peak_min, peak_max, child)
        else:
            _crossover(rng, src_l[m], src_l[d], child)
        for _ in range(mut_moves):
            if rng.random() < mut_rate:
                _shift_mutation(rng, I_tgt, child)
        ch_ms[c] = _bp_decode(I_tgt, child, False, avail, ch_s[c], ch_l[c])
    _survive(tgt_l, tgt_s, tgt_ms, ch_l, ch_s, ch_ms, weights)
    return nch


# --------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------


def default_pop_size(schedules: int | None, per: float = 30.0) -> int:
    """Population size for a schedule budget (budget / ``per``, within 10..100).

    Small budgets need a small population to leave room for generations;
    large ones gain from diversity.
    """
    if schedules is None:
        return 60
    return int(min(100, max(10, round(schedules / per))))


def solve(
    inst: RcpspInstance,
    *,
    schedules: int | None = None,
    seconds: float | None = None,
    seed: int = 0,
    lower_bound: int | None = None,
    params: GaParams | None = None,
) -> RcpspResult:
    """Minimise the makespan of ``inst`` within a budget.

    ``schedules`` caps generated schedules (SGS runs and justification
    passes), ``seconds`` caps wall time; at least one must be given and the
    search stops at whichever runs out first, or as soon as the makespan
    reaches ``lower_bound`` (default: the critical-path bound), since nothing
    can beat a lower bound.
    """
    if schedules is None and seconds is None:
        raise ValueError("give a schedule budget, a time budget, or both")
    if schedules is not None and schedules < 1:
        raise ValueError("schedules must be at least 1")
    p = params or GaParams()
    t0 = time.perf_counter()
    deadline = t0 + seconds if seconds is not None else None
    # one schedule is kept for the final decode that makes list and schedule agree
    budget = schedules - 1 if schedules is not None else 1 << 62
    lb = critical_path_bound(inst) if lower_bound is None else lower_bound

    rng = np.random.default_rng(np.random.SeedSequence(seed))
    I = (
        inst.durations, inst.demands, inst.capacities,
        inst.pred_ptr, inst.pred_idx, inst.succ_ptr, inst.succ_idx,
    )
    n = inst.n
    prio = latest_finishes(inst).astype(np.float64)
    avail = new_profile(inst.horizon, inst.capacities)
    npop = p.pop_size or default_pop_size(schedules, p.pop_per_schedules)
    weights = rng.integers(1, 1 << 20, size=n, dtype=np.int64)
    if budget == 0:
        lst = np.empty(n, dtype=np.int64)
        _rbrs_list(rng, I, prio, p.rbrs_alpha, lst)
        st = np.zeros(n, dtype=np.int64)
        return _finish(I, avail, st, lst, 0, t0)
    if p.algorithm == "bpga":
        return _solve_bpga(inst, I, prio, avail, npop, weights, rng, budget, deadline, lb, p, t0)
    pop_l = np.empty((npop, n), dtype=np.int64)
    pop_s = np.empty((npop, n), dtype=np.int64)
    pop_ms = np.full(npop, _BIG, dtype=np.int64)
    used = int(_init_population(rng, I, prio, p.rbrs_alpha, avail, budget, pop_l, pop_s, pop_ms, 0))
    best_ms = int(pop_ms.min())
    b = int(pop_ms.argmin())
    best_s, best_l = pop_s[b].copy(), pop_l[b].copy()
    stale = 0

    def out_of_budget() -> bool:
        if used >= budget or best_ms <= lb:
            return True
        return deadline is not None and time.perf_counter() >= deadline

    while not out_of_budget():
        order = np.argsort(pop_ms, kind="stable")
        pop_l, pop_s, pop_ms = pop_l[order], pop_s[order], pop_ms[order]
        if stale >= p.restart_after:
            keep = max(1, int(npop * p.keep_on_restart))
            used += int(
                _init_population(rng, I, prio, p.rbrs_alpha, avail, budget - used,
                                 pop_l, pop_s, pop_ms, keep)
            )
            stale = 0
        else:
            used += int(
                _generation(rng, I, avail, budget - used, pop_l, pop_s, pop_ms, weights,
                            p.mutation_rate, p.mutation_moves, p.child_pass)
            )
        b = int(pop_ms.argmin())
        if pop_ms[b] < best_ms:
            best_ms = int(pop_ms[b])
            best_s, best_l = pop_s[b].copy(), pop_l[b].copy()
            stale = 0
        else:
            stale += 1
    return _finish(I, avail, best_s, best_l, used, t0)


def _solve_bpga(inst, I, prio, avail, npop, weights, rng, budget, deadline, lb, p, t0):  # type: ignore[no-untyped-def]
    """Bi-population GA (Debels & Vanhoucke): world 0 holds left-justified
    schedules, world 1 right-justified ones (stored mirrored: the reversed
    project's left-justified schedules); children of one world are decoded
    in the other, so each child costs one schedule and is a justification."""
    dur, dem, cap, pp, pi, sp, si = I
    I1 = (dur, dem, cap, sp, si, pp, pi)
    n = inst.n
    pop_l = np.empty((2, npop, n), dtype=np.int64)
    pop_s = np.empty((2, npop, n), dtype=np.int64)
    pop_ms = np.full((2, npop), _BIG, dtype=np.int64)
    used = int(_bp_init(rng, I, I1, prio, p.rbrs_alpha, avail, budget, pop_l, pop_s, pop_ms, 0))

    def best() -> tuple[int, int, int]:
        w = int(pop_ms.min(axis=1).argmin())
        b = int(pop_ms[w].argmin())
        return int(pop_ms[w, b]), w, b

    def snapshot(w: int, b: int) -> tuple[IntArray, IntArray]:
        ms = int(pop_ms[w, b])
        lst = np.empty(n, dtype=np.int64)
        if w == 0:
            st = pop_s[0, b].copy()
            sort_by_start(st, pop_l[0, b][::-1].copy(), lst)
        else:
            st = ms - pop_s[1, b] - inst.durations
            sort_by_start(st, pop_l[1, b].copy(), lst)
        return st, lst

    best_ms, w, b = best()
    best_s, best_l = snapshot(w, b)
    stale = 0
    src = 1
    while used < budget and best_ms > lb and (deadline is None or time.perf_counter() < deadline):
        for q in range(2):
            order = np.argsort(pop_ms[q], kind="stable")
            pop_l[q], pop_s[q], pop_ms[q] = pop_l[q][order], pop_s[q][order], pop_ms[q][order]
        tgt = 1 - src
        if stale >= p.restart_after:
            keep = max(1, int(npop * p.keep_on_restart))
            used += int(_bp_init(rng, I, I1, prio, p.rbrs_alpha, avail, budget - used,
                                 pop_l, pop_s, pop_ms, keep))
            stale = 0
        else:
            used += int(_bp_generation(rng, I if tgt == 0 else I1, avail, budget - used,
                                       pop_l[src], pop_s[src], pop_ms[src],
                                       pop_l[tgt], pop_s[tgt], pop_ms[tgt],
                                       weights, p.mutation_rate, p.mutation_moves,
                                       p.peak_rate, p.peak_min, p.peak_max))
            src = tgt
        ms, w, b = best()
        if ms < best_ms:
            best_ms = ms
            best_s, best_l = snapshot(w, b)
            stale = 0
        else:
            stale += 1
    return _finish(I, avail, best_s, best_l, used, t0)


def _finish(I, avail, starts, order, used, t0):  # type: ignore[no-untyped-def]
    """Decode the best schedule's start-sorted list once more (one counted
    schedule): the result starts no activity later, and the reported list
    decodes exactly to the reported schedule."""
    dur, dem, cap, pred_ptr, pred_idx, _, _ = I
    lst = np.empty(dur.shape[0], dtype=np.int64)
    sort_by_start(starts, order, lst)
    out = np.empty(dur.shape[0], dtype=np.int64)
    ms = int(serial_kernel(lst, dur, dem, pred_ptr, pred_idx, avail, out))
    reset_profile(avail, cap, ms)
    return RcpspResult(ms, out, lst, used + 1, time.perf_counter() - t0)
