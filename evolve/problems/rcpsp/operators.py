"""Activity-list operators for problems whose tasks are fixed and only the priority evolves.

These are the operators the RCPSP literature shows to work (Hartmann 1998;
Valls et al. 2005): regret-biased sampling on latest finish times for the first
population, precedence-preserving one- and two-point crossover, a shift
mutation that keeps the list precedence-feasible, and forward-backward
improvement (double justification) of a child. They plug into the general
engine as an :class:`~evolve.search.operators.OperatorSet`.
"""

from __future__ import annotations

import numpy as np

from evolve.model.plan import Plan
from evolve.model.problem import Problem
from evolve.problems.rcpsp.decode import forward_backward_improvement, serial_sgs
from evolve.problems.rcpsp.instance import latest_finishes
from evolve.problems.rcpsp.problem import instance_of
from evolve.search.operators import OperatorSet


def activity_list(problem: Problem, plan: Plan) -> list[int]:
    """The plan's priority as activity indices, completed to a precedence-feasible list."""
    inst = instance_of(problem)
    index = {tid: j for j, tid in enumerate(t.id for t in template(problem).tasks)}
    wanted = [index[tid] for tid in (plan.priority or ()) if tid in index]
    rank = {j: i for i, j in enumerate(wanted)}
    missing = len(rank)
    indeg = np.diff(inst.pred_ptr).copy()
    ready = [j for j in range(inst.n) if indeg[j] == 0]
    out: list[int] = []
    while ready:
        ready.sort(key=lambda j: (rank.get(j, missing), j))
        j = ready.pop(0)
        out.append(j)
        for s in inst.successors(j):
            indeg[s] -= 1
            if indeg[s] == 0:
                ready.append(int(s))
    return out


def template(problem: Problem) -> Plan:
    assert isinstance(problem.template, Plan)
    return problem.template


def with_list(problem: Problem, order: list[int] | np.ndarray) -> Plan:
    tasks = template(problem).tasks
    return Plan(tasks=tasks, priority=tuple(tasks[int(j)].id for j in order))


def sample_list(problem: Problem, rng: np.random.Generator) -> Plan:
    """Regret-based biased random sampling on latest finish times (a first-population plan)."""
    inst = instance_of(problem)
    lft = latest_finishes(inst)
    indeg = np.diff(inst.pred_ptr).copy()
    ready = [j for j in range(inst.n) if indeg[j] == 0]
    out: list[int] = []
    while ready:
        values = np.array([lft[j] for j in ready], dtype=float)
        regret = values.max() - values + 1.0
        j = ready.pop(int(rng.choice(len(ready), p=regret / regret.sum())))
        out.append(j)
        for s in inst.successors(j):
            indeg[s] -= 1
            if indeg[s] == 0:
                ready.append(int(s))
    return justified(problem, out)


def justified(problem: Problem, order: list[int] | np.ndarray) -> Plan:
    """The list after forward-backward improvement: never a longer schedule, often shorter."""
    inst = instance_of(problem)
    starts = serial_sgs(inst, order)
    _, improved, _ = forward_backward_improvement(inst, starts, order)
    return with_list(problem, improved)


def shift(problem: Problem, plan: Plan, rng: np.random.Generator) -> Plan | None:
    """Move one activity elsewhere between its last predecessor and its first successor."""
    inst = instance_of(problem)
    order = activity_list(problem, plan)
    position = {j: i for i, j in enumerate(order)}
    j = int(rng.integers(inst.n))
    low = max((position[int(p)] for p in inst.predecessors(j)), default=-1) + 1
    high = min((position[int(s)] for s in inst.successors(j)), default=inst.n) - 1
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
