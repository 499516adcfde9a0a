"""An HTN domain as a planning problem, and a decomposition as the usual task graph.

Every operator becomes a tool of the problem (its duration, cost, risk, scope
and resource use; the keys its guard requires as inputs, the keys it sets as
outputs), so the validator, the scheduler, every objective and the report work
on HTN plans unchanged. A plan's tasks are the decomposition's steps; their
dependencies are what the steps' preconditions and effects imply (a reader
waits for the last writer of what it reads, a writer for the readers and the
writer before it) plus the order of ordered methods' subtasks, reduced to the
edges that are not implied by others. A last, zero-duration ``goal`` task
reads the final value of every key the plan set: it produces the problem's one
criterion, so a plan is complete exactly when it decomposes the goal.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path

from evolve import defaults
from evolve.model.graph import topological_order
from evolve.model.plan import Plan, Task
from evolve.model.problem import RISKS, Problem, Risk, Tool
from evolve.problems.htn.decomposition import Decomposition, Step
from evolve.problems.htn.domain import Domain, Operator, positive_keys, read_keys
from evolve.problems.htn.reader import domain_from_dict, read_domain
from evolve.problems.htn.world import plan_verdict

GOAL_TASK = "goal"
"""The id of the plan's last task, which marks the goal decomposed."""


GOAL_FACT = "__htn_decomposed__"
"""The problem's one criterion, the goal marker's output: a fact name (what a criterion is), which
no HDDL predicate can make (those start with a letter) and a domain's own state may not hold."""


def goal_tool(domain: Domain) -> str:
    """The goal marker's tool name (``htn:<goal>``): the plan's last task runs it."""
    return f"htn:{domain.goal}"


@dataclass(frozen=True)
class HtnProblem(Problem):
    """A :class:`Problem` that carries its HTN domain, so ``evolve run`` picks the HTN search."""

    domain: Domain | None = field(default=None, compare=False)

    def __hash__(self) -> int:
        return Problem.__hash__(self)

    def htn(self) -> Domain:
        if self.domain is None:
            raise ValueError("an HTN problem without its domain")
        return self.domain

    def goal_unmet(self, plan: Plan) -> list[str]:
        """Why ``plan``'s operator steps (in the plan's order when its deps allow it, else in
        an order they allow) do not reach the domain's goal, judged by
        :func:`~evolve.problems.htn.world.plan_verdict`, which shares nothing with the planner:
        the goal marker task alone makes the criterion, never the goal."""
        if self.domain is None:
            return []
        tasks = plan.by_id()
        listed = [t.id for t in plan.tasks]
        seen: set[str] = set()
        in_order = True
        for task in plan.tasks:
            if any(d in tasks and d not in seen for d in task.deps):
                in_order = False
                break
            seen.add(task.id)
        order = listed if in_order else topological_order(plan.dependency_map())
        steps = [tasks[tid].tool for tid in order if tasks[tid].tool in self.domain.operators]
        verdict = plan_verdict(self.domain, steps)
        return [] if verdict.holds else [verdict.reason]


def tool_of(operator: Operator) -> Tool:
    risk: Risk = next((r for r in RISKS if r == operator.risk), "read")
    description = operator.description or (f"runs {operator.tool}" if operator.tool else "")
    return Tool(name=operator.name, duration=operator.duration, inputs=positive_keys(operator.pre),
                outputs=tuple(operator.effects.set), scope=operator.scope, risk=risk, cost=operator.cost,
                uses=dict(operator.uses), llm_calls=operator.llm_calls, description=description)


def htn_problem(domain: Domain, catalog: Problem) -> HtnProblem:
    """The planning problem of ``domain``; ``catalog`` gives scopes, limits, resources and policy."""
    tools = {name: tool_of(op) for name, op in domain.operators.items()}
    if GOAL_FACT in domain.state:
        raise ValueError(f"{domain.source}: htn.state.{GOAL_FACT}: the goal marker's fact; a domain "
                         "may not hold it")
    marker = goal_tool(domain)
    tools[marker] = Tool(name=marker, duration=0.0, outputs=(GOAL_FACT,),
                         description=f"marks {domain.goal} decomposed")
    for op in domain.operators.values():
        if GOAL_FACT in op.effects.set or GOAL_FACT in op.effects.unset:
            raise ValueError(f"{domain.source}: htn.operators.{op.name}.effects: {GOAL_FACT!r} is "
                             "the goal marker's fact; only the goal marker sets it")
        for res, amount in op.uses.items():
            if res not in catalog.resources:
                raise ValueError(f"{domain.source}: htn.operators.{op.name}.uses.{res}: resource {res!r} "
                                 "is not declared under 'resources'")
            if amount > catalog.resources[res]:
                raise ValueError(f"{domain.source}: htn.operators.{op.name}.uses.{res}: needs {amount:g} "
                                 f"but the capacity of {res!r} is {catalog.resources[res]:g}")
    return HtnProblem(tools=tools, initial=tuple(domain.state), criteria=(GOAL_FACT,),
                      scopes=catalog.scopes, limits=catalog.limits, resources=dict(catalog.resources),
                      policy=catalog.policy, name=domain.name, objective=f"decompose {domain.goal}",
                      domain=domain)


