"""From a model's reply to a child plan, treating every byte of the reply as untrusted.

The reply is parsed as JSON (code fences and chatter around one JSON object are
tolerated, since not every endpoint has a JSON mode), checked against the patch
schema and applied to a copy of the parent with :func:`evolve.model.patch.apply_patch`.
Anything that names a task or tool that does not exist is rejected with a short
reason word, so the run can count rejections by cause. Nothing in the reply is
ever executed or evaluated; semantic faults that still leave a well-formed plan
(an unbound input, a missing approval) are left to the validator and the ranking,
exactly as for a random child.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from evolve import defaults
from evolve.model.errors import InputError
from evolve.model.patch import apply_patch
from evolve.model.plan import Plan, Task, plan_hash, task_refs_deps
from evolve.model.problem import Problem

MAX_REPLY_CHARS = 100_000
MAX_ADDED_TASKS = 24
DECODER = json.JSONDecoder(strict=False)
"""Lenient only where it is harmless: raw newlines and tabs inside strings, which small models
emit (a grammar-constrained SmolLM2 did), are accepted as they are."""
FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n?(.*?)```", re.DOTALL)

REASONS = ("empty", "parse", "schema", "unknown-tool", "unknown-task", "duplicate-id", "no-change",
           "choice-range")
"""Every reason a reply is rejected for; a failed call adds its own (``timeout``, ``http``, ...)."""


class Rejected(Exception):
    """A reply that cannot become a child. ``reason`` is one of :data:`REASONS`."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


def extract_json(text: str) -> object:
    """The JSON value in ``text``: the whole text, else the first fenced block, else the first
    ``{...}`` object found in it. Raises :class:`Rejected` (``empty`` or ``parse``)."""
    stripped = text.strip()
    if not stripped:
        raise Rejected("empty", "the reply is empty")
    if len(stripped) > MAX_REPLY_CHARS:
        raise Rejected("parse", f"the reply is longer than {MAX_REPLY_CHARS} characters")
    candidates = [stripped]
    fenced = FENCE.search(stripped)
    if fenced:
        candidates.insert(0, fenced.group(1).strip())
    for candidate in candidates:
        try:
            return DECODER.decode(candidate)
        except ValueError:
            pass
        start = candidate.find("{")
        if start >= 0:
            try:
                value, _ = DECODER.raw_decode(candidate[start:])
                return value
            except ValueError:
                pass
    preview = stripped[:60].replace("\n", " ")
    raise Rejected("parse", f"no JSON object in the reply (starts {preview!r})")


def normalise(doc: object) -> dict[str, Any]:
    """The patch mapping, unwrapped from ``{"patch": {...}}``, with ``deps`` filled in for added
    tasks that omit them (from the ``$task.fact`` references they read). Shape errors beyond
    "not an object" are left to :func:`apply_patch`, which names the exact key."""
    if isinstance(doc, Mapping) and set(doc) == {"patch"} and isinstance(doc["patch"], Mapping):
        doc = doc["patch"]
    if not isinstance(doc, Mapping):
        raise Rejected("schema", f"expected a JSON object, got {type(doc).__name__}")
    patch = dict(doc)
    adds = patch.get("add")
    if isinstance(adds, list):
        if len(adds) > MAX_ADDED_TASKS:
            raise Rejected("schema", f"adds {len(adds)} tasks, more than {MAX_ADDED_TASKS}")
        patch["add"] = [with_deps(item) for item in adds]
    return patch


def with_deps(item: object) -> object:
    if not isinstance(item, Mapping) or "deps" in item:
        return item
    if not isinstance(item.get("inputs"), Mapping):
        return item
    when = item.get("when") if isinstance(item.get("when"), str) else None
    return {**item, "deps": list(task_refs_deps(item["inputs"], when))}


def classify(error: InputError) -> str:
    message = error.message
    if message.startswith("no task"):
        return "unknown-task"
    if message.endswith("already exists"):
        return "duplicate-id"
    return "schema"


def child_from_reply(problem: Problem, parent: Plan, text: str) -> tuple[Plan, str]:
    """The child plan the reply describes and the model's one-line reason.

    Raises :class:`Rejected` naming why the reply cannot be used."""
    patch = normalise(extract_json(text))
    try:
        child = apply_patch(parent, patch, source="llm reply")
    except InputError as exc:
        raise Rejected(classify(exc), str(exc)) from None
    check_names(problem, parent, child, patch)
    if plan_hash(child) == plan_hash(parent):
        raise Rejected("no-change", "the patch leaves the plan as it was")
    reason = patch.get("reason")
    return child, (reason.strip()[:200] if isinstance(reason, str) else "")


def check_names(problem: Problem, parent: Plan, child: Plan, patch: Mapping[str, Any]) -> None:
    """Every task the patch touched names a known tool and only tasks that exist in the child."""
    before = parent.by_id()
    present = set(child.ids())
    for task in child.tasks:
        if before.get(task.id) == task:
            continue
        if task.tool not in problem.tools:
            raise Rejected("unknown-tool", f"task {task.id!r} uses unknown tool {task.tool!r}")
        missing = {d for d in task.deps if d not in present} | missing_ref_tasks(task, present)
        if missing:
            names = ", ".join(sorted(missing))
            raise Rejected("unknown-task", f"task {task.id!r} names missing task(s) {names}")
    priority = patch.get("priority")
    if isinstance(priority, list):
        unknown = [tid for tid in priority if tid not in present]
        if unknown:
            names = ", ".join(map(str, unknown))
            raise Rejected("unknown-task", f"priority names missing task(s) {names}")


def missing_ref_tasks(task: Task, present: set[str]) -> set[str]:
    return {ref.task for ref in task.refs() if ref.task is not None and ref.task not in present}


STRINGS: dict[str, Any] = {"type": "array", "items": {"type": "string"}}


def task_schema(problem: Problem) -> dict[str, Any]:
    """The JSON schema of one task's fields: tool names are an ``enum`` of the catalog, so a
    constrained model cannot invent one."""
    return {
        "id": {"type": "string"},
        "tool": {"type": "string", "enum": sorted(problem.tools)},
        "deps": {**STRINGS, "maxItems": 6},
        "inputs": {"type": "object", "additionalProperties": {"type": "string"}},
        "idempotency_key": {"type": "string"},
    }


def patch_schema(problem: Problem, max_add: int = defaults.LLM_SCHEMA_MAX_ADD) -> dict[str, Any]:
    """A JSON schema of a plan patch for this problem, for endpoints with constrained output.

    Tool names are an ``enum`` of the catalog, so a constrained model cannot invent
    one; array lengths are capped, so a small model cannot loop until ``max_tokens``.
    """
    strings = STRINGS
    task_props = task_schema(problem)
    return {
        "type": "object",
        "properties": {
            "reason": {"type": "string"},
            "remove": {**strings, "maxItems": 4},
            "add": {"type": "array", "maxItems": max_add, "items": {
                "type": "object", "properties": task_props, "required": ["id", "tool", "inputs"],
                "additionalProperties": False}},
            "update": {"type": "array", "maxItems": 4, "items": {
                "type": "object", "properties": task_props, "required": ["id"],
                "additionalProperties": False}},
        },
        "required": ["reason"],
        "additionalProperties": False,
    }

