"""Dead ends the goal shows: a search node whose remaining tasks can no longer make a goal fact true.

A grounded HDDL problem ends its root method with the step ``__goal__``, whose precondition is
the problem's ``:goal``, so the search learns that a choice was wrong only when that last step
fails, however early the choice was made (Woodworking: the initial task network leaves a part's
colour free, and the planner picks the first colour, plans every part, and backtracks through
all of it when the goal wants another colour). In a total-order network the actions still to
come are exactly those the pending tasks decompose into, so a fact the last step needs that is
false now, and that no operator reachable from a pending task in the task decomposition graph
adds, can never hold when that step runs: the node is a dead end and is not expanded.

The test is sound (it ignores preconditions, deletes and order, so it only ever gives up a node
with no plan below it) and cheap: each task's *reach* (which of the watched facts an operator
below it can add) is computed once per domain by a fixpoint over the graph, as bits of an
integer; a node ORs its tasks' bits, shared along the pending list as the network is.

The watched facts are the positive ``has`` tests of the preconditions of the operators that end
a method of the domain's goal task (``__goal__`` for HDDL). Nothing here knows HDDL. A planner
with a fallback, which can learn methods during a run, does not use it (a learned method would
change what a task reaches).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from evolve.problems.htn.domain import Domain, Method, State, Unknown
from evolve.problems.htn.heuristic import positive_facts
from evolve.problems.htn.nodes import Pending

REACH = "goal_reach"
"""The key under which a :class:`Pending` keeps the OR of its list's reach bits."""


class GoalReach:
    """The watched facts of ``domain`` (see the module docstring) and what each task reaches."""

    def __init__(self, domain: Domain, by_task: Mapping[str, Sequence[Method]]) -> None:
        finals = dict.fromkeys(m.subtasks[-1] for m in by_task.get(domain.goal, ())
                               if m.subtasks and m.subtasks[-1] in domain.operators)
        bit: dict[str, int] = {}
        self.need: dict[str, int] = {}
        """Final operator -> the bits of the facts its precondition needs."""
        for op in finals:
            mask = 0
            for f in positive_facts(domain.operators[op].pre):
                mask |= bit.setdefault(f, 1 << len(bit))
            if mask:
                self.need[op] = mask
        facts = list(bit)
        self.facts = tuple(facts)
        self.reach: dict[str, int] = {}
        """Task or operator -> the bits of the watched facts an operator below it adds."""
        for name, operator in domain.operators.items():
            mask = 0
            for key in operator.effects.set:
                mask |= bit.get(key, 0)
            if mask:
                self.reach[name] = mask
        parents: dict[str, list[str]] = {}
        for task, methods in by_task.items():
            for method in methods:
                for sub in method.subtasks:
                    parents.setdefault(sub, []).append(task)
        work = list(self.reach)
        while work:
            name = work.pop()
            mask = self.reach[name]
            for parent in parents.get(name, ()):
                before = self.reach.get(parent, 0)
                if before | mask != before:
                    self.reach[parent] = before | mask
                    work.append(parent)
        self.bits = tuple(bit.items())
        self.all = (1 << len(facts)) - 1
        self._state: State | None = None
        self._false = 0

    def reached(self, pending: Pending) -> int:
        """The OR of the reach of ``pending`` and every task after it (made once per list
        element, from the first one after it already made, as :attr:`Pending.network` is)."""
        fresh: list[Pending] = []
        task: Pending | None = pending
        while task is not None and REACH not in task.__dict__:
            fresh.append(task)
            task = task.rest
        mask = task.__dict__[REACH] if task is not None else 0
        for item in reversed(fresh):
            mask |= self.reach.get(item.name, 0)
            item.__dict__[REACH] = mask
        return int(mask)

    def false_now(self, state: State) -> int:
        """The bits of the watched facts that do not hold in ``state`` (the last state asked is
        kept: a decomposition keeps its parent's state object)."""
        if state is not self._state:
            mask = self.all
            get = state.get
            for fact, bit in self.bits:  # holds(Has(fact), state), inline: a node's hot path
                value = get(fact)
                if value is not None and value is not False and not isinstance(value, Unknown):
                    mask ^= bit
            self._state, self._false = state, mask
        return self._false

    def dead(self, pending: Pending, state: State) -> str | None:
        """A fact the network's last step needs that no pending task can make true any more
        (so no plan lies below the node), or None."""
        last = pending.network[0][-1]
        need = self.need.get(last)
        if need is None:
            return None
        missing = need & self.false_now(state) & ~self.reached(pending)
        if not missing:
            return None
        return self.facts[(missing & -missing).bit_length() - 1]
