"""Reading a plan document (a task graph, or a model's typed steps) into a :class:`Plan`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evolve.model.documents import Reader, describe, join, read_document
from evolve.model.limits import TOOL_NAME
from evolve.model.plan import Plan, Task

TASK_KEYS = (
    "id", "tool", "deps", "inputs", "outputs", "when", "idempotency_key", "name",
    "assumes", "on_failure", "retries", "timeout", "evidence", "proof",
)
PLAN_KEYS = ("tasks", "priority", "schedule", "steps", "goal")
STEP_KEYS = ("id", "description", "tool", "args", "depends_on")
"""A typed plan's step (a model's structured output): an integer id, a description, a tool, its
arguments and the ids of the steps it depends on; read as the task ``t<id>``."""


def load_plan(path: str | Path) -> Plan:
    """Read a plan file (JSON or YAML); a ``schedule`` key, as written by the engine, is ignored."""
    return plan_from_dict(read_document(path), str(path))


def plan_from_dict(data: object, source: str = "<plan>", path: str = "") -> Plan:
    """Build a :class:`Plan` from parsed data, checking shapes (not semantics: see validate)."""
    r = Reader(source)
    doc = r.mapping(data, path, PLAN_KEYS)
    if "steps" in doc:
        if "tasks" in doc:
            raise r.fail(join(path, "steps"), "give tasks or steps (a typed plan), not both")
        doc = {**doc, "tasks": typed_steps(r, doc["steps"], join(path, "steps"))}
    raw_tasks = doc.get("tasks", [])
    if not isinstance(raw_tasks, list):
        raise r.fail(join(path, "tasks"), f"expected a list of tasks, got {describe(raw_tasks)}")
    tasks = tuple(read_task(r, item, f"{join(path, 'tasks')}[{i}]") for i, item in enumerate(raw_tasks))
    priority = r.optional(doc, "priority", path, r.strings, None)
    return Plan(tasks=tasks, priority=priority)


def step_id(value: object) -> object:
    """A step id as a task id: an integer ``N`` (a typed plan's) is ``t<N>``; anything else is
    left for the reader to judge."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return f"t{value}"
    return value


def step_ref(value: object) -> object:
    """A reference to a numbered step's output (``$2.rooms``) as one to its task (``$t2.rooms``)."""
    if isinstance(value, str):
        head, dot, rest = value.partition(".")
        if dot and head[1:].isdigit() and head.startswith("$"):
            return f"$t{head[1:]}.{rest}"
    return value


def typed_steps(r: Reader, raw: object, path: str) -> list[dict[str, Any]]:
    """A typed plan's ``steps`` (integer ids, ``description``, ``args``, ``depends_on``) as the
    task documents :func:`read_task` reads: step ``N`` is task ``t<N>``."""
    if not isinstance(raw, list):
        raise r.fail(path, f"expected a list of steps, got {describe(raw)}")
    tasks = []
    for i, item in enumerate(raw):
        step = r.mapping(item, f"{path}[{i}]", STEP_KEYS)
        task: dict[str, Any] = {key: step[key] for key in ("id", "tool") if key in step}
        if step.get("description") is not None:
            task["name"] = step["description"]
        if step.get("args") is not None:
            args = r.mapping(step["args"], f"{path}[{i}].args", None)
            task["inputs"] = {key: step_ref(value) for key, value in args.items()}
        if step.get("depends_on") is not None:
            task["deps"] = step["depends_on"]
        tasks.append(task)
    return tasks


def read_task(r: Reader, data: object, path: str) -> Task:
    doc = r.mapping(data, path, TASK_KEYS)
    for key in ("id", "tool"):
        if key not in doc:
            raise r.fail(join(path, key), "missing")
    task_id = r.name(step_id(doc["id"]), join(path, "id"))
    raw_deps = doc.get("deps")
    if isinstance(raw_deps, list):
        doc = {**doc, "deps": [step_id(d) for d in raw_deps]}
    return Task(
        id=task_id,
        tool=r.name(doc["tool"], join(path, "tool"), TOOL_NAME),
        deps=r.optional(doc, "deps", path, r.strings, ()),
        inputs=r.optional(doc, "inputs", path, lambda v, p: r.mapping(v, p, None), {}),
        outputs=r.optional(doc, "outputs", path, r.strings, ()),
        when=r.optional(doc, "when", path, r.string, None),
        idempotency_key=r.optional(doc, "idempotency_key", path, r.string, None),
        name=r.optional(doc, "name", path, r.string, None),
        assumes=r.optional(doc, "assumes", path, r.texts, ()),
        on_failure=r.optional(doc, "on_failure", path, r.failure_policy, None),
        retries=r.optional(doc, "retries", path, lambda v, p: r.integer(v, p, 0), None),
        timeout=r.optional(doc, "timeout", path, r.positive, None),
        evidence=r.optional(doc, "evidence", path, r.texts, ()),
        proof=r.optional(doc, "proof", path, r.texts, ()),
    )
