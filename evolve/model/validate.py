"""The validator: every rule a plan must satisfy before it may run.

A pure function of (problem, plan). It never stops at the first error: a search
needs to know *how* wrong a candidate is, and a person needs every fix at once.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from evolve.model.evaluation import holds, inputs_resolver
from evolve.model.expression import ExpressionError, parse_expression
from evolve.model.graph import find_cycle, levels, successors, topological_order, upstream
from evolve.model.keys import FIELDS, unknown_fields
from evolve.model.plan import REF, Plan, Task, parse_ref, tested_in_text
from evolve.model.problem import Policy, Problem, Tool


@dataclass(frozen=True)
class PlanError:
    """One broken rule. ``task`` is the offending task's id, or ``None`` for plan-wide rules."""

    rule: str
    message: str
    task: str | None = None

    def __str__(self) -> str:
        if not self.task or self.message.startswith(f"{self.task} "):
            return self.message  # a message that names its task already reads as it is
        return f"{self.task}: {self.message}"


PlanStatus = Literal["ready", "blocked"]


def plan_status(errors: Sequence[PlanError]) -> PlanStatus:
    """``ready`` when the plan may run as it is, ``blocked`` while any rule is broken (what
    ``evolve validate`` reports, as the evidence-plan convention names it)."""
    return "blocked" if errors else "ready"


def evidence_plan(plan: Plan, errors: Sequence[PlanError]) -> dict[str, Any]:
    """The plan as an evidence plan (what ``evolve validate --evidence-out`` writes): its status
    (``ready`` / ``blocked``), one item per task (its id, the change it makes, the evidence it
    rests on, its dependencies, its proof, its wave) and the errors that block it. A wave is a
    dependency level: wave 1 needs nothing, wave ``n`` waits for a task of wave ``n - 1``; a task
    on a cycle has none (``null``)."""
    deps = plan.dependency_map()
    wave = levels(topological_order(deps), deps)
    items = [{"id": t.id, "change": t.name or t.tool, "tool": t.tool, "evidence": list(t.evidence),
              "depends_on": list(t.deps), "proof": list(t.proof),
              "wave": wave[t.id] + 1 if t.id in wave else None} for t in plan.tasks]
    waves: dict[int, list[str]] = {}
    for task in plan.tasks:
        if task.id in wave:
            waves.setdefault(wave[task.id] + 1, []).append(task.id)
    return {"status": plan_status(errors), "items": items,
            "waves": [waves[n] for n in sorted(waves)],
            "errors": [{"rule": e.rule, "task": e.task, "message": e.message} for e in errors]}


def validate(problem: Problem, plan: Plan, facts: Mapping[str, Any] | None = None) -> list[PlanError]:
    """Every error in ``plan`` against ``problem``; an empty list means the plan may run.

    ``facts``: the run's values of initial facts (the request's order id, account, ...), when a
    run is in hand; a task input bound to a literal of a fact's name must then equal it."""
    errors: list[PlanError] = []
    tasks = plan.by_id()
    errors += check_ids(plan)
    errors += check_deps(plan, tasks)
    errors += check_cycles(plan, tasks)
    for task in plan.tasks:
        errors += check_task(problem, task, tasks)
        errors += check_resources(task, facts or {})
        errors += check_conditions(task)
        errors += check_evidence(problem, task)
    errors += check_policy(problem, plan, tasks)
    errors += check_write_order(problem, plan, tasks)
    errors += check_limits(problem, plan)
    errors += check_template(problem, tasks)
    errors += check_priority(plan, tasks)
    return errors


def check_ids(plan: Plan) -> Iterable[PlanError]:
    seen: set[str] = set()
    for task in plan.tasks:
        if task.id in seen:
            yield PlanError("unique-id", f"task id {task.id!r} is used more than once", task.id)
        seen.add(task.id)


