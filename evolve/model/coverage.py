"""What a plan achieves: which tasks are sound, which criteria they produce, which tasks matter.

Shared by the fitness functions and the mutation operators, so that "complete"
and "useless" mean the same thing to the judge and to the search.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from evolve.model.graph import topological_order, upstream
from evolve.model.plan import Plan, Task
from evolve.model.problem import Problem
from evolve.model.validate import PlanError, produced_by


def sound_tasks(plan: Plan, errors: Sequence[PlanError]) -> set[str]:
    """Tasks with no error of their own, off any cycle, and with only sound tasks upstream."""
    tasks = plan.by_id()
    bad = {e.task for e in errors if e.task is not None}
    deps = plan.dependency_map()
    sound: set[str] = set()
    for tid in topological_order(deps):
        intact = len(set(deps[tid])) == len(tasks[tid].deps)
        if tid not in bad and intact and all(d in sound for d in deps[tid]):
            sound.add(tid)
    return sound


def producers_of(problem: Problem, plan: Plan, fact: str, among: Iterable[str] | None = None) -> list[Task]:
    """Tasks (optionally only those in ``among``) whose outputs include ``fact``, in plan order."""
    allowed = None if among is None else set(among)
    return [
        t for t in plan.tasks
        if (allowed is None or t.id in allowed) and fact in (produced_by(problem, t) or ())
    ]


def covered_criteria(problem: Problem, plan: Plan, errors: Sequence[PlanError]) -> list[str]:
    """The criteria that some sound task produces (or that are known from the start)."""
    sound = sound_tasks(plan, errors)
    return [
        c for c in problem.criteria
        if c in problem.initial or producers_of(problem, plan, c, sound)
    ]


def data_sources(task: Task) -> list[str]:
    """Ids of the tasks whose outputs ``task`` reads (inputs and ``when``)."""
    return [r.task for r in task.refs() if r.task is not None]


def duplicates(plan: Plan) -> dict[str, str]:
    """Tasks that repeat an earlier task exactly (same tool, inputs and condition): id -> original.

    A duplicate adds nothing its original does not already provide, so it serves
    no criterion even when something reads it.
    """
    first: dict[tuple[str, str, str | None], str] = {}
    copies: dict[str, str] = {}
    for task in plan.tasks:
        key = (task.tool, repr(sorted(task.inputs.items())), task.when)
        if key in first:
            copies[task.id] = first[key]
        else:
            first[key] = task.id
    return copies


def contributing_tasks(problem: Problem, plan: Plan) -> set[str]:
    """Tasks that serve some criterion: the first producer of each criterion, every task whose
    data they read (transitively), the approvals their writes depend on, and template tasks;
    but not :func:`duplicates` of another task."""
    tasks = plan.by_id()
    deps = {tid: [d for d in t.deps if d in tasks] for tid, t in tasks.items()}
    todo: list[str] = []
    for criterion in problem.criteria:
        found = producers_of(problem, plan, criterion)
        if found:
            todo.append(found[0].id)
    template = problem.template
    if isinstance(template, Plan):
        todo.extend(t.id for t in template.tasks if t.id in tasks)
    serving: set[str] = set()
    while todo:
        tid = todo.pop()
        if tid in serving or tid not in tasks:
            continue
        serving.add(tid)
        task = tasks[tid]
        todo.extend(data_sources(task))
        tool = problem.tools.get(task.tool)
        if tool is not None and tool.risk == "write":
            todo.extend(
                up for up in upstream(tid, deps)
                if (t := problem.tools.get(tasks[up].tool)) is not None and t.risk == "approval"
            )
    return serving - set(duplicates(plan))
