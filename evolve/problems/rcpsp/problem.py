"""PSPLIB instances as planning problems, so ``evolve run j301_1.sm`` just works.

Each job becomes a task that every plan must keep (the problem's template),
with its precedence as dependencies and its demands as its tool's ``uses``.
Only the plan's ``priority`` (an activity list) is left to evolve, and the
engine's serial schedule generation decodes it.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

from evolve.model.documents import read_file_bytes
from evolve.model.errors import InputError
from evolve.model.graph import topological_order
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
    read_file_bytes(source)  # a FIFO or a device is refused before the parser could block on it
    try:
        inst = load_instance(source, format=RCPSP_FORMATS.get(source.suffix, "psplib"))
    except FileNotFoundError:
        raise InputError(str(source), "", "cannot read file (no such file)") from None
    except Exception as exc:
        raise InputError(str(source), "", f"not a readable RCPSP instance ({exc})") from None
    return problem_from_instance(inst)


def is_integer_rcpsp(problem: Problem) -> bool:
    """Whether :func:`instance_of` is ``problem`` exactly, so its integer decoder gives the same
    schedule as :func:`evolve.scheduling.schedule` for every activity list.

    That holds when the template is a well-formed project (unique ids, known
    tools, every dep another template task, no cycle), ``max_parallel`` cannot
    bind (absent, or at least the number of tasks), and every duration, demand
    and capacity is a whole number with no demand above its capacity: then
    rounding changes nothing and the time-indexed profile is exact. Anything
    else (e.g. durations 0.4 or ``max_parallel: 1``) needs the float kernel.
    """
    template = problem.template
    if not isinstance(template, Plan):
        return False
    ids = [t.id for t in template.tasks]
    known = set(ids)
    if len(known) != len(ids) or any(t.tool not in problem.tools for t in template.tasks):
        return False
    if any(d not in known or d == t.id for t in template.tasks for d in t.deps):
        return False
    if len(topological_order(template.dependency_map())) != len(ids):
        return False
    slots = problem.limits.max_parallel
    if slots is not None and slots < len(ids):
        return False
    caps = problem.resources
    if not all(whole(c) for c in caps.values()):
        return False
    for task in template.tasks:
        tool = problem.tools[task.tool]
        uses = [float(tool.uses.get(r, 0.0)) for r in caps]
        if not whole(tool.duration) or not all(whole(u) for u in uses):
            return False
        if any(u > caps[r] for u, r in zip(uses, caps)):
            return False
    return True


def whole(x: float) -> bool:
    """A finite number with no fractional part (what the integer decoder represents exactly)."""
    return math.isfinite(x) and float(x).is_integer()


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
