"""The compiled serial schedule generation scheme: one kernel for every schedule evolve computes.

Tasks are integers ``0..n-1``; a plan reaches this module as flat arrays (see
:mod:`evolve.scheduling.arrays`). The kernel is the same algorithm as the
plain-Python reference in :mod:`evolve.scheduling.reference` (which stays as
the test oracle): ready tasks are taken in ascending ``key``; each starts at
the first time at or after its dependencies' finish where, for its whole
duration, every capacity holds (column 0 of ``need`` is the ``max_parallel``
slot, the others the named resources). Times are floats, compared with the
same ``EPS`` as the reference, so both give identical starts.

The resource profile is a step function kept as a linked list of events (a
split is O(1)), and steps that are full for a resource are skipped with
path-compressed jumps instead of being tried one by one: the plain scan makes
every task of a wide fan walk the whole busy profile, which is what made the
Python scheduler quadratic (100 s for 20,000 tasks). A placement then costs
about the number of events inside the windows it tries.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from numba import njit

from evolve.scheduling.base import EPS

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
HeapKeys = FloatArray | IntArray
"""The keys of :func:`heap_push`'s heap: times, or the HTN heuristic's integer costs."""


@njit(cache=True, nogil=True)  # type: ignore[misc]
def heap_push(keys: HeapKeys, items: IntArray, size: int, key: float, item: int) -> int:
    """Push ``item`` with ``key`` onto the binary min-heap held in ``keys``/``items``; new size.

    The one heap of evolve's kernels (the schedulers', the tool-choice greedy's, the HTN
    heuristic's, whose keys are integers: numba compiles a version per key type). ``keys``
    must have room: the callers size it to the most pushes their algorithm can make."""
    i = size
    keys[i] = key
    items[i] = item
    while i > 0:
        parent = (i - 1) // 2
        if keys[parent] <= keys[i]:
            break
        keys[parent], keys[i] = keys[i], keys[parent]
        items[parent], items[i] = items[i], items[parent]
        i = parent
    return size + 1


@njit(cache=True, nogil=True)  # type: ignore[misc]
def heap_pop(keys: HeapKeys, items: IntArray, size: int) -> tuple[float, int, int]:
    """``(key, item, new size)`` of the heap's smallest key."""
    key, item = keys[0], items[0]
    size -= 1
    keys[0], items[0] = keys[size], items[size]
    i = 0
    while True:
        left = 2 * i + 1
        if left >= size:
            break
        child = left
        if left + 1 < size and keys[left + 1] < keys[left]:
            child = left + 1
        if keys[i] <= keys[child]:
            break
        keys[i], keys[child] = keys[child], keys[i]
        items[i], items[child] = items[child], items[i]
        i = child
    return key, item, size


@njit(cache=True, nogil=True)  # type: ignore[misc]
def _locate(times: FloatArray, nxt: IntArray, prv: IntArray, hint: int, t: float) -> int:
    """The step containing ``t``: the last event at or before it (``bisect_right - 1`` in the
    reference), walked to from ``hint``, an event near ``t``; the first event is at 0 <= t."""
    node = hint
    while times[node] > t:
        node = prv[node]
    while nxt[node] >= 0 and times[nxt[node]] <= t:
        node = nxt[node]
    return node


@njit(cache=True, nogil=True)  # type: ignore[misc]
def _find_open(jump: IntArray, r: int, node: int) -> int:
    """The first event at or after ``node`` whose step is not full in column ``r`` (``-1``: none),
    with path compression, so skipping the full part of the profile costs amortised O(1)."""
    root = node
    while root >= 0 and jump[r, root] != root:
        root = jump[r, root]
    while node >= 0 and node != root:
        ahead = jump[r, node]
        jump[r, node] = root
        node = ahead
    return root


@njit(cache=True, nogil=True)  # type: ignore[misc]
def serial_sgs(dur: FloatArray, need: FloatArray, cap: FloatArray,
               pred_ptr: IntArray, pred_idx: IntArray, succ_ptr: IntArray, succ_idx: IntArray,
               key: IntArray) -> FloatArray:
    """Start time of every task. ``key`` orders ready tasks (smallest first, all distinct);
    ``pred``/``succ`` are CSR adjacency of an acyclic graph. A task needing more than a full
    capacity gets start ``inf`` (the wrapper reports it)."""
    start, _ = serial_sgs_placed(dur, need, cap, pred_ptr, pred_idx, succ_ptr, succ_idx, key)
    return start