def check_deps(plan: Plan, tasks: dict[str, Task]) -> Iterable[PlanError]:
    for task in plan.tasks:
        for dep in task.deps:
            if dep not in tasks:
                yield PlanError("dep-exists", f"depends on missing task {dep!r}", task.id)


def check_cycles(plan: Plan, tasks: dict[str, Task]) -> Iterable[PlanError]:
    for tid, task in tasks.items():
        if tid in task.deps:
            yield PlanError("no-cycle", f"dependency cycle: {tid} -> {tid} (depends on itself)", tid)
    deps = plan.dependency_map()
    order = topological_order(deps)
    if len(order) == len(deps):
        return
    placed = set(order)
    stuck = [tid for tid in tasks if tid not in placed]
    cycle = find_cycle({tid: deps[tid] for tid in stuck})
    on_cycle = set(cycle)
    behind = [tid for tid in stuck if tid not in on_cycle]
    message = "dependency cycle: " + " -> ".join([*cycle, cycle[0]])
    if behind:
        message += f" (blocked behind it: {', '.join(behind)})"
    yield PlanError("no-cycle", message, None)


def check_task(problem: Problem, task: Task, tasks: dict[str, Task]) -> Iterable[PlanError]:
    tool = problem.tools.get(task.tool)
    if tool is None:
        yield PlanError("tool-registered", f"unknown tool {task.tool!r}", task.id)
    else:
        if not problem.scope_granted(tool.scope):
            yield PlanError("scope-granted", f"tool {tool.name} needs scope {tool.scope!r}, not granted",
                            task.id)
        for out in task.outputs:
            if out not in tool.outputs:
                yield PlanError("output-declared",
                                f"declares output {out!r} that {tool.name} does not produce", task.id)
        for fact in tool.inputs:
            if fact not in task.inputs:
                yield PlanError("input-bound", f"input {fact!r} of {tool.name} is not bound", task.id)
                continue
            ref = parse_ref(task.inputs[fact])
            if ref is None or ref.fact != fact:
                yield PlanError(
                    "input-bound",
                    f"input {fact!r} must be bound to ${fact} or $<task>.{fact}, got {task.inputs[fact]!r}",
                    task.id,
                )
        if tool.risk == "write" and not task.idempotency_key:
            yield PlanError("idempotency-key", f"write task ({tool.name}) has no idempotency_key", task.id)
        elif tool.risk == "write" and (unknown := unknown_fields(task.idempotency_key or "", tool)):
            yield PlanError("idempotency-key", f"idempotency_key field {{{unknown[0]}}} is none of "
                            f"{', '.join(FIELDS)} nor an input of {tool.name}", task.id)
    initial = problem.initial_set()
    for tested in (tid for text in (task.when or "", *task.assumes) for tid in tested_in_text(text)):
        if tested not in tasks:
            yield PlanError("ref-task", f"failed/status(${tested}) tests missing task {tested!r}", task.id)
        elif tested not in task.deps:
            yield PlanError("ref-dep", f"failed/status(${tested}) tests {tested}, which is not among "
                            "its deps", task.id)
    for ref in task.refs():
        if ref.task is None:
            if ref.fact not in initial:
                yield PlanError("ref-initial", f"${ref.fact} is not an initial fact", task.id)
            continue
        source = tasks.get(ref.task)
        if source is None:
            yield PlanError("ref-task", f"{ref} reads missing task {ref.task!r}", task.id)
            continue
        if ref.task not in task.deps:
            yield PlanError("ref-dep", f"{ref} reads {ref.task}, which is not among its deps", task.id)
        produced = produced_by(problem, source)
        if produced is not None and ref.fact not in produced:
            yield PlanError("ref-output", f"{ref}: task {ref.task} does not output {ref.fact!r}", task.id)


