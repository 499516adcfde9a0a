"""What a plan achieves: which tasks are sound, which criteria they produce, which tasks matter.

Shared by the fitness functions and the mutation operators, so that "complete"
and "useless" mean the same thing to the judge and to the search.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from evolve.model.graph import topological_order
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
    initial = problem.initial_set()
    made: set[str] = set()
    for task in plan.tasks:  # one pass over the plan, not one per criterion
        if task.id in sound:
            made.update(produced_by(problem, task) or ())
    return [c for c in problem.criteria if c in initial or c in made]


def data_sources(task: Task) -> list[str]:
    """Ids of the tasks whose outputs ``task`` reads (inputs and ``when``)."""
    return [r.task for r in task.refs() if r.task is not None]


def duplicates(plan: Plan) -> dict[str, str]:
    """Tasks that repeat an earlier task exactly (same tool, inputs and condition): id -> original.

    A duplicate adds nothing its original does not already provide, so it serves
    no criterion even when something reads it.
    """
    first: dict[DuplicateKey, str] = {}
    copies: dict[str, str] = {}
    for task in plan.tasks:
        key = duplicate_key(task)
        if key in first:
            copies[task.id] = first[key]
        else:
            first[key] = task.id
    return copies


DuplicateKey = tuple[str, object, "str | None"]


def duplicate_key(task: Task) -> DuplicateKey:
    """What :func:`duplicates` compares of two tasks: tool, inputs (see :func:`inputs_key`), condition."""
    return (task.tool, inputs_key(task.inputs), task.when)


def inputs_key(inputs: Mapping[str, Any]) -> object:
    """What :func:`duplicates` compares of two tasks' inputs: ``repr(sorted(inputs.items()))``.

    When every key and value is a plain ``str`` (references: the usual case) the
    sorted items themselves are the key, which is equal exactly when that
    ``repr`` is (``repr`` of a ``str`` is injective) and costs far less; anything
    else (literals such as ``1`` and ``1.0``, equal but not the same text) keeps
    the ``repr``. The two kinds never meet, as a tuple never equals a string.
    """
    items = sorted(inputs.items())
    if all(type(key) is str and type(value) is str for key, value in items):
        return tuple(items)
    return repr(items)


def contributing_tasks(problem: Problem, plan: Plan) -> set[str]:
    """Tasks that serve some criterion: the first producer of each criterion, every task whose
    data they read (transitively), the approvals their writes depend on, and template tasks;
    but not :func:`duplicates` of another task."""
    tasks = plan.by_id()
    deps = {tid: [d for d in t.deps if d in tasks] for tid, t in tasks.items()}
    first = first_producers(problem, plan)
    todo = [first[c] for c in problem.criteria if c in first]
    template = problem.template
    if isinstance(template, Plan):
        todo.extend(t.id for t in template.tasks if t.id in tasks)
    serving: set[str] = set()
    climbed: set[str] = set()
    while todo:
        tid = todo.pop()
        if tid in serving or tid not in tasks:
            continue
        serving.add(tid)
        task = tasks[tid]
        todo.extend(data_sources(task))
        tool = problem.tools.get(task.tool)
        if tool is not None and tool.risk == "write":
            todo.extend(approvals_upstream(problem, tasks, deps, tid, climbed))
    return serving - set(duplicates(plan))


def first_producers(problem: Problem, plan: Plan) -> dict[str, str]:
    """Each fact some task produces -> the first such task in plan order (one pass over the plan:
    ``first[f]`` is ``producers_of(problem, plan, f)[0].id``)."""
    first: dict[str, str] = {}
    for task in plan.tasks:
        for fact in produced_by(problem, task) or ():
            first.setdefault(fact, task.id)
    return first


def approvals_upstream(problem: Problem, tasks: Mapping[str, Task], deps: Mapping[str, Sequence[str]],
                       tid: str, climbed: set[str]) -> list[str]:
    """The approval tasks :func:`~evolve.model.graph.upstream` of ``tid`` that no earlier call
    with the same ``climbed`` set has returned.

    ``climbed`` holds every task already walked through: the whole upstream of
    such a task was walked then, and its approvals returned, so the walk stops
    there. Over all the writes of a plan every task is walked once, instead of
    once per write; the union of what the calls return is the union of their
    approvals upstream, which is all :func:`contributing_tasks` needs.
    """
    found: list[str] = []
    todo = list(deps.get(tid, ()))
    while todo:
        cur = todo.pop()
        if cur in climbed or cur not in deps:
            continue
        climbed.add(cur)
        tool = problem.tools.get(tasks[cur].tool)
        if tool is not None and tool.risk == "approval":
            found.append(cur)
        todo.extend(deps[cur])
    return found
