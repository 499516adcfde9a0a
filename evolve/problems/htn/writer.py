"""A domain as the document :func:`~evolve.problems.htn.reader.domain_from_dict` reads back.

Operators are written whole (their catalog tool's attributes inlined, its inputs already in the
precondition), so the document needs no ``tools`` catalog: a run journal keeps the domain it
executes this way, and converted or authored domains are saved so.
"""

from __future__ import annotations

from typing import Any

from evolve import defaults
from evolve.problems.htn.domain import All, Decision, Domain, Effects, Method, Operator, Unknown, to_doc


def effects_doc(effects: Effects) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    if effects.set:
        doc["set"] = {k: str(v) if isinstance(v, Unknown) else v for k, v in effects.set.items()}
    if effects.unset:
        doc["unset"] = list(effects.unset)
    return doc


def operator_doc(op: Operator) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    if op.pre != All():
        doc["pre"] = to_doc(op.pre)
    effects = effects_doc(op.effects)
    if effects:
        doc["effects"] = effects
    doc["duration"] = op.duration
    optional: dict[str, Any] = {
        "cost": op.cost or None, "tool": op.tool, "risk": None if op.risk == "read" else op.risk,
        "scope": op.scope, "uses": dict(op.uses) or None, "llm_calls": op.llm_calls or None,
        "description": op.description or None, "prompt": op.prompt,
        "exec": dict(op.exec_spec) if op.exec_spec is not None else None,
        "args": dict(op.args) if op.args is not None else None,
    }
    doc.update({k: v for k, v in optional.items() if v is not None})
    return doc


def method_doc(method: Method) -> dict[str, Any]:
    doc: dict[str, Any] = {"task": method.task}
    if method.pre != All():
        doc["pre"] = to_doc(method.pre)
    doc["subtasks"] = list(method.subtasks)
    if method.unordered:
        doc["unordered"] = True
    return doc


def domain_to_dict(domain: Domain) -> dict[str, Any]:
    """The ``name`` and ``htn`` section of ``domain`` (defaults left out)."""
    htn: dict[str, Any] = {"state": dict(domain.state), "goal": domain.goal}
    if domain.max_depth != defaults.HTN_MAX_DEPTH:
        htn["max_depth"] = domain.max_depth
    if domain.max_nodes != defaults.HTN_MAX_NODES:
        htn["max_nodes"] = domain.max_nodes
    htn["operators"] = {name: operator_doc(op) for name, op in domain.operators.items()}
    if domain.methods:
        htn["methods"] = {m.name: method_doc(m) for m in domain.methods}
    tasks: dict[str, Any] = {}
    for name, task in domain.tasks.items():
        spec: dict[str, Any] = {}
        if task.achieves != All():
            spec["achieves"] = to_doc(task.achieves)
        if task.description:
            spec["description"] = task.description
        if spec or not domain.methods_for(name):  # a task no method names is declared here only
            tasks[name] = spec
    if tasks:
        htn["tasks"] = tasks
    if domain.decisions:
        htn["decide"] = {key: decision_doc(d) for key, d in domain.decisions.items()}
    return {"name": domain.name, "htn": htn}


def decision_doc(decision: Decision) -> dict[str, Any]:
    doc: dict[str, Any] = {"prompt": decision.prompt} if decision.prompt else {}
    if decision.enum is not None:
        doc["enum"] = list(decision.enum)
    if decision.has_default:
        doc["default"] = decision.default
    if decision.kind is not None:
        doc["type"] = decision.kind
    if decision.fields:
        doc["fields"] = {f.key: decision_doc(f) for f in decision.fields}
    return doc
