"""A state-aware estimate of the work a task network still needs: the relaxed composition.

The planner's progression search is guided by the heuristic PANDA's engine uses
by default (Höller et al., "A generic method to guide HTN progression search
with classical heuristics", ICAPS 2018): the hierarchy is compiled into a
delete-free classical problem and its additive cost (h_add) is computed from
the node's state. Every task ``t`` gets a fact *t reached*; an operator is an
action whose preconditions are its precondition's positive facts and whose
effects are the keys it sets plus *op reached* (cost 1); a method is an action
(cost 0) whose preconditions are its guard's positive facts and *s reached* for
each subtask, and whose effect is *task reached*. The estimate of a node is the
sum, over its pending tasks, of the cost of *t reached*.

Why this one: the domain's methods alone say nothing about the state (the
fewest actions a task can take is the same in every state), which leaves a
search blind on the competition's learned and classical-style domains
(Freecell, AssemblyHierarchical), while the relaxation counts the actions a
task's preconditions still need from *this* state. It is a relaxation (deletes,
negative and value tests ignored, every action applicable whenever its positive
facts are), so an infinite cost proves that a task can never be done from the
state: such a node is pruned without search, soundly.

The fixpoint is the generalized Dijkstra over the compiled arrays, in a numba
kernel (one pass over the ground model per distinct state; the planner caches
it per state, and most nodes only decompose, keeping the state).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt
from numba import njit

from evolve.problems.htn.domain import All, Domain, Has, Predicate, Unknown, Value
from evolve.scheduling.kernel import heap_pop, heap_push

IntArray = npt.NDArray[np.int64]
INFINITE = 1 << 40
"""The cost of a fact no relaxed plan reaches (a dead end); sums of finite costs stay far below."""


def positive_facts(pred: Predicate) -> list[str]:
    """The keys ``pred`` needs set (its top-level un-negated ``has`` tests); everything else is
    ignored by the relaxation, which only makes it more optimistic."""
    out: list[str] = []
    todo = [pred]
    while todo:
        item = todo.pop()
        if type(item) is Has:
            out.append(item.key)
        elif type(item) is All:
            todo.extend(reversed(item.items))
    return out


def truthy(value: Value) -> bool:
    return value is not None and value is not False and not isinstance(value, Unknown)


def csr(rows: Sequence[Sequence[int]]) -> tuple[IntArray, IntArray]:
    ptr = np.zeros(len(rows) + 1, dtype=np.int64)
    ptr[1:] = np.cumsum([len(r) for r in rows])
    idx = np.fromiter((i for r in rows for i in r), dtype=np.int64, count=int(ptr[-1]))
    return ptr, idx


class RelaxedComposition:
    """The compiled relaxation of one domain (see the module docstring)."""

    def __init__(self, domain: Domain) -> None:
        facts: dict[str, int] = {}

        def fact(key: str) -> int:
            return facts.setdefault(key, len(facts))

        self.task_fact: dict[str, int] = {}
        names = [*domain.operators, *domain.tasks,
                 *(m.task for m in domain.methods if m.task not in domain.tasks)]
        for name in dict.fromkeys(names):
            self.task_fact[name] = fact("\x00task:" + name)
        pre: list[list[int]] = []
        eff: list[list[int]] = []
        cost: list[int] = []
        for name, op in domain.operators.items():
            pre.append(list(dict.fromkeys(fact(k) for k in positive_facts(op.pre))))
            adds = [fact(k) for k, v in op.effects.set.items() if truthy(v) or isinstance(v, Unknown)]
            eff.append([*dict.fromkeys(adds), self.task_fact[name]])
            cost.append(1 if op.duration > 0 else 0)
        task_fact = self.task_fact
        for method in domain.methods:
            try:
                subtasks = [task_fact[s] for s in method.subtasks]
            except KeyError:
                continue  # names an unknown task: never applicable
            needs = [fact(k) for k in positive_facts(method.pre)]
            pre.append(list(dict.fromkeys(needs + subtasks)) if needs or len(subtasks) > 1 else subtasks)
            eff.append([task_fact[method.task]])
            cost.append(0)
        self.facts = facts
        self.pre_ptr, self.pre_idx = csr(pre)
        self.eff_ptr, self.eff_idx = csr(eff)
        users: list[list[int]] = [[] for _ in facts]
        for unit, needs in enumerate(pre):
            for f in needs:
                users[f].append(unit)
        self.use_ptr, self.use_idx = csr(users)
        self.cost = np.array(cost, dtype=np.int64)
        self.pre_count = np.diff(self.pre_ptr)
        self.free = np.flatnonzero(self.pre_count == 0).astype(np.int64)
        # every push is a start fact (once each) or an effect of a unit firing (once each: a
        # unit fires when its last precondition settles, or at the start when it has none), so
        # the queue never holds more than this; the kernels do not check it
        self.heap_size = int(self.eff_ptr[-1]) + len(facts) + 1

    def costs(self, state: Mapping[str, Value]) -> Costs:
        """The relaxed costs from ``state``, settled lazily: :meth:`estimate` runs the fixpoint
        only as far as the tasks it is asked about need (facts settle cheapest first, and a
        network's tasks are usually far cheaper than most of the ground model)."""
        start = np.array([self.facts[k] for k, v in state.items() if k in self.facts and truthy(v)],
                         dtype=np.int64)
        n_units = self.cost.shape[0]
        costs = Costs(np.full(len(self.facts), INFINITE, dtype=np.int64), np.zeros(len(self.facts), np.bool_),
                      self.pre_count.copy(), np.zeros(n_units, dtype=np.int64),
                      np.empty(self.heap_size, dtype=np.int64), np.empty(self.heap_size, dtype=np.int64))
        costs.size = seed(start, self.free, self.eff_ptr, self.eff_idx, self.cost, costs.fact_cost,
                          costs.keys, costs.items)
        return costs

    def estimate(self, costs: Costs, tasks: Sequence[str]) -> int:
        """The summed cost of ``tasks`` (:data:`INFINITE`: a dead end), settling what they need."""
        targets = np.array([self.task_fact[name] for name in tasks], dtype=np.int64)
        if costs.size and not costs.settled[targets].all():
            costs.size = settle(targets, costs.fact_cost, costs.settled, costs.waiting, costs.total,
                                costs.keys, costs.items, costs.size, self.use_ptr, self.use_idx,
                                self.eff_ptr, self.eff_idx, self.cost)
        found = costs.fact_cost[targets]
        if (found >= INFINITE).any():
            return INFINITE
        return int(found.sum())


class Costs:
    """One state's relaxed costs while they settle: the kernel's working arrays, kept so that a
    later question about other tasks resumes where the last one stopped."""

    def __init__(self, fact_cost: IntArray, settled: npt.NDArray[np.bool_], waiting: IntArray,
                 total: IntArray, keys: IntArray, items: IntArray) -> None:
        self.fact_cost = fact_cost
        self.settled = settled
        self.waiting = waiting
        self.total = total
        self.keys = keys
        self.items = items
        self.size = 0


@njit(cache=True)  # type: ignore[misc]
def seed(start: IntArray, free: IntArray, eff_ptr: IntArray, eff_idx: IntArray, cost: IntArray,
         fact_cost: IntArray, keys: IntArray, items: IntArray) -> int:
    """The queue at the start: the state's facts at 0, the effects of units needing nothing."""
    size = 0
    for i in range(start.shape[0]):
        f = start[i]
        if fact_cost[f] > 0:
            fact_cost[f] = 0
            size = heap_push(keys, items, size, 0, f)
    for i in range(free.shape[0]):
        u = free[i]
        for j in range(eff_ptr[u], eff_ptr[u + 1]):
            e = eff_idx[j]
            if cost[u] < fact_cost[e]:
                fact_cost[e] = cost[u]
                size = heap_push(keys, items, size, cost[u], e)
    return size


@njit(cache=True)  # type: ignore[misc]
def settle(targets: IntArray, fact_cost: IntArray, settled: npt.NDArray[np.bool_], waiting: IntArray,
           total: IntArray, keys: IntArray, items: IntArray, size: int, use_ptr: IntArray,
           use_idx: IntArray, eff_ptr: IntArray, eff_idx: IntArray, cost: IntArray) -> int:
    """Generalized Dijkstra, resumed, until every target is settled (or the queue is empty):
    facts settle in order of cost; a unit fires when its last precondition settles, offering
    ``cost + sum of its preconditions`` to its effects. Returns the queue's new size."""
    want = np.zeros(fact_cost.shape[0], dtype=np.bool_)
    need = 0
    for i in range(targets.shape[0]):
        t = targets[i]
        if not settled[t] and not want[t]:
            want[t] = True
            need += 1
    while size > 0 and need > 0:
        c, f, size = heap_pop(keys, items, size)
        if settled[f] or c > fact_cost[f]:
            continue
        settled[f] = True
        if want[f]:
            need -= 1
        for j in range(use_ptr[f], use_ptr[f + 1]):
            u = use_idx[j]
            total[u] += c
            waiting[u] -= 1
            if waiting[u] == 0:
                value = total[u] + cost[u]
                for k in range(eff_ptr[u], eff_ptr[u + 1]):
                    e = eff_idx[k]
                    if value < fact_cost[e]:
                        fact_cost[e] = value
                        size = heap_push(keys, items, size, value, e)
    return size


def warm_up() -> None:
    """Compile (or load from numba's cache) the kernels on a one-fact problem."""
    one = np.zeros(1, dtype=np.int64)
    none = np.zeros(0, dtype=np.int64)
    keys, items = np.empty(3, dtype=np.int64), np.empty(3, dtype=np.int64)
    fact_cost = np.full(1, INFINITE, dtype=np.int64)
    size = seed(one, none, np.array([0, 1], dtype=np.int64), one, np.ones(1, dtype=np.int64), fact_cost,
                keys, items)
    settle(one, fact_cost, np.zeros(1, np.bool_), np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64),
           keys, items, size, np.array([0, 0], dtype=np.int64), none, np.array([0, 1], dtype=np.int64), one,
           np.ones(1, dtype=np.int64))
