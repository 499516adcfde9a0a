"""Schedule generation schemes (SGS) and forward-backward improvement.

The decoder turns an activity list (a precedence-feasible permutation) into
start times and is the inner loop of every RCPSP heuristic, so it is written
as numba kernels over the flat arrays of :class:`RcpspInstance`. Resources are
an integer time-indexed profile ``avail[t, r]`` (PSPLIB durations are
integers), which makes the capacity check a short scan instead of an event
list. The kernels work on a persistent profile and only restore the rows they
touched, so decoding one schedule costs time proportional to its makespan,
not to the horizon.

``serial_sgs_python`` is the same serial SGS in plain Python; it is the
readable reference the kernels are tested against and the baseline of the
throughput benchmark.

Forward-backward improvement (FBI, "double justification", Valls, Ballestin
& Quintanilla 2005) is two *reverse passes*: a reverse pass sorts the
activities by decreasing finish time and runs the serial SGS on the reversed
precedence graph, i.e. it right-justifies the schedule. Doing it twice
right-justifies then left-justifies, never lengthening the schedule. Each
pass is one generated schedule for the literature's schedule count.
"""

from __future__ import annotations

import functools

import numpy as np
import numpy.typing as npt
from numba import njit

from evolve.problems.rcpsp.instance import IntArray, RcpspInstance

#: Schedules that one call of :func:`forward_backward_improvement` generates.
FBI_SCHEDULES = 2


# --------------------------------------------------------------------------
# numba kernels (arrays only; the instance wrappers are further below)
# --------------------------------------------------------------------------


@njit(cache=True)  # type: ignore[misc]
def new_profile(horizon: int, cap: IntArray) -> IntArray:
    """Free-capacity profile ``avail[t, r] = cap[r]`` for ``t < horizon + 1``."""
    avail = np.empty((horizon + 1, cap.shape[0]), dtype=np.int64)
    for t in range(horizon + 1):
        for r in range(cap.shape[0]):
            avail[t, r] = cap[r]
    return avail


@njit(cache=True)  # type: ignore[misc]
def reset_profile(avail: IntArray, cap: IntArray, upto: int) -> None:
    """Restore rows ``0..upto-1`` of a profile after a decode."""
    for t in range(upto):
        for r in range(cap.shape[0]):
            avail[t, r] = cap[r]


@njit(cache=True)  # type: ignore[misc]
def _earliest_fit(j: int, t: int, dur: IntArray, dem: IntArray, avail: IntArray) -> int:
    """Earliest time from ``t`` at which activity ``j`` fits the profile for its whole duration."""
    d = dur[j]
    if d == 0:
        return t
    nres = dem.shape[1]
    tau = t
    while tau < t + d:
        ok = True
        for r in range(nres):
            if dem[j, r] > avail[tau, r]:
                ok = False
                break
        if ok:
            tau += 1
        else:
            t = tau + 1
            tau = t
    return t


@njit(cache=True)  # type: ignore[misc]
def serial_kernel(
    order: IntArray,
    dur: IntArray,
    dem: IntArray,
    pred_ptr: IntArray,
    pred_idx: IntArray,
    avail: IntArray,
    starts: IntArray,
) -> int:
    """Serial SGS: each activity in list order starts at its earliest
    precedence- and resource-feasible time. Writes ``starts``, returns the
    makespan and leaves ``avail`` dirty in rows ``< makespan``."""
    n = order.shape[0]
    nres = dem.shape[1]
    ms = 0
    for k in range(n):
        j = order[k]
        t = 0
        for q in range(pred_ptr[j], pred_ptr[j + 1]):
            p = pred_idx[q]
            f = starts[p] + dur[p]
            if f > t:
                t = f
        d = dur[j]
        t = _earliest_fit(j, t, dur, dem, avail)
        for tau in range(t, t + d):
            for r in range(nres):
                avail[tau, r] -= dem[j, r]
        starts[j] = t
        if t + d > ms:
            ms = t + d
    return ms