@njit(cache=True, nogil=True)  # type: ignore[misc]
def serial_sgs_placed(dur: FloatArray, need: FloatArray, cap: FloatArray,
                      pred_ptr: IntArray, pred_idx: IntArray, succ_ptr: IntArray,
                      succ_idx: IntArray, key: IntArray) -> tuple[FloatArray, IntArray]:
    """:func:`serial_sgs` that also returns the tasks in the order it placed them, which is the
    order a :class:`~evolve.scheduling.base.Schedule` lists its starts in.

    The profile is a linked list of events (``times``, ``usage`` after each,
    ``nxt``/``prv``), so splitting a step is O(1), and each task remembers the
    event at its finish, from which its successors find their earliest start.
    ``jump[r]`` skips steps that are *full* in column ``r``: no task that uses
    ``r`` at all fits there (``usage + smallest positive need > cap + EPS``).
    The reference would try each such step and move on, so jumping over them
    gives the same start, provided a window starting at a step's time covers
    that step, i.e. ``t < (t + length) - EPS`` in floats: ``safe`` checks that
    with a margin for rounding; shorter tasks walk step by step, as the
    reference does. Steps only fill up, so ``jump`` never needs undoing.
    """
    n = dur.shape[0]
    width = cap.shape[0]
    start = np.zeros(n, dtype=np.float64)
    placed = np.empty(n, dtype=np.int64)
    hint = np.zeros(n, dtype=np.int64)
    done = 0
    waiting = np.empty(n, dtype=np.int64)
    heap_keys = np.empty(n, dtype=np.float64)
    heap = np.empty(n, dtype=np.int64)
    size = 0
    for j in range(n):
        waiting[j] = pred_ptr[j + 1] - pred_ptr[j]
        if waiting[j] == 0:
            size = heap_push(heap_keys, heap, size, float(key[j]), j)
    # The smallest positive need of each capacity column decides when a step is full in it.
    least = np.full(width, np.inf)
    for j in range(n):
        for r in range(width):
            if 0.0 < need[j, r] < least[r]:
                least[r] = need[j, r]
    skips = np.zeros(width, dtype=np.bool_)
    for r in range(width):
        skips[r] = np.isfinite(cap[r]) and np.isfinite(least[r])
    room = 2 * n + 2  # one event at 0, at most two more per task
    times = np.zeros(room, dtype=np.float64)
    usage = np.zeros((room, width), dtype=np.float64)
    nxt = np.full(room, -1, dtype=np.int64)
    prv = np.full(room, -1, dtype=np.int64)
    jump = np.zeros((width, room), dtype=np.int64)
    for r in range(width):
        jump[r, 0] = -1 if skips[r] and least[r] > cap[r] + EPS else 0
    count, tail = 1, 0
    while size > 0:
        _, j, size = heap_pop(heap_keys, heap, size)
        t = 0.0
        near = 0
        for q in range(pred_ptr[j], pred_ptr[j + 1]):
            p = pred_idx[q]
            if start[p] + dur[p] > t:
                t = start[p] + dur[p]
                near = hint[p]
        length = dur[j]
        if length > 0 and t < np.inf:
            node = _locate(times, nxt, prv, near, t)
            safe = length > EPS + 1e-15 * (max(times[tail], t) + length)
            while True:
                if safe:
                    ahead = node
                    moved = True
                    while moved and ahead >= 0:
                        moved = False
                        for r in range(width):
                            if skips[r] and need[j, r] > 0.0:
                                found = _find_open(jump, r, ahead)
                                if found != ahead:
                                    ahead = found
                                    moved = True
                                    if ahead < 0:
                                        break
                    if ahead < 0:
                        t = np.inf
                        break
                    if ahead != node:
                        node = ahead
                        t = times[node]
                end = t + length
                clash = -1
                i = node
                while i >= 0 and times[i] < end - EPS:
                    for r in range(width):
                        if usage[i, r] + need[j, r] > cap[r] + EPS:
                            clash = i
                            break
                    if clash >= 0:
                        break
                    i = nxt[i]
                if clash < 0:
                    break
                if nxt[clash] < 0:  # even the last, empty step is too small: it never fits
                    t = np.inf
                    break
                node = nxt[clash]
                t = times[node]
            if t < np.inf:
                first, count, tail = _split(times, usage, nxt, prv, jump, count, tail, node, t)
                at_end = _locate(times, nxt, prv, first, t + length)
                last, count, tail = _split(times, usage, nxt, prv, jump, count, tail, at_end,
                                           t + length)
                k = first
                while k != last:
                    for r in range(width):
                        usage[k, r] += need[j, r]
                        if skips[r] and jump[r, k] == k and usage[k, r] + least[r] > cap[r] + EPS:
                            jump[r, k] = nxt[k]
                    k = nxt[k]
                near = last
        start[j] = t
        hint[j] = near
        placed[done] = j
        done += 1
        for q in range(succ_ptr[j], succ_ptr[j + 1]):
            s = succ_idx[q]
            waiting[s] -= 1
            if waiting[s] == 0:
                size = heap_push(heap_keys, heap, size, float(key[s]), s)
    return start, placed[:done]


