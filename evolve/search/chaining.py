"""Building plans that work: backward chaining from the facts needed to the facts known.

Used to seed the first population (so even catalogs of hundreds of tools start
from complete plans) and by the operators that must repair what they change.
New tasks only ever depend on tasks that already exist, so chaining can never
close a cycle.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from evolve.model.keys import write_key
from evolve.model.plan import Plan, Task, next_task_id, task_refs_deps
from evolve.model.problem import Problem, Tool
from evolve.model.validate import approval_rule, bound_object, may_collide, produced_by, written_object


class Builder:
    """A plan under construction, with an index of which task produces which fact.

    ``excluded`` tasks are never chosen as producers: operators use it to keep a
    task from reading the output of its own descendants.
    """

    def __init__(self, problem: Problem, plan: Plan, rng: np.random.Generator,
                 excluded: Iterable[str] = ()) -> None:
        self.problem = problem
        self.rng = rng
        self.tasks: list[Task] = list(plan.tasks)
        self.priority = plan.priority
        self.excluded = set(excluded)
        self.producer: dict[str, str] = {}
        self.fresh: str | None = None  # the next unused id, once the first new task needs one
        for task in self.tasks:
            self.index(task)

    def index(self, task: Task) -> None:
        for fact in produced_by(self.problem, task) or ():
            self.producer.setdefault(fact, task.id)

    def plan(self) -> Plan:
        if self.priority is None:
            return Plan(tasks=tuple(self.tasks))
        ids = {t.id for t in self.tasks}
        listed = set(self.priority)  # a set: the tuple's `in` made this quadratic in the plan
        priority = tuple([i for i in self.priority if i in ids]
                         + [t.id for t in self.tasks if t.id not in listed])
        return Plan(tasks=tuple(self.tasks), priority=priority)

    def usable_tools(self, tools: Iterable[Tool]) -> list[Tool]:
        """``tools`` whose scope is granted, in a random order."""
        usable = [t for t in tools if self.problem.scope_granted(t.scope)]
        return [usable[i] for i in self.rng.permutation(len(usable))]

    def existing(self, fact: str) -> str | None:
        """A reference to ``fact`` from what is known or already produced, if any."""
        if fact in self.problem.initial_set():
            return f"${fact}"
        tid = self.producer.get(fact)
        if tid is not None and tid not in self.excluded:
            return f"${tid}.{fact}"
        return None

    def available(self) -> set[str]:
        """The facts :meth:`existing` finds a reference to, as one set (to test many tools
        against at once)."""
        made = {f for f, tid in self.producer.items() if tid not in self.excluded}
        return made | self.problem.initial_set()

    def provide(self, fact: str, stack: frozenset[str] = frozenset()) -> str | None:
        """A reference to ``fact``, adding producer tasks as needed; ``None`` if it cannot be made."""
        found = self.existing(fact)
        if found is not None or fact in stack:
            return found
        for tool in self.usable_tools(self.problem.producers(fact)):
            tid = self.add(tool, stack | {fact})
            if tid is not None:
                return f"${tid}.{fact}"
        return None

    def add(self, tool: Tool, stack: frozenset[str] = frozenset()) -> str | None:
        """Add a task running ``tool`` with every input chained; return its id, or ``None``."""
        inputs: dict[str, str] = {}
        for fact in tool.inputs:
            ref = self.provide(fact, stack)
            if ref is None:
                return None
            inputs[fact] = ref
        deps = list(task_refs_deps(inputs))
        if approval_rule(self.problem.policy, tool, inputs) is not None:
            approval = self.approval(stack)
            if approval is None:
                return None
            if approval not in deps:
                deps.append(approval)
        deps += self.earlier_writes(tool, inputs, deps)
        if self.fresh is None:
            self.fresh = next_task_id(Plan(tasks=tuple(self.tasks)))
        tid, self.fresh = self.fresh, f"t{int(self.fresh[1:]) + 1}"
        task = Task(
            id=tid, tool=tool.name, deps=tuple(deps), inputs=inputs,
            idempotency_key=write_key(tool) if tool.risk == "write" else None,
            on_failure=tool.on_failure, retries=tool.retries,
        )
        self.tasks.append(task)
        self.index(task)
        return tid

    def earlier_writes(self, tool: Tool, inputs: dict[str, str], deps: list[str]) -> list[str]:
        """The tasks a new write of ``tool`` must follow because they may write what it writes
        (rule ``write-order``; an excluded task is left out, as a dep on it could close a cycle)."""
        if tool.risk != "write" or tool.writes is None:
            return []
        mine = bound_object(tool.writes, inputs)
        return [task.id for task in self.tasks
                if task.id not in self.excluded and task.id not in deps
                and (other := written_object(self.problem, task)) is not None
                and may_collide(mine, other)]

    def approval(self, stack: frozenset[str]) -> str | None:
        """An approval task to depend on: an existing one, else a new one."""
        for task in self.tasks:
            tool = self.problem.tools.get(task.tool)
            if tool is not None and tool.risk == "approval" and task.id not in self.excluded:
                return task.id
        approvals = [t for t in self.problem.tools.values() if t.risk == "approval"]
        for tool in self.usable_tools(approvals):
            tid = self.add(tool, stack)
            if tid is not None:
                return tid
        return None


def construct(problem: Problem, rng: np.random.Generator, base: Plan | None = None) -> Plan:
    """A plan producing every criterion it can, grown from ``base`` (default: the template)."""
    if base is None:
        base = problem.template if isinstance(problem.template, Plan) else Plan()
    builder = Builder(problem, base, rng)
    for criterion in problem.criteria:
        builder.provide(criterion)
    return builder.plan()