@njit(cache=True)  # type: ignore[misc]
def parallel_kernel(
    order: IntArray,
    dur: IntArray,
    dem: IntArray,
    pred_ptr: IntArray,
    succ_ptr: IntArray,
    succ_idx: IntArray,
    avail: IntArray,
    starts: IntArray,
) -> int:
    """Parallel SGS with list priorities: at each decision time, start every
    eligible activity that fits, in list order (a non-delay schedule).
    Same contract as :func:`serial_kernel`, but it takes the graph's
    successors (``succ_ptr``/``succ_idx``, the transpose of the predecessor
    lists, which every caller holds) besides the predecessor counts.

    An activity is eligible once all its predecessors are scheduled
    (``left[j] == 0``) and have finished (``ready[j] <= t``); both are
    updated when a predecessor is scheduled, so a decision point costs one
    cheap sweep over the pending list.
    """
    n = order.shape[0]
    nres = dem.shape[1]
    left = np.empty(n, dtype=np.int64)
    ready = np.zeros(n, dtype=np.int64)
    for j in range(n):
        left[j] = pred_ptr[j + 1] - pred_ptr[j]
    done = np.zeros(n, dtype=np.bool_)
    pending = order.copy()
    npend = n
    t = 0
    ms = 0
    while npend > 0:
        again = True
        while again:
            again = False
            w = 0
            for k in range(npend):
                j = pending[k]
                ok = left[j] == 0 and ready[j] <= t
                d = dur[j]
                if ok and d > 0:
                    # everything scheduled so far starts at or before t, so
                    # free capacity never shrinks after t: checking t suffices
                    for r in range(nres):
                        if dem[j, r] > avail[t, r]:
                            ok = False
                            break
                if ok:
                    for tau in range(t, t + d):
                        for r in range(nres):
                            avail[tau, r] -= dem[j, r]
                    starts[j] = t
                    done[j] = True
                    if t + d > ms:
                        ms = t + d
                    for q in range(succ_ptr[j], succ_ptr[j + 1]):
                        v = succ_idx[q]
                        left[v] -= 1
                        if t + d > ready[v]:
                            ready[v] = t + d
                    if d == 0:
                        again = True  # its successors may start at t too
                else:
                    pending[w] = j
                    w += 1
            npend = w
        if npend == 0:
            break
        # next decision time: the earliest finish after t among started ones
        nt = ms
        for j in range(n):
            if done[j]:
                f = starts[j] + dur[j]
                if t < f < nt:
                    nt = f
        t = nt
    return ms