def load_htn_problem(path: str | Path) -> HtnProblem:
    """Read an HTN domain file as a problem."""
    domain, catalog = read_domain(path)
    return htn_problem(domain, catalog)


def htn_problem_from_dict(data: object, source: str = "<domain>") -> HtnProblem:
    domain, catalog = domain_from_dict(data, source)
    return htn_problem(domain, catalog)


def task_id(i: int) -> str:
    return f"t{i + 1}"


def to_plan(domain: Domain, decomposition: Decomposition) -> Plan:
    """The task graph of a decomposition (see the module docstring)."""
    steps = decomposition.steps
    ops = [domain.operators[s.operator] for s in steps]
    preds: list[set[int]] = [set() for _ in steps]
    bound: list[dict[str, int | None]] = [{} for _ in steps]
    last_writer: dict[str, int] = {}
    readers: dict[str, list[int]] = {}
    for i, op in enumerate(ops):
        for key in read_keys(op.pre):
            if key in last_writer:
                preds[i].add(last_writer[key])
            readers.setdefault(key, []).append(i)
        for key in positive_keys(op.pre):
            bound[i][key] = last_writer.get(key)
        for key in op.effects.writes():
            preds[i].update(r for r in readers.get(key, ()) if r != i)
            if key in last_writer:
                preds[i].add(last_writer[key])
            last_writer[key] = i
            readers[key] = []
    order_edges(steps, preds)
    final = {k: w for k, w in last_writer.items() if k in decomposition.state}
    goal_preds = set(final.values()) | {i for i in range(len(steps))
                                        if not any(i in p for p in preds)}
    tasks = []
    ancestors: list[int] = []
    for i, op in enumerate(ops):
        keep = essential(preds[i], {w for w in bound[i].values() if w is not None}, ancestors)
        inputs = {k: f"${k}" if w is None else f"${task_id(w)}.{k}" for k, w in bound[i].items()}
        tasks.append(Task(id=task_id(i), tool=op.name, deps=tuple(task_id(d) for d in keep),
                          inputs=inputs, idempotency_key=defaults.IDEMPOTENCY_KEY if op.risk == "write"
                          else None))
    keep = essential(goal_preds, set(final.values()), ancestors)
    goal_inputs = {k: f"${task_id(w)}.{k}" for k, w in sorted(final.items())}
    tasks.append(Task(id=GOAL_TASK, tool=goal_tool(domain), deps=tuple(task_id(d) for d in keep),
                      inputs=goal_inputs))
    return Plan(tasks=tuple(tasks))


def order_edges(steps: tuple[Step, ...], preds: list[set[int]]) -> None:
    """Subtasks of an ordered method run in order: every step of one subtask before every step
    of the next (the reduction below drops the edges this makes redundant)."""
    groups: dict[str, dict[int, list[int]]] = {}
    for i, step in enumerate(steps):
        for key, ordered, child in step.trail:
            if ordered:
                groups.setdefault(key, {}).setdefault(child, []).append(i)
    for children in groups.values():
        blocks = [children[c] for c in sorted(children)]
        for before, after in itertools.pairwise(blocks):
            for j in after:
                preds[j].update(before)


def essential(preds: set[int], required: set[int], ancestors: list[int]) -> list[int]:
    """The edges of ``preds`` no other kept edge implies (``required`` ones, which carry data,
    always stay); appends the new task's ancestor set (a bitmask) to ``ancestors``."""
    covered = 0
    keep = set(required)
    for p in required:
        covered |= ancestors[p] | (1 << p)
    for p in sorted(preds - required, reverse=True):
        if not (covered >> p) & 1:
            keep.add(p)
            covered |= ancestors[p] | (1 << p)
    ancestors.append(covered)
    return sorted(keep)