def check_resources(task: Task, facts: Mapping[str, Any]) -> Iterable[PlanError]:
    """Resource ids match the request: an input bound to a literal that names a fact the run
    has (``order_id: 8473``) must be the run's value of it (8472). A plan for one order that
    reads another is refused, whoever wrote it; ``8472`` and ``"8472"`` name the same id."""
    for key, value in task.inputs.items():
        known = facts.get(key)
        if known is None or parse_ref(value) is not None:
            continue
        if value != known and str(value) != str(known):
            yield PlanError("resource-mismatch", f"input {key!r} is {value!r}, but this run is for "
                            f"{key} {known!r}", task.id)


def check_conditions(task: Task) -> list[PlanError]:
    """``when`` and every ``assumes`` must parse in the condition language (their references are
    checked with the inputs', in :func:`check_task`)."""
    found: list[PlanError] = []
    conditions = [("when", task.when)] if task.when is not None else []
    conditions += [(f"assumes[{i}]" if len(task.assumes) > 1 else "assumes", text)
                   for i, text in enumerate(task.assumes)]
    for key, text in conditions:
        try:
            parse_expression(text)
        except ExpressionError as exc:
            found.append(PlanError("expression", f"{key}: {exc}", task.id))
    return found


def check_evidence(problem: Problem, task: Task) -> list[PlanError]:
    """Under ``policy.require_evidence`` a task cites repository evidence and one exact check."""
    return missing_evidence(task) if problem.policy.require_evidence else []


def missing_evidence(task: Task) -> list[PlanError]:
    """What :func:`check_evidence` reports of ``task`` when the policy asks for evidence."""
    found = []
    if not any(item.strip() for item in task.evidence):
        found.append(PlanError("evidence", f"{task.id} has no repository evidence", task.id))
    if not any(item.strip() for item in task.proof):
        found.append(PlanError("proof", f"{task.id} has no proof command", task.id))
    return found


def produced_by(problem: Problem, task: Task) -> tuple[str, ...] | None:
    """The facts a task makes: its declared outputs, else all its tool's; ``None`` if unknown tool."""
    tool = problem.tools.get(task.tool)
    if tool is None:
        return None
    return task.outputs or tool.outputs


def check_policy(problem: Problem, plan: Plan, tasks: dict[str, Task]) -> Iterable[PlanError]:
    if not problem.policy.write_requires_approval and not problem.policy.approval_required:
        return
    deps = {tid: [d for d in t.deps if d in tasks] for tid, t in tasks.items()}
    approved = approved_tasks(problem, tasks, deps)
    for task in plan.tasks:
        tool = problem.tools.get(task.tool)
        if tool is None or task.id in approved:
            continue
        rule = approval_rule(problem.policy, tool, task.inputs)
        if rule == "write-approval":
            yield PlanError(rule, "write task does not depend on an approval task", task.id)
        elif rule == "approval-threshold":
            yield PlanError(rule, f"{tool.name} needs an approval where "
                            f"{problem.policy.threshold(tool.name)} can hold, and no approval task "
                            "is upstream", task.id)


ApprovalRule = Literal["write-approval", "approval-threshold"]


def approval_rule(policy: Policy, tool: Tool, inputs: Mapping[str, Any] | None = None
                  ) -> ApprovalRule | None:
    """The rule by which a task of ``tool`` bound to ``inputs`` needs an approval upstream
    (``None``: it needs none). The one gate the validator, the compiled count, the search's
    repairs and the problem's feasibility check all read, so that what the search calls
    feasible is what ``evolve validate`` accepts. Without ``inputs`` (the search's tasks bind
    every input to a reference) a threshold counts wherever it can hold on unknown values."""
    if tool.risk != "write":
        return None
    if policy.write_requires_approval:
        return "write-approval"
    condition = policy.threshold(tool.name)
    if condition is not None and threshold_can_hold(condition, inputs or {}):
        return "approval-threshold"
    return None


def threshold_can_hold(condition: str, inputs: Mapping[str, Any]) -> bool:
    """Whether a threshold may hold for a task whose inputs are known only as the plan binds
    them: it can unless it is false on the task's literal inputs (a reference is unknown)."""
    literal = {key: value for key, value in inputs.items() if parse_ref(value) is None}
    try:
        return holds(parse_expression(condition), inputs_resolver(literal))
    except ExpressionError:
        return True