@njit(cache=True)  # type: ignore[misc]
def delay_kernel(
    order: IntArray,
    dur: IntArray,
    dem: IntArray,
    pred_ptr: IntArray,
    succ_ptr: IntArray,
    succ_idx: IntArray,
    avail: IntArray,
    starts: IntArray,
    delay: int,
) -> int:
    """Delay-bounded SGS (parameterized active schedules, Gonçalves, Mendes & Resende): each
    step schedules, at its earliest feasible start, the first activity in list order among
    the eligible ones that can start within ``delay`` of the earliest eligible start.
    ``delay`` 0 gives non-delay schedules (as :func:`parallel_kernel`), a delay beyond the
    horizon the serial SGS; in between, an activity may wait a little for a better one but
    not leave the resources idle for long. Same contract as :func:`parallel_kernel`.

    Earliest starts of eligible activities are cached: capacity only shrinks, so a cached
    start stays valid unless the activity just scheduled overlaps it, and then the scan
    resumes from it."""
    n = order.shape[0]
    nres = dem.shape[1]
    pos = np.empty(n, dtype=np.int64)
    for k in range(n):
        pos[order[k]] = k
    left = np.empty(n, dtype=np.int64)
    ready = np.zeros(n, dtype=np.int64)
    est = np.zeros(n, dtype=np.int64)
    dirty = np.ones(n, dtype=np.bool_)
    elig = np.empty(n, dtype=np.int64)
    ne = 0
    for j in range(n):
        left[j] = pred_ptr[j + 1] - pred_ptr[j]
        if left[j] == 0:
            elig[ne] = j
            ne += 1
    ms = 0
    for _ in range(n):
        tmin = np.int64(1) << 40
        for e in range(ne):
            j = elig[e]
            if dirty[j]:
                est[j] = _earliest_fit(j, max(est[j], ready[j]), dur, dem, avail)
                dirty[j] = False
            if est[j] < tmin:
                tmin = est[j]
        pick = -1
        for e in range(ne):
            j = elig[e]
            if est[j] <= tmin + delay and (pick < 0 or pos[j] < pos[elig[pick]]):
                pick = e
        j = elig[pick]
        elig[pick] = elig[ne - 1]
        ne -= 1
        t = est[j]
        d = dur[j]
        for tau in range(t, t + d):
            for r in range(nres):
                avail[tau, r] -= dem[j, r]
        starts[j] = t
        if t + d > ms:
            ms = t + d
        if d > 0:
            for e in range(ne):
                k = elig[e]
                if est[k] < t + d and est[k] + dur[k] > t:
                    dirty[k] = True
        for q in range(succ_ptr[j], succ_ptr[j + 1]):
            v = succ_idx[q]
            left[v] -= 1
            if t + d > ready[v]:
                ready[v] = t + d
            if left[v] == 0:
                elig[ne] = v
                ne += 1
                est[v] = ready[v]
                dirty[v] = True
    return ms


@njit(cache=True)  # type: ignore[misc]
def sort_by_finish(starts: IntArray, order: IntArray, dur: IntArray, ms: int, out: IntArray) -> None:
    """Activity list by decreasing finish time (ties: later in ``order``
    first) of a schedule with makespan ``ms``: a precedence-feasible list
    of the reversed project, even with zero durations, whose serial SGS
    right-justifies the schedule."""
    n = starts.shape[0]
    key = np.empty(n, dtype=np.int64)
    for k in range(n):
        j = order[k]
        key[j] = (ms - starts[j] - dur[j]) * n + (n - 1 - k)
    srt = np.argsort(key)
    for k in range(n):
        out[k] = srt[k]


@njit(cache=True)  # type: ignore[misc]
def reverse_pass(
    starts_in: IntArray,
    order_in: IntArray,
    dur: IntArray,
    dem: IntArray,
    cap: IntArray,
    rev_ptr: IntArray,
    rev_idx: IntArray,
    avail: IntArray,
    order_out: IntArray,
    starts_out: IntArray,
) -> int:
    """One justification pass: right-justify ``starts_in``.

    Activities are taken by decreasing finish time (ties: later in
    ``order_in`` first, which keeps the list precedence-feasible even with
    zero durations) and scheduled by the serial SGS on the graph whose
    predecessor lists are ``rev_ptr/rev_idx`` (the successors of the graph
    ``starts_in`` was built on). The result is returned in *mirrored* time:
    ``starts_out`` are start times of that reversed problem, and
    ``order_out`` is a list that is precedence-feasible for it, so calling
    this again with the original predecessor lists left-justifies.
    Returns the makespan; ``avail`` is restored.
    """
    n = starts_in.shape[0]
    ms_in = 0
    for j in range(n):
        f = starts_in[j] + dur[j]
        if f > ms_in:
            ms_in = f
    sort_by_finish(starts_in, order_in, dur, ms_in, order_out)
    ms = serial_kernel(order_out, dur, dem, rev_ptr, rev_idx, avail, starts_out)
    reset_profile(avail, cap, ms)
    return ms


