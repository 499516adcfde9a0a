"""Activity-list operators for problems whose tasks are fixed and only the priority evolves.

These are the operators the RCPSP literature shows to work (Hartmann 1998;
Valls et al. 2005): regret-biased sampling on latest finish times for the first
population, precedence-preserving one- and two-point crossover, a shift
mutation that keeps the list precedence-feasible, and forward-backward
improvement (double justification) of a child. They plug into the general
engine as an :class:`~evolve.search.operators.OperatorSet`.

A list is worth what the engine's schedule of it is, so the operators decode
with the engine's float kernel unless the problem is exactly an integer RCPSP
(PSPLIB files are), where the time-indexed integer decoder gives the same
starts faster (:class:`Activities`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from evolve.model.plan import Plan
from evolve.model.problem import Problem
from evolve.problems.rcpsp.decode import forward_backward_improvement, serial_sgs
from evolve.problems.rcpsp.instance import RcpspInstance, latest_finishes
from evolve.problems.rcpsp.problem import instance_of, is_integer_rcpsp
from evolve.scheduling.arrays import SgsArrays, sgs_arrays
from evolve.scheduling.base import IMPOSSIBLE, PlanGraph
from evolve.scheduling.kernel import justify
from evolve.scheduling.kernel import serial_sgs as float_sgs
from evolve.search.operators import OperatorSet

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, eq=False)
class Activities:
    """A fixed-structure problem as the operators see it: activity ``j`` is task ``ids[j]``.

    The operators must optimise the problem the fitness scores, so lists are
    decoded by the fast integer RCPSP decoder only when that is exactly the
    engine's schedule (``inst`` set, see :func:`is_integer_rcpsp`); otherwise
    (fractional durations, a binding ``max_parallel``...) by the engine's own
    float kernel on ``arrays``, where activities are the template's placeable
    tasks in topological order. ``lft`` are the resource-free latest finish
    times that bias the first population.
    """

    ids: tuple[str, ...]
    pred_ptr: IntArray
    pred_idx: IntArray
    succ_ptr: IntArray
    succ_idx: IntArray
    lft: FloatArray
    inst: RcpspInstance | None = None
    arrays: SgsArrays | None = None

    @property
    def n(self) -> int:
        return len(self.ids)

    def predecessors(self, j: int) -> IntArray:
        return self.pred_idx[self.pred_ptr[j]:self.pred_ptr[j + 1]]

    def successors(self, j: int) -> IntArray:
        return self.succ_idx[self.succ_ptr[j]:self.succ_ptr[j + 1]]

    def decode(self, order: list[int] | IntArray) -> FloatArray:
        """Start of each activity when the precedence-feasible list ``order`` is scheduled: what
        :func:`evolve.scheduling.schedule` gives the plan :func:`with_list` makes of it."""
        if self.inst is not None:
            return serial_sgs(self.inst, order).astype(np.float64)
        assert self.arrays is not None
        start: FloatArray = float_sgs(*self.arrays.problem_arrays, positions(order))
        if not np.isfinite(start).all():
            raise ValueError(IMPOSSIBLE)
        return start

    def justify(self, order: list[int] | IntArray) -> list[int]:
        """A list whose schedule is never longer than ``order``'s, by forward-backward
        improvement (double justification) of ``order``'s schedule."""
        if self.inst is not None:
            _, improved, _ = forward_backward_improvement(self.inst, serial_sgs(self.inst, order), order)
            return [int(j) for j in improved]
        assert self.arrays is not None
        start = self.decode(order)
        better = justify(*self.arrays.problem_arrays, start)
        # By start, ties by topological index: precedence-feasible even with zero durations.
        candidate = np.lexsort((np.arange(self.n), better))
        if finish_time(self.decode(candidate), self.arrays.dur) <= finish_time(start, self.arrays.dur):
            return [int(j) for j in candidate]
        return [int(j) for j in order]


def positions(order: list[int] | IntArray) -> IntArray:
    """Each activity's place in ``order``: the kernel key that schedules the list as it stands."""
    arr = np.asarray(order, dtype=np.int64)
    key = np.empty(arr.shape[0], dtype=np.int64)
    key[arr] = np.arange(arr.shape[0], dtype=np.int64)
    return key


def finish_time(start: FloatArray, dur: FloatArray) -> float:
    return float((start + dur).max()) if start.shape[0] else 0.0