@njit(cache=True, nogil=True)  # type: ignore[misc]
def _split(times: FloatArray, usage: FloatArray, nxt: IntArray, prv: IntArray, jump: IntArray,
           count: int, tail: int, node: int, t: float) -> tuple[int, int, int]:
    """Make ``t`` an event (within EPS of ``node``, the step containing it, counts as it);
    return (its event, count, tail). The new step copies ``node``'s usage, so it is full
    wherever ``node`` is and may keep ``node``'s jumps."""
    if abs(times[node] - t) <= EPS:
        return node, count, tail
    new = count
    times[new] = t
    usage[new, :] = usage[node, :]
    nxt[new] = nxt[node]
    prv[new] = node
    if nxt[node] >= 0:
        prv[nxt[node]] = new
    nxt[node] = new
    for r in range(jump.shape[0]):
        jump[r, new] = new if jump[r, node] == node else jump[r, node]
    return new, count + 1, new if tail == node else tail


def warm_up() -> None:
    """Compile (or load from numba's cache) the serial SGS kernels on a two-task problem, so the
    first real schedule, and any timing of one, does not pay for compilation."""
    dur = np.array([1.0, 0.5])
    need = np.ones((2, 2), dtype=np.float64)
    cap = np.array([1.0, 1.0])
    ptr = np.array([0, 0, 1], dtype=np.int64)
    idx = np.array([0], dtype=np.int64)
    succ_ptr = np.array([0, 1, 1], dtype=np.int64)
    succ_idx = np.array([1], dtype=np.int64)
    serial_sgs(dur, need, cap, ptr, idx, succ_ptr, succ_idx, np.array([0, 1], dtype=np.int64))


@njit(cache=True, nogil=True)  # type: ignore[misc]
def rank_by(values: FloatArray) -> IntArray:
    """Distinct integer keys ordering tasks by ascending ``values``, ties by index."""
    order = np.argsort(values, kind="mergesort")
    key = np.empty(values.shape[0], dtype=np.int64)
    for r in range(values.shape[0]):
        key[order[r]] = r
    return key


@njit(cache=True, nogil=True)  # type: ignore[misc]
def justify(dur: FloatArray, need: FloatArray, cap: FloatArray,
            pred_ptr: IntArray, pred_idx: IntArray, succ_ptr: IntArray, succ_idx: IntArray,
            start: FloatArray) -> FloatArray:
    """One forward-backward improvement (double justification) of a feasible schedule.

    The backward pass schedules the reversed graph taking tasks by latest finish first
    (it right-justifies); the forward pass then takes them by earliest right-justified start
    (it left-justifies). The result is never longer than ``start`` and often shorter: the
    standard cheap repair of a serial schedule's greedy placements (Valls et al. 2005).
    """
    n = dur.shape[0]
    finish = start + dur
    back = serial_sgs(dur, need, cap, succ_ptr, succ_idx, pred_ptr, pred_idx, rank_by(-finish))
    right_start = np.empty(n, dtype=np.float64)
    for j in range(n):
        right_start[j] = -(back[j] + dur[j])
    return serial_sgs(dur, need, cap, pred_ptr, pred_idx, succ_ptr, succ_idx, rank_by(right_start))