@njit(cache=True)  # type: ignore[misc]
def fbi_kernel(
    starts: IntArray,
    order: IntArray,
    dur: IntArray,
    dem: IntArray,
    cap: IntArray,
    pred_ptr: IntArray,
    pred_idx: IntArray,
    succ_ptr: IntArray,
    succ_idx: IntArray,
    avail: IntArray,
    out_starts: IntArray,
    out_order: IntArray,
) -> int:
    """Double justification of (``starts``, ``order``) into ``out_starts`` and
    ``out_order`` (the list the final pass scheduled from, so the serial SGS
    maps it back to exactly ``out_starts``). Returns the new makespan, which
    is never larger: each pass places every activity no earlier (right pass)
    or no later (left pass) than in its input schedule."""
    n = starts.shape[0]
    mid_starts = np.empty(n, dtype=np.int64)
    mid_order = np.empty(n, dtype=np.int64)
    reverse_pass(starts, order, dur, dem, cap, succ_ptr, succ_idx, avail, mid_order, mid_starts)
    return reverse_pass(
        mid_starts, mid_order, dur, dem, cap, pred_ptr, pred_idx, avail, out_order, out_starts
    )


@njit(cache=True)  # type: ignore[misc]
def sort_by_start(starts: IntArray, order: IntArray, out: IntArray) -> None:
    """Activity list sorted by start time, ties kept in ``order``'s order
    (``order`` must be precedence-feasible; then so is the result).

    The serial SGS maps this list to a schedule in which no activity starts
    later than in ``starts`` (the same argument as for FBI), so it is a
    faithful encoding of the schedule for the genetic operators.
    """
    n = starts.shape[0]
    key = np.empty(n, dtype=np.int64)
    for k in range(n):
        key[order[k]] = starts[order[k]] * n + k
    srt = np.argsort(key)
    for k in range(n):
        out[k] = srt[k]


@njit(cache=True)  # type: ignore[misc]
def _decode_batch(
    lists: IntArray,
    dur: IntArray,
    dem: IntArray,
    cap: IntArray,
    pred_ptr: IntArray,
    pred_idx: IntArray,
    succ_ptr: IntArray,
    succ_idx: IntArray,
    horizon: int,
    parallel: bool,
) -> IntArray:
    m, n = lists.shape
    avail = new_profile(horizon, cap)
    out = np.empty((m, n), dtype=np.int64)
    for i in range(m):
        if parallel:
            ms = parallel_kernel(lists[i], dur, dem, pred_ptr, succ_ptr, succ_idx, avail, out[i])
        else:
            ms = serial_kernel(lists[i], dur, dem, pred_ptr, pred_idx, avail, out[i])
        reset_profile(avail, cap, ms)
    return out


# --------------------------------------------------------------------------
# Instance-level wrappers
# --------------------------------------------------------------------------


def _as_lists(inst: RcpspInstance, lists: npt.ArrayLike) -> IntArray:
    arr = np.ascontiguousarray(lists, dtype=np.int64)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[1] != inst.n:
        raise ValueError(f"activity lists must have {inst.n} entries")
    return arr


def check_activity_list(inst: RcpspInstance, activity_list: npt.ArrayLike) -> None:
    """Raise ``ValueError`` unless the list is a precedence-feasible permutation.

    The kernels do not check (that would cost as much as decoding), so the
    public wrappers do.
    """
    order = np.asarray(activity_list, dtype=np.int64)
    n = inst.n
    if order.shape != (n,) or not np.array_equal(np.sort(order), np.arange(n)):
        raise ValueError("activity list is not a permutation of the activities")
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(n)
    for j in range(n):
        preds = inst.predecessors(j)
        if preds.size and (pos[preds] > pos[j]).any():
            raise ValueError(f"activity {j} comes before one of its predecessors")


def serial_sgs_batch(inst: RcpspInstance, lists: npt.ArrayLike) -> IntArray:
    """Start times (one row per list) of the serial SGS; unchecked input."""
    return _sgs_batch(inst, lists, parallel=False)


def parallel_sgs_batch(inst: RcpspInstance, lists: npt.ArrayLike) -> IntArray:
    """Start times (one row per list) of the parallel SGS; unchecked input."""
    return _sgs_batch(inst, lists, parallel=True)


