"""The compiled serial schedule generation scheme: one kernel for every schedule evolve computes.

Tasks are integers ``0..n-1``; a plan reaches this module as flat arrays (see
:mod:`evolve.scheduling.arrays`). The kernel is the same algorithm as the
plain-Python reference in :mod:`evolve.scheduling.reference` (which stays as
the test oracle): ready tasks are taken in ascending ``key``; each starts at
the first time at or after its dependencies' finish where, for its whole
duration, every capacity holds (column 0 of ``need`` is the ``max_parallel``
slot, the others the named resources). Times are floats, compared with the
same ``EPS`` as the reference, so both give identical starts.

The resource profile is a step function kept in two arrays (event times and
the usage after each), grown by doubling; a placement scans only the events
inside the window it tries, so a plan of ``n`` tasks costs about ``n`` times
the number of events a task overlaps, not ``n`` times the horizon.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from numba import njit

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

EPS = 1e-9
"""Tolerance of every time and capacity comparison (the reference uses the same)."""


@njit(cache=True)  # type: ignore[misc]
def _heap_push(heap: IntArray, size: int, item: int, key: IntArray) -> int:
    i = size
    heap[i] = item
    while i > 0:
        parent = (i - 1) // 2
        if key[heap[parent]] <= key[heap[i]]:
            break
        heap[parent], heap[i] = heap[i], heap[parent]
        i = parent
    return size + 1


@njit(cache=True)  # type: ignore[misc]
def _heap_pop(heap: IntArray, size: int, key: IntArray) -> int:
    top = int(heap[0])
    size -= 1
    heap[0] = heap[size]
    i = 0
    while True:
        left = 2 * i + 1
        if left >= size:
            break
        child = left
        if left + 1 < size and key[heap[left + 1]] < key[heap[left]]:
            child = left + 1
        if key[heap[i]] <= key[heap[child]]:
            break
        heap[i], heap[child] = heap[child], heap[i]
        i = child
    return top


@njit(cache=True)  # type: ignore[misc]
def _find(times: FloatArray, count: int, t: float) -> int:
    """Index of the last event at or before ``t`` (``bisect_right - 1``); times[0] == 0 <= t."""
    lo, hi = 0, count
    while lo < hi:
        mid = (lo + hi) // 2
        if times[mid] <= t:
            lo = mid + 1
        else:
            hi = mid
    return int(lo - 1)


@njit(cache=True)  # type: ignore[misc]
def _split(times: FloatArray, usage: FloatArray, count: int, t: float) -> tuple[int, int]:
    """Make ``t`` an event (within EPS of an existing one counts as it); return (its index, count)."""
    i = _find(times, count, t)
    if abs(times[i] - t) <= EPS:
        return i, count
    for k in range(count, i + 1, -1):
        times[k] = times[k - 1]
        usage[k, :] = usage[k - 1, :]
    times[i + 1] = t
    usage[i + 1, :] = usage[i, :]
    return i + 1, count + 1


@njit(cache=True)  # type: ignore[misc]
def serial_sgs(dur: FloatArray, need: FloatArray, cap: FloatArray,
               pred_ptr: IntArray, pred_idx: IntArray, succ_ptr: IntArray, succ_idx: IntArray,
               key: IntArray) -> FloatArray:
    """Start time of every task. ``key`` orders ready tasks (smallest first, all distinct);
    ``pred``/``succ`` are CSR adjacency of an acyclic graph. A task needing more than a full
    capacity gets start ``inf`` (the wrapper reports it)."""
    n = dur.shape[0]
    width = cap.shape[0]
    start = np.zeros(n, dtype=np.float64)
    waiting = np.empty(n, dtype=np.int64)
    heap = np.empty(n, dtype=np.int64)
    size = 0
    for j in range(n):
        waiting[j] = pred_ptr[j + 1] - pred_ptr[j]
        if waiting[j] == 0:
            size = _heap_push(heap, size, j, key)
    room = 2 * n + 2
    times = np.zeros(room, dtype=np.float64)
    usage = np.zeros((room, width), dtype=np.float64)
    count = 1
    while size > 0:
        j = _heap_pop(heap, size, key)
        size -= 1
        t = 0.0
        for q in range(pred_ptr[j], pred_ptr[j + 1]):
            p = pred_idx[q]
            if start[p] + dur[p] > t:
                t = start[p] + dur[p]
        length = dur[j]
        if length > 0:
            impossible = False
            for r in range(width):
                if need[j, r] > cap[r] + EPS:
                    impossible = True
            if impossible:
                t = np.inf
            else:
                i = _find(times, count, t)
                while True:
                    end = t + length
                    clash = -1
                    while i < count and times[i] < end - EPS:
                        for r in range(width):
                            if usage[i, r] + need[j, r] > cap[r] + EPS:
                                clash = i
                                break
                        if clash >= 0:
                            break
                        i += 1
                    if clash < 0:
                        break
                    if clash + 1 >= count:  # unreachable while need <= cap: the last step is empty
                        t = np.inf
                        break
                    t = times[clash + 1]
                    i = clash + 1
            if t < np.inf:
                if count + 2 > room:
                    room *= 2
                    grown_t = np.zeros(room, dtype=np.float64)
                    grown_u = np.zeros((room, width), dtype=np.float64)
                    grown_t[:count] = times[:count]
                    grown_u[:count, :] = usage[:count, :]
                    times, usage = grown_t, grown_u
                first, count = _split(times, usage, count, t)
                last, count = _split(times, usage, count, t + length)
                for k in range(first, last):
                    for r in range(width):
                        usage[k, r] += need[j, r]
        start[j] = t
        for q in range(succ_ptr[j], succ_ptr[j + 1]):
            s = succ_idx[q]
            waiting[s] -= 1
            if waiting[s] == 0:
                size = _heap_push(heap, size, s, key)
    return start
