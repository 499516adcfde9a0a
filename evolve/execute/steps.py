"""A planner's step ids, kept in the names of the executor's tasks.

The executor never reuses a task id within a run (a replanned step is a new task), so a planner
that speaks in its own step ids (the plan-execute agent's) tags the task it submits on a replan
with that id in its ``name`` (``[ok] page the on-call``). The people commands read the tag back,
so a person is shown, and may answer with, the id the planner uses as well as the executor's.
"""

from __future__ import annotations

import re
from dataclasses import replace

from evolve.model.plan import Plan, Task

TAG = re.compile(r"^\[([^\]\s]+)\](?: (.*))?$", re.DOTALL)


def tagged(task: Task, step: str) -> Task:
    """``task`` named so that its planner step id survives the executor's fresh task id."""
    return replace(task, name=f"[{step}] {task.name}" if task.name else f"[{step}]")


def step_of(task: Task) -> tuple[str, str | None]:
    """The planner step id and description of an executor task (untagged: its own id and name)."""
    found = TAG.match(task.name or "")
    if found is None:
        return task.id, task.name
    return found.group(1), found.group(2) or None


def tasks_of_step(plan: Plan, step: str) -> list[str]:
    """The executor ids of the tasks of ``plan`` tagged with the planner step ``step``."""
    return [t.id for t in plan.tasks if t.id != step and step_of(t)[0] == step]