def _sgs_batch(inst: RcpspInstance, lists: npt.ArrayLike, parallel: bool) -> IntArray:
    arr = _as_lists(inst, lists)
    out: IntArray = _decode_batch(
        arr,
        inst.durations,
        inst.demands,
        inst.capacities,
        inst.pred_ptr,
        inst.pred_idx,
        inst.succ_ptr,
        inst.succ_idx,
        inst.horizon,
        parallel,
    )
    return out


def serial_sgs(inst: RcpspInstance, activity_list: npt.ArrayLike) -> IntArray:
    """Start times of the serial SGS for one activity list."""
    check_activity_list(inst, activity_list)
    out: IntArray = serial_sgs_batch(inst, activity_list)[0]
    return out


def parallel_sgs(inst: RcpspInstance, activity_list: npt.ArrayLike) -> IntArray:
    """Start times of the parallel SGS for one activity list."""
    check_activity_list(inst, activity_list)
    out: IntArray = parallel_sgs_batch(inst, activity_list)[0]
    return out


def makespan(inst: RcpspInstance, starts: npt.ArrayLike) -> int:
    """Latest finish time of a schedule."""
    s = np.asarray(starts, dtype=np.int64)
    return int((s + inst.durations).max()) if inst.n else 0


def forward_backward_improvement(
    inst: RcpspInstance, starts: npt.ArrayLike, activity_list: npt.ArrayLike
) -> tuple[IntArray, IntArray, int]:
    """Double justification of a feasible schedule.

    ``activity_list`` must be the list the schedule was decoded from (or any
    precedence-feasible list: it only breaks ties). Returns ``(starts,
    activity_list, makespan)`` of the improved schedule; the serial SGS
    decodes the list to exactly that schedule. Counts as
    :data:`FBI_SCHEDULES` schedules.
    """
    check_activity_list(inst, activity_list)
    s = np.ascontiguousarray(starts, dtype=np.int64)
    order = np.ascontiguousarray(activity_list, dtype=np.int64)
    avail = new_profile(inst.horizon, inst.capacities)
    out_s = np.empty(inst.n, dtype=np.int64)
    out_o = np.empty(inst.n, dtype=np.int64)
    ms = fbi_kernel(s, order, *inst.arrays, avail, out_s, out_o)
    return out_s, out_o, int(ms)


# --------------------------------------------------------------------------
# Plain-Python reference
# --------------------------------------------------------------------------


@functools.lru_cache(maxsize=8)
def _python_tables(
    inst: RcpspInstance,
) -> tuple[list[int], list[list[int]], list[int], list[list[int]]]:
    """The instance as Python lists, built once so the baseline measures
    scheduling, not conversion."""
    return (
        [int(d) for d in inst.durations],
        [[int(x) for x in row] for row in inst.demands],
        [int(c) for c in inst.capacities],
        [[int(p) for p in inst.predecessors(j)] for j in range(inst.n)],
    )


def serial_sgs_python(inst: RcpspInstance, activity_list: list[int] | IntArray) -> list[int]:
    """The serial SGS in straightforward Python (reference and baseline).

    Same algorithm and tie-breaking as :func:`serial_kernel`, on lists of
    Python ints, so results are identical.
    """
    durations, demands, capacities, preds = _python_tables(inst)
    n = inst.n
    avail = [list(capacities) for _ in range(sum(durations) + 1)]
    starts = [0] * n
    for j in activity_list:
        j = int(j)
        t = max((starts[p] + durations[p] for p in preds[j]), default=0)
        d = durations[j]
        need = demands[j]
        nres = len(need)
        tau = t
        while tau < t + d:
            row = avail[tau]
            fits = True
            for r in range(nres):
                if need[r] > row[r]:
                    fits = False
                    break
            if fits:
                tau += 1
            else:
                t = tau + 1
                tau = t
        for tau in range(t, t + d):
            row = avail[tau]
            for r in range(nres):
                row[r] -= need[r]
        starts[j] = t
    return starts
