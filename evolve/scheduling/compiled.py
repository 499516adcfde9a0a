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

The transpose and the tails are the shared kernels of :mod:`evolve.model.graph_kernels`
(a call across files, which :mod:`evolve.model.kernel_cache` keeps safe).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from evolve.model.compiled import FloatArray, IntArray
from evolve.model.graph_kernels import longest_tails, transpose


@njit(cache=True, nogil=True)  # type: ignore[misc]
def sgs_inputs(tool: IntArray, dep_ptr: IntArray, dep_idx: IntArray, order: IntArray, rank: IntArray,
               ranked: int,
               tool_dur: FloatArray, tool_need: FloatArray
               ) -> tuple[FloatArray, FloatArray, IntArray, IntArray, IntArray, IntArray, IntArray]:
    """``(dur, need, pred_ptr, pred_idx, succ_ptr, succ_idx, key)`` of the placeable tasks in
    topological order, as :func:`evolve.scheduling.arrays.sgs_arrays` gives them.

    ``tool``/``dep_ptr``/``dep_idx``/``order`` are a decoded plan's (deps exist, are not the
    task itself and keep their repeats, as :meth:`~evolve.model.plan.Plan.dependency_map`;
    ``order`` is Kahn's, from :func:`evolve.model.plan_arrays.decode_plan`);
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

    # successors by topological index (owners ascending: a stable sort's order) and longest
    # tails (base.backward_tails: own duration plus Python's max of the successors')
    out_ptr, out_idx = transpose(pred_ptr, pred_idx, m)
    tail = longest_tails(dur, out_ptr, out_idx, False)

    # key: rank of (priority place, -tail, topological index), as lexsort in arrays.sgs_arrays
    by_tail = np.argsort(-tail, kind="mergesort")
    ranking = by_tail[np.argsort(pos[by_tail], kind="mergesort")]
    key = np.empty(m, dtype=np.int64)
    for r in range(m):
        key[ranking[r]] = r
    return dur, need, pred_ptr, pred_idx, out_ptr, out_idx, key
