"""The scheduling kernel's input straight from a decoded plan, for objectives that need only numbers.

:func:`evolve.scheduling.schedule` builds a :class:`~evolve.scheduling.base.PlanGraph`
and the :class:`~evolve.scheduling.arrays.SgsArrays` in Python, a few microseconds a
task, then a full :class:`~evolve.scheduling.base.Schedule` (critical path, slack,
waves) that ``makespan`` does not read. The compiled objectives already hold the
plan as integer arrays (:class:`evolve.model.plan_arrays.PlanArrays`, tasks by
position, tools by :class:`~evolve.model.compiled.CompiledProblem` index), so
:func:`sgs_inputs` derives the very arrays :func:`~evolve.scheduling.arrays.sgs_arrays`
would, in one pass: the same Kahn order (FIFO, stable in plan order, tasks on or behind
a cycle left out), durations and demands by tool (an unknown tool takes no time and holds
only its slot), longest tails and the same selection ``key`` (priority place, then
longest tail, then topological index). Equal arrays give equal starts, so the makespan
is exactly :func:`~evolve.scheduling.schedule`'s; the tests hold it to that.

It is a kernel of its own, called before :func:`~evolve.scheduling.kernel.serial_sgs`
from Python rather than calling it: numba's on-disk cache only notices changes to a
kernel's own file, so a kernel calling into another module could run stale code.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from evolve.model.compiled import FloatArray, IntArray


@njit(cache=True)  # type: ignore[misc]
def sgs_inputs(tool: IntArray, dep_ptr: IntArray, dep_idx: IntArray, order: IntArray, rank: IntArray,
               ranked: int,
               tool_dur: FloatArray, tool_need: FloatArray
               ) -> tuple[FloatArray, FloatArray, IntArray, IntArray, IntArray, IntArray, IntArray]:
    """``(dur, need, pred_ptr, pred_idx, succ_ptr, succ_idx, key)`` of the placeable tasks in
    topological order, as :func:`evolve.scheduling.arrays.sgs_arrays` gives them.

    ``tool``/``dep_ptr``/``dep_idx``/``order`` are a decoded plan's (deps exist, are not the
    task itself and keep their repeats, as :meth:`~evolve.model.plan.Plan.dependency_map`;
    ``order`` is Kahn's, from :func:`evolve.model.plan_arrays.dependency_order`);
    ``rank`` is each task's priority place (-1: not named, which places it at ``ranked``);
    ``tool_dur``/``tool_need`` are the compiled problem's rows by tool index.
    """
    n = tool.shape[0]
    edges = dep_idx.shape[0]
    width = tool_need.shape[1]

    m = order.shape[0]
    index = np.full(n, -1, dtype=np.int64)
    for k in range(m):
        index[order[k]] = k

    # durations, demands and predecessors by topological index (a placed task's deps are placed)
    dur = np.zeros(m, dtype=np.float64)
    need = np.zeros((m, width), dtype=np.float64)
    pos = np.empty(m, dtype=np.int64)
    pred_ptr = np.zeros(m + 1, dtype=np.int64)
    pred_idx = np.empty(edges, dtype=np.int64)
    count = 0
    for k in range(m):
        v = order[k]
        t = tool[v]
        if t >= 0:
            dur[k] = tool_dur[t]
            for r in range(width):
                need[k, r] = tool_need[t, r]
        else:
            need[k, 0] = 1.0
        pos[k] = rank[v] if rank[v] >= 0 else ranked
        for q in range(dep_ptr[v], dep_ptr[v + 1]):
            pred_idx[count] = index[dep_idx[q]]
            count += 1
        pred_ptr[k + 1] = count
    pred_idx = pred_idx[:count]

    # successors by topological index: the transpose, owners ascending (a stable sort's order)
    out_ptr = np.zeros(m + 1, dtype=np.int64)
    for q in range(count):
        out_ptr[pred_idx[q] + 1] += 1
    for k in range(m):
        out_ptr[k + 1] += out_ptr[k]
    at = out_ptr[:m].copy()
    out_idx = np.empty(count, dtype=np.int64)
    for k in range(m):
        for q in range(pred_ptr[k], pred_ptr[k + 1]):
            p = pred_idx[q]
            out_idx[at[p]] = k
            at[p] += 1

    # longest tails (base.backward_tails: own duration plus Python's max of the successors')
    tail = np.empty(m, dtype=np.float64)
    for k in range(m - 1, -1, -1):
        lo, hi = out_ptr[k], out_ptr[k + 1]
        best = 0.0
        if hi > lo:
            best = tail[out_idx[lo]]
            for q in range(lo + 1, hi):
                if tail[out_idx[q]] > best:
                    best = tail[out_idx[q]]
        tail[k] = dur[k] + best

    # key: rank of (priority place, -tail, topological index), as lexsort in arrays.sgs_arrays
    by_tail = np.argsort(-tail, kind="mergesort")
    ranking = by_tail[np.argsort(pos[by_tail], kind="mergesort")]
    key = np.empty(m, dtype=np.int64)
    for r in range(m):
        key[ranking[r]] = r
    return dur, need, pred_ptr, pred_idx, out_ptr, out_idx, key
