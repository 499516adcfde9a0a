"""Plan patches: the replanner's ``remove`` / ``add`` / ``update`` edit of a plan.

Every child records the patch that turns its first parent into it, whatever
operator made it, so lineage reads the same for random and LLM operators. A
patch from outside (an LLM) is untrusted: :func:`apply_patch` checks its shape
and every id it names before it touches a copy of the plan.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from evolve.model.documents import Reader, join
from evolve.model.plan import Plan, Task
from evolve.model.plan_file import TASK_KEYS, read_task

PATCH_KEYS = ("remove", "add", "update", "priority", "order", "reason", "base_version", "evidence")
"""A patch's keys. ``base_version`` is the revision of the plan the patch was written against and
``evidence`` what caused it (free-form, for the audit trail): a patch applies to the revision it
was written for, or not at all (:func:`stale`)."""


def stale(base: int | None, current: int | None) -> str | None:
    """Why a patch written against revision ``base`` may not be applied to revision ``current``
    (``None``: it may; a patch or a plan that names no revision is not judged). Applying a patch
    to a plan that changed since it was written would edit tasks the writer never saw."""
    if base is None or current is None or base == current:
        return None
    return f"stale patch: written for revision {base}, the plan is at revision {current}"


def diff_plans(parent: Plan, child: Plan) -> dict[str, Any]:
    """The patch that turns ``parent`` into ``child`` (only changed fields in ``update``)."""
    before, after = parent.by_id(), child.by_id()
    patch: dict[str, Any] = {}
    removed = [tid for tid in before if tid not in after]
    added = [t.to_dict() for t in child.tasks if t.id not in before]
    updated = []
    for tid, task in after.items():
        old = before.get(tid)
        if old is None or old == task:
            continue
        new_fields, old_fields = task.to_dict(), old.to_dict()
        change = {k: v for k, v in new_fields.items() if old_fields.get(k) != v}
        change.update({k: None for k in old_fields if k not in new_fields})
        updated.append({"id": tid, **change})
    if removed:
        patch["remove"] = removed
    if added:
        patch["add"] = added
    if updated:
        patch["update"] = updated
    rebuilt = [tid for tid in before if tid in after] + [t.id for t in child.tasks if t.id not in before]
    if rebuilt != child.ids():
        patch["order"] = child.ids()
    if child.priority != parent.priority:
        patch["priority"] = None if child.priority is None else list(child.priority)
    return patch


def apply_patch(plan: Plan, patch: object, source: str = "<patch>", revision: int | None = None) -> Plan:
    """A new plan with ``patch`` applied; raises :class:`InputError` for any malformed part, and
    for a patch whose ``base_version`` is not ``revision`` (the plan's, when the caller knows it)."""
    r = Reader(source)
    doc = r.mapping(patch, "", PATCH_KEYS)
    base = r.optional(doc, "base_version", "", lambda v, p: r.integer(v, p, 0), None)
    why = stale(base, revision)
    if why is not None:
        raise r.fail("base_version", why)
    tasks = {t.id: t for t in plan.tasks}
    order = [t.id for t in plan.tasks]
    removals: tuple[str, ...] = r.optional(doc, "remove", "", r.strings, ())
    for i, tid in enumerate(removals):
        if tid not in tasks:
            raise r.fail(f"remove[{i}]", f"no task {tid!r} in the plan")
        del tasks[tid]
        order.remove(tid)
    raw_updates = doc.get("update") or []
    if not isinstance(raw_updates, list):
        raise r.fail("update", "expected a list of task updates")
    for i, item in enumerate(raw_updates):
        path = f"update[{i}]"
        fields = r.mapping(item, path, TASK_KEYS)
        tid = r.string(fields.get("id"), join(path, "id"))
        if tid not in tasks:
            raise r.fail(join(path, "id"), f"no task {tid!r} in the plan")
        merged = {**tasks[tid].to_dict(), **{k: v for k, v in fields.items() if v is not None}}
        for key in (k for k, v in fields.items() if v is None):
            merged.pop(key, None)
        tasks[tid] = read_task(r, merged, path)
    raw_adds = doc.get("add") or []
    if not isinstance(raw_adds, list):
        raise r.fail("add", "expected a list of tasks")
    for i, item in enumerate(raw_adds):
        task = read_task(r, item, f"add[{i}]")
        if task.id in tasks:
            raise r.fail(f"add[{i}].id", f"task {task.id!r} already exists")
        tasks[task.id] = task
        order.append(task.id)
    if doc.get("order") is not None:
        wanted = r.strings(doc["order"], "order")
        if sorted(wanted) != sorted(order):
            raise r.fail("order", "must list exactly the ids of the patched plan's tasks")
        order = list(wanted)
    priority = plan.priority
    if "priority" in doc:  # an explicit null clears the priority
        priority = None if doc["priority"] is None else r.strings(doc["priority"], "priority")
    new = Plan(tasks=tuple(tasks[tid] for tid in order), priority=priority)
    return new.with_tasks(new.tasks) if priority is not None else new


def renamed(task: Task, mapping: dict[str, str]) -> Task:
    """``task`` with its id, deps and references rewritten through ``mapping``."""
    def rename_value(value: Any) -> Any:
        if isinstance(value, str) and value.startswith("$"):
            head, dot, rest = value[1:].partition(".")
            if dot and head in mapping:
                return f"${mapping[head]}.{rest}"
        return value

    def rename_text(text: str) -> str:
        return re.sub(r"\$([\w\-:]+)\.", lambda m: f"${mapping.get(m[1], m[1])}.", text)

    return replace(
        task,
        id=mapping.get(task.id, task.id),
        deps=tuple(mapping.get(d, d) for d in task.deps),
        inputs={k: rename_value(v) for k, v in task.inputs.items()},
        when=rename_text(task.when) if task.when else task.when,
        assumes=tuple(rename_text(text) for text in task.assumes),
    )