@functools.lru_cache(maxsize=8)
def activities(problem: Problem) -> Activities:
    """The operators' view of ``problem``, built once per problem."""
    if is_integer_rcpsp(problem):
        inst = instance_of(problem)
        return Activities(
            ids=tuple(t.id for t in template(problem).tasks), pred_ptr=inst.pred_ptr,
            pred_idx=inst.pred_idx, succ_ptr=inst.succ_ptr, succ_idx=inst.succ_idx,
            lft=latest_finishes(inst).astype(np.float64), inst=inst)
    graph = PlanGraph.of(problem, template(problem))
    arrays = sgs_arrays(problem, graph)
    # Latest finish with the critical-path length as deadline: deadline - tail + own duration.
    deadline = float(arrays.tail.max()) if arrays.n else 0.0
    return Activities(
        ids=tuple(graph.order), pred_ptr=arrays.pred_ptr, pred_idx=arrays.pred_idx,
        succ_ptr=arrays.succ_ptr, succ_idx=arrays.succ_idx,
        lft=deadline - arrays.tail + arrays.dur, arrays=arrays)


def activity_list(problem: Problem, plan: Plan) -> list[int]:
    """The plan's priority as activity indices, completed to a precedence-feasible list."""
    acts = activities(problem)
    index = {tid: j for j, tid in enumerate(acts.ids)}
    wanted = [index[tid] for tid in (plan.priority or ()) if tid in index]
    rank = {j: i for i, j in enumerate(wanted)}
    missing = len(rank)
    indeg = np.diff(acts.pred_ptr).copy()
    ready = [j for j in range(acts.n) if indeg[j] == 0]
    out: list[int] = []
    while ready:
        ready.sort(key=lambda j: (rank.get(j, missing), j))
        j = ready.pop(0)
        out.append(j)
        for s in acts.successors(j):
            indeg[s] -= 1
            if indeg[s] == 0:
                ready.append(int(s))
    return out


def template(problem: Problem) -> Plan:
    if not isinstance(problem.template, Plan):
        raise ValueError("activity-list operators need a problem whose template holds every task")
    return problem.template


def with_list(problem: Problem, order: list[int] | IntArray) -> Plan:
    """The template with ``order`` as its priority."""
    ids = activities(problem).ids
    return Plan(tasks=template(problem).tasks, priority=tuple(ids[int(j)] for j in order))


def sample_list(problem: Problem, rng: np.random.Generator) -> Plan:
    """Regret-based biased random sampling on latest finish times (a first-population plan)."""
    acts = activities(problem)
    indeg = np.diff(acts.pred_ptr).copy()
    ready = [j for j in range(acts.n) if indeg[j] == 0]
    out: list[int] = []
    while ready:
        values = np.array([acts.lft[j] for j in ready], dtype=float)
        regret = values.max() - values + 1.0
        j = ready.pop(int(rng.choice(len(ready), p=regret / regret.sum())))
        out.append(j)
        for s in acts.successors(j):
            indeg[s] -= 1
            if indeg[s] == 0:
                ready.append(int(s))
    return justified(problem, out)


def justified(problem: Problem, order: list[int] | IntArray) -> Plan:
    """The list after forward-backward improvement: never a longer schedule, often shorter."""
    return with_list(problem, activities(problem).justify(order))


def shift(problem: Problem, plan: Plan, rng: np.random.Generator) -> Plan | None:
    """Move one activity elsewhere between its last predecessor and its first successor."""
    acts = activities(problem)
    order = activity_list(problem, plan)
    if not order:
        return None
    position = {j: i for i, j in enumerate(order)}
    j = int(rng.integers(acts.n))
    low = max((position[int(p)] for p in acts.predecessors(j)), default=-1) + 1
    high = min((position[int(s)] for s in acts.successors(j)), default=acts.n) - 1
    if high <= low:
        return None
    order.remove(j)
    target = int(rng.integers(low, high + 1))
    order.insert(target, j)
    return justified(problem, order)


def one_point(problem: Problem, a: Plan, b: Plan, rng: np.random.Generator) -> Plan | None:
    """The first ``q`` activities of ``a``, then the rest in ``b``'s order (precedence kept)."""
    first, second = activity_list(problem, a), activity_list(problem, b)
    q = int(rng.integers(1, len(first)))
    head = first[:q]
    taken = set(head)
    return justified(problem, head + [j for j in second if j not in taken])


def two_point(problem: Problem, a: Plan, b: Plan, rng: np.random.Generator) -> Plan | None:
    """``a``'s head, ``b``'s middle, ``a``'s tail, each in its own parent's order."""
    first, second = activity_list(problem, a), activity_list(problem, b)
    q1, q2 = sorted(int(x) for x in rng.integers(1, len(first), size=2))
    head = first[:q1]
    taken = set(head)
    middle = [j for j in second if j not in taken][: q2 - q1]
    taken.update(middle)
    return justified(problem, head + middle + [j for j in first if j not in taken])


ACTIVITY_LIST = OperatorSet(
    mutations=((shift, 1.0),),
    crossovers=((one_point, 1.0), (two_point, 1.0)),
    crossover_rate=0.9,
    initial=sample_list,
)
"""The operator mix for fixed task sets such as PSPLIB instances: only the activity list evolves."""
