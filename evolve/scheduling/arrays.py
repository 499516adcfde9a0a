"""A plan as the flat arrays the scheduling kernel reads, built in (near) linear time.

The kernel knows nothing of ids, tools or priorities: task ``i`` is the
``i``-th task of the plan's topological order (:class:`PlanGraph`), and the
order in which ready tasks are taken is one integer ``key`` per task. The key
is the rank of the reference scheduler's sort key (priority position, then
longest remaining path, then topological index), so both schedulers take
ready tasks in exactly the same order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from evolve.model.graph_kernels import csr, transpose
from evolve.model.problem import Problem
from evolve.scheduling.base import Capacity, PlanGraph, backward_tails, demand_vector, priority_positions

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, eq=False)
class SgsArrays:
    """What :func:`evolve.scheduling.kernel.serial_sgs` takes, for the tasks of ``graph.order``.

    ``need[i]`` is one ``max_parallel`` slot then the named resources in
    ``problem.resources`` order, with ``cap`` the matching capacities (``inf``
    for no ``max_parallel``). ``pred``/``succ`` are CSR pairs, ``tail`` the
    longest remaining path of each task (its own duration included) and ``key``
    the selection order of ready tasks: a permutation of ``0..n-1``.
    """

    dur: FloatArray
    need: FloatArray
    cap: FloatArray
    pred_ptr: IntArray
    pred_idx: IntArray
    succ_ptr: IntArray
    succ_idx: IntArray
    tail: FloatArray
    key: IntArray

    @property
    def n(self) -> int:
        return int(self.dur.shape[0])

    @property
    def problem_arrays(self) -> tuple[FloatArray, FloatArray, FloatArray, IntArray, IntArray,
                                      IntArray, IntArray]:
        """The kernel's arguments before ``key``: ``(dur, need, cap, pred_ptr, pred_idx,
        succ_ptr, succ_idx)``, for callers that decode with keys of their own."""
        return (self.dur, self.need, self.cap, self.pred_ptr, self.pred_idx,
                self.succ_ptr, self.succ_idx)


def sgs_arrays(problem: Problem, graph: PlanGraph) -> SgsArrays:
    """The kernel's input for ``graph`` (see :meth:`PlanGraph.of`) under ``problem``."""
    order = graph.order
    n = len(order)
    index = {tid: i for i, tid in enumerate(order)}
    capacity = Capacity.of(problem)
    width = len(capacity.limits)
    tools = [graph.tasks[tid].tool for tid in order]
    rows = {name: demand_vector(problem, name, capacity) for name in dict.fromkeys(tools)}
    need = np.array([rows[name] for name in tools], dtype=np.float64).reshape(n, width)

    pred_ptr, pred_idx = csr([[index[d] for d in graph.deps[tid]] for tid in order])
    succ_ptr, succ_idx = transpose(pred_ptr, pred_idx, n)

    tails = backward_tails(graph)
    tail = np.fromiter((tails[tid] for tid in order), dtype=np.float64, count=n)
    position = priority_positions(graph.plan)
    missing = len(position)
    pos = np.fromiter((position.get(tid, missing) for tid in order), dtype=np.int64, count=n)
    rank = np.lexsort((np.arange(n), -tail, pos))  # the last key sorts first
    key = np.empty(n, dtype=np.int64)
    key[rank] = np.arange(n, dtype=np.int64)
    return SgsArrays(
        dur=np.fromiter((graph.duration[tid] for tid in order), dtype=np.float64, count=n),
        need=need, cap=np.array(capacity.limits, dtype=np.float64),
        pred_ptr=pred_ptr, pred_idx=pred_idx, succ_ptr=succ_ptr, succ_idx=succ_idx,
        tail=tail, key=key,
    )
