"""PSPLIB instances as planning problems, so ``evolve run j301_1.sm`` just works.

Each job becomes a task that every plan must keep (the problem's template),
with its precedence as dependencies and its demands as its tool's ``uses``.
Only the plan's ``priority`` (an activity list) is left to evolve, and the
engine's serial schedule generation decodes it.
"""

from __future__ import annotations

import functools
from pathlib import Path

from evolve.model.errors import InputError
from evolve.model.plan import Plan, Task
from evolve.model.problem import Problem, Tool
from evolve.problems.rcpsp.instance import RcpspInstance, from_arrays, load_instance

RCPSP_FORMATS = {".sm": "psplib", ".rcp": "patterson"}
"""Scheduling instances read as problems: file suffix -> the psplib package's format name."""


def task_id(j: int) -> str:
    """Task id of activity ``j`` (0-based): PSPLIB's own 1-based job number."""
    return f"j{j + 1}"


def problem_from_instance(inst: RcpspInstance) -> Problem:
    """The planning problem whose template holds every job of ``inst``."""
    resources = {f"R{k + 1}": float(c) for k, c in enumerate(inst.capacities)}
    tools = {
        f"job{j + 1}": Tool(
            name=f"job{j + 1}",
            duration=float(inst.durations[j]),
            uses={f"R{k + 1}": float(d) for k, d in enumerate(inst.demands[j]) if d},
        )
        for j in range(inst.n)
    }
    tasks = tuple(
        Task(id=task_id(j), tool=f"job{j + 1}", deps=tuple(task_id(int(p)) for p in inst.predecessors(j)))
        for j in range(inst.n)
    )
    return Problem(
        tools=tools,
        resources=resources,
        template=Plan(tasks=tasks),
        name=inst.name,
        objective=f"RCPSP instance {inst.name}: minimise the makespan",
    )


def load_rcpsp_problem(path: str | Path) -> Problem:
    """Read a PSPLIB (``.sm``) or Patterson (``.rcp``) file as a :class:`Problem`."""
    source = Path(path)
    try:
        inst = load_instance(source, format=RCPSP_FORMATS.get(source.suffix, "psplib"))
    except FileNotFoundError:
        raise InputError(str(source), "", "cannot read file (no such file)") from None
    except Exception as exc:
        raise InputError(str(source), "", f"not a readable RCPSP instance ({exc})") from None
    return problem_from_instance(inst)


@functools.lru_cache(maxsize=8)
def instance_of(problem: Problem) -> RcpspInstance:
    """The arrays behind a job-shaped problem (its template's tasks, in order), built once."""
    if not isinstance(problem.template, Plan):
        raise ValueError("activity-list operators need a problem whose template holds every task")
    tasks = problem.template.tasks
    index = {t.id: j for j, t in enumerate(tasks)}
    names = list(problem.resources)
    successors: list[list[int]] = [[] for _ in tasks]
    for j, task in enumerate(tasks):
        for dep in task.deps:
            successors[index[dep]].append(j)
    tools = [problem.tools[t.tool] for t in tasks]
    return from_arrays(
        problem.name,
        [round(tool.duration) for tool in tools],
        [[round(tool.uses.get(r, 0.0)) for r in names] for tool in tools],
        [round(problem.resources[r]) for r in names],
        successors,
    )