def written_object(problem: Problem, task: Task) -> str | None:
    """The object ``task`` writes (its tool's ``writes`` with each ``$input`` replaced by the
    task's binding of it), or ``None``."""
    tool = problem.tools.get(task.tool)
    if tool is None or tool.risk != "write" or tool.writes is None:
        return None
    return bound_object(tool.writes, task.inputs)


def bound_object(writes: str, inputs: Mapping[str, Any]) -> str:
    """A ``writes`` template with each ``$input`` replaced by its binding in ``inputs``."""
    def bound(match: re.Match[str]) -> str:
        if match.group(2) is not None:
            return match.group(0)
        return str(inputs.get(match.group(1), match.group(0)))

    return REF.sub(bound, writes)


def may_collide(a: str, b: str) -> bool:
    """Whether two written objects may be the same at run time: equal, or equal up to the
    first reference either holds (a reference can take any value)."""
    if a == b:
        return True
    cut_a, cut_b = a.find("$"), b.find("$")
    if cut_a < 0 and cut_b < 0:
        return False
    cut = min(c for c in (cut_a, cut_b) if c >= 0)
    return a[:cut] == b[:cut]


def check_write_order(problem: Problem, plan: Plan, tasks: dict[str, Task]) -> Iterable[PlanError]:
    """Two tasks that may write the same object are ordered by an edge (rule ``write-order``):
    otherwise they may run at once, and which write stands is a race."""
    deps = {tid: [d for d in t.deps if d in tasks] for tid, t in tasks.items()}
    for first, obj, second, other in unordered_writes(writers_of(problem, plan), deps):
        yield PlanError("write-order", f"may write {other} as {first.id} does ({obj}), and no "
                        "edge orders them", second.id)


def writers_of(problem: Problem, plan: Plan) -> list[tuple[Task, str]]:
    """Each task that writes a known object, with the object (:func:`written_object`), in plan
    order."""
    return [(t, obj) for t in plan.tasks if (obj := written_object(problem, t)) is not None]


def unordered_writes(writers: Sequence[tuple[Task, str]], deps: Mapping[str, Sequence[str]]
                     ) -> Iterable[tuple[Task, str, Task, str]]:
    """``(first, object, second, object)`` for each two of ``writers`` (in their order) that
    may write the same object (:func:`may_collide`) with neither upstream of the other in
    ``deps``: what rule ``write-order`` reports."""
    for i, (first, obj) in enumerate(writers):
        for second, other in writers[i + 1:]:
            if may_collide(obj, other) and first.id not in upstream(second.id, deps) \
                    and second.id not in upstream(first.id, deps):
                yield first, obj, second, other


def write_order_edges(problem: Problem, plan: Plan,
                      edges: Iterable[tuple[str, str]]) -> set[tuple[str, str]]:
    """The ``(task, dep)`` edges among ``edges`` that carry rule ``write-order``: ``task`` may
    write what ``dep`` or a task upstream of it may write (the edge orders the two writes), or
    the edge is needed, for without it two writes that may collide would be unordered (it is
    the only link, through tasks that write nothing, between them).

    What :func:`~evolve.fitness.builtin.redundant_deps` must not count: such an edge makes a
    task wait for work the plan's validity needs."""
    tasks = plan.by_id()
    writers = writers_of(problem, plan)
    if not any(may_collide(obj, other) for i, (_, obj) in enumerate(writers)
               for _, other in writers[i + 1:]):
        return set()
    deps = {tid: [d for d in t.deps if d in tasks] for tid, t in tasks.items()}
    objects: dict[str, list[str]] = {}
    for task, obj in writers:
        objects.setdefault(task.id, []).append(obj)
    unordered = sum(1 for _ in unordered_writes(writers, deps))
    carrying: set[tuple[str, str]] = set()
    for tid, dep in dict.fromkeys(edges):
        if tid in objects and any(
                may_collide(mine, theirs) for up in ({dep} | upstream(dep, deps)) - {tid}
                for theirs in objects.get(up, ()) for mine in objects[tid]):
            carrying.add((tid, dep))
            continue
        without = {**deps, tid: [d for d in deps.get(tid, ()) if d != dep]}
        if sum(1 for _ in unordered_writes(writers, without)) > unordered:
            carrying.add((tid, dep))
    return carrying


def approval_edges(problem: Problem, plan: Plan,
                   edges: Iterable[tuple[str, str]]) -> set[tuple[str, str]]:
    """The ``(task, dep)`` edges among ``edges`` without which a write that has an approval
    upstream would lose it: the approval reaches the write through ``task``, which is not a
    write (``approve -> check -> write``: the edge ``check -> approve`` carries no data, yet rule
    ``write-approval`` needs it).

    What :func:`~evolve.fitness.builtin.redundant_deps` must not count, as with
    :func:`write_order_edges`. Only an edge whose ``dep`` is an approval or approved can carry
    one, so the others cost nothing."""
    tasks = plan.by_id()
    deps = {tid: [d for d in t.deps if d in tasks] for tid, t in tasks.items()}
    approved = approved_tasks(problem, tasks, deps)

    def risk(tid: str) -> str | None:
        tool = problem.tools.get(tasks[tid].tool)
        return None if tool is None else tool.risk

    writes = {tid for tid in approved if risk(tid) == "write"}
    carrying: set[tuple[str, str]] = set()
    for tid, dep in dict.fromkeys(edges):
        if not writes or (dep not in approved and risk(dep) != "approval"):
            continue
        without = {**deps, tid: [d for d in deps.get(tid, ()) if d != dep]}
        if not writes <= approved_tasks(problem, tasks, without):
            carrying.add((tid, dep))
    return carrying


def approved_tasks(problem: Problem, tasks: Mapping[str, Task],
                   deps: Mapping[str, Sequence[str]]) -> set[str]:
    """The tasks that have an approval task among their :func:`~evolve.model.graph.upstream` in
    ``deps``: ``tid in approved_tasks(...)`` is ``any(approval for up in upstream(tid, deps))``.

    One sweep down from every approval, each task reached once, instead of one
    walk up from every write: a plan of many writes stays linear.
    """
    succ = successors(deps)
    todo = [nxt for tid, task in tasks.items()
            if tid in succ and (tool := problem.tools.get(task.tool)) is not None
            and tool.risk == "approval"
            for nxt in succ[tid]]
    reached: set[str] = set()
    while todo:
        tid = todo.pop()
        if tid not in reached:
            reached.add(tid)
            todo.extend(succ[tid])
    return reached


def check_limits(problem: Problem, plan: Plan) -> Iterable[PlanError]:
    limit = problem.limits.max_tasks
    if limit is not None and len(plan.tasks) > limit:
        yield PlanError("max-tasks", f"{len(plan.tasks)} tasks, more than max_tasks={limit}")


def check_template(problem: Problem, tasks: Mapping[str, Task]) -> Iterable[PlanError]:
    template = problem.template
    if not isinstance(template, Plan):
        return
    for kept in template.tasks:
        task = tasks.get(kept.id)
        if task is None or task.tool != kept.tool:
            yield PlanError("template", f"template task {kept.id} ({kept.tool}) is missing", kept.id)
        elif not set(kept.deps) <= set(task.deps):
            lost = sorted(set(kept.deps) - set(task.deps))
            yield PlanError("template", f"template dependencies dropped: {', '.join(lost)}", kept.id)


def check_priority(plan: Plan, tasks: Mapping[str, object]) -> Iterable[PlanError]:
    if plan.priority is None:
        return
    for tid in plan.priority:
        if tid not in tasks:
            yield PlanError("priority", f"priority names missing task {tid!r}")
