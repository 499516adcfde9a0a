"""Reading and writing a problem document: tools, facts, criteria, scopes, limits, policy and
an optional template plan, every key checked (:mod:`evolve.model.documents`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evolve.model.documents import Reader, describe, join, read_document
from evolve.model.expression import ExpressionError, parse_expression
from evolve.model.keys import FIELDS, unknown_fields
from evolve.model.limits import TOOL_NAME
from evolve.model.plan import Plan
from evolve.model.plan_file import plan_from_dict
from evolve.model.problem import BY, RISKS, By, Limits, Policy, Problem, Risk, Tool
from evolve.model.validate import validate

PROBLEM_KEYS = (
    "name", "objective", "initial", "criteria", "scopes", "limits",
    "resources", "policy", "tools", "template",
)
TOOL_KEYS = (
    "scope", "duration", "inputs", "outputs", "risk", "cost", "uses", "llm_calls", "description", "by",
    "writes", "arguments", "on_failure", "retries", "idempotency",
)
LIMIT_KEYS = ("max_parallel", "max_tasks", "deadline_s", "max_llm_calls")
POLICY_KEYS = ("write_requires_approval", "require_evidence", "approval_required")
TEMPLATE_RULES = frozenset({
    "unique-id", "dep-exists", "no-cycle", "tool-registered", "scope-granted", "ref-initial",
    "ref-task", "expression", "priority",
})
"""Validator rules a template must pass when it is loaded: no search can repair them, as every
plan keeps the template's tasks and tools (an input binding, an approval or evidence it lacks, a
search may still add)."""



def read_problem(path: str | Path) -> Problem:
    """Read a YAML or JSON problem file (other formats: :func:`evolve.problems.load_problem`)."""
    return problem_from_dict(read_document(path), str(path))


def problem_from_dict(data: object, source: str = "<problem>") -> Problem:
    """Build a :class:`Problem` from parsed data, checking every key."""
    r = Reader(source)
    doc = r.mapping(data, "", PROBLEM_KEYS)
    if "tools" not in doc:
        raise r.fail("tools", "missing: a problem needs a catalog of tools")
    tools_doc = r.mapping(doc["tools"], "tools", None)
    tools = {r.name(name, "tools", TOOL_NAME): read_tool(r, name, spec)
             for name, spec in tools_doc.items()}
    if not tools:
        raise r.fail("tools", "the catalog is empty")

    limits_doc: dict[str, Any] = r.optional(doc, "limits", "", lambda v, p: r.mapping(v, p, LIMIT_KEYS), {})
    limits = Limits(
        max_parallel=r.optional(limits_doc, "max_parallel", "limits", lambda v, p: r.integer(v, p, 1), None),
        max_tasks=r.optional(limits_doc, "max_tasks", "limits", lambda v, p: r.integer(v, p, 1), None),
        deadline_s=r.optional(limits_doc, "deadline_s", "limits", r.number, None),
        max_llm_calls=r.optional(limits_doc, "max_llm_calls", "limits", lambda v, p: r.integer(v, p, 0),
                                 None),
    )
    resources_doc: dict[str, Any] = r.optional(doc, "resources", "", lambda v, p: r.mapping(v, p, None), {})
    resources = {
        r.name(name, "resources", TOOL_NAME): r.number(cap, f"resources.{name}", minimum=0.0)
        for name, cap in resources_doc.items()
    }
    policy_doc: dict[str, Any] = r.optional(
        doc, "policy", "", lambda v, p: r.mapping(v, p, POLICY_KEYS), {})
    policy = Policy(
        write_requires_approval=r.optional(policy_doc, "write_requires_approval", "policy", r.boolean, False),
        require_evidence=r.optional(policy_doc, "require_evidence", "policy", r.boolean, False),
        approval_required=read_thresholds(r, policy_doc, tools),
    )
    for tool in tools.values():
        for res, amount in tool.uses.items():
            path = f"tools.{tool.name}.uses.{res}"
            if res not in resources:
                raise r.fail(path, f"resource {res!r} is not declared under 'resources'")
            if amount > resources[res]:
                raise r.fail(path, f"needs {amount:g} but the capacity of {res!r} is {resources[res]:g}")

    template = None
    if doc.get("template") is not None:
        template = plan_from_dict(doc["template"], source, path="template")
    criteria: tuple[str, ...] = r.optional(doc, "criteria", "", r.names, ())
    if not criteria and template is None:
        raise r.fail("criteria", "missing: a problem needs success criteria (or a template)")
    problem = Problem(
        tools=tools,
        initial=r.optional(doc, "initial", "", r.names, ()),
        criteria=criteria,
        scopes=r.optional(doc, "scopes", "", lambda v, p: r.names(v, p, TOOL_NAME), None),
        limits=limits,
        resources=resources,
        policy=policy,
        template=template,
        name=r.optional(doc, "name", "", r.string, Path(source).stem),
        objective=r.optional(doc, "objective", "", r.text, ""),
    )
    if template is not None:
        broken = [e for e in validate(problem, template) if e.rule in TEMPLATE_RULES]
        if broken:
            more = f" (and {len(broken) - 3} more)" if len(broken) > 3 else ""
            raise r.fail("template", "; ".join(str(e) for e in broken[:3]) + more)
    return problem


def read_thresholds(
    r: Reader, policy_doc: Mapping[str, Any], tools: Mapping[str, Tool]
) -> tuple[tuple[str, str], ...]:
    """``policy.approval_required``: write tool -> a condition over its bound inputs."""
    doc: dict[str, Any] = r.optional(
        policy_doc, "approval_required", "policy", lambda v, p: r.mapping(v, p, None), {})
    found = []
    for name, condition in doc.items():
        path = f"policy.approval_required.{name}"
        tool = tools.get(name)
        if tool is None or tool.risk != "write":
            raise r.fail(path, "not a write tool of the catalog")
        text = r.text(condition, path)
        try:
            parse_expression(text)
        except ExpressionError as exc:
            raise r.fail(path, str(exc)) from None
        found.append((name, text))
    return tuple(found)


def read_tool(r: Reader, name: str, spec: object) -> Tool:
    path = f"tools.{name}"
    doc = r.mapping(spec, path, TOOL_KEYS)
    if "duration" not in doc:
        raise r.fail(join(path, "duration"), "missing: every tool needs a duration >= 0")

    def risk(value: object, p: str) -> Risk:
        for known in RISKS:
            if value == known:
                return known
        raise r.fail(p, f"expected one of {', '.join(RISKS)}, got {describe(value)}")

    def by(value: object, p: str) -> By:
        for known in BY:
            if value == known:
                return known
        raise r.fail(p, f"expected one of {', '.join(BY)}, got {describe(value)}")

    uses_doc: dict[str, Any] = r.optional(doc, "uses", path, lambda v, p: r.mapping(v, p, None), {})
    inputs, params = read_inputs(r, doc.get("inputs"), join(path, "inputs"))
    arguments: dict[str, Any] = r.optional(doc, "arguments", path, lambda v, p: r.mapping(v, p, None), {})
    for param in arguments:
        r.string(param, join(path, f"arguments.{param}"))
        if param in params or (not params and param in inputs):
            raise r.fail(join(path, f"arguments.{param}"), "also an input: a fact gives its value")
    tool = Tool(
        name=name,
        duration=r.number(doc["duration"], join(path, "duration")),
        inputs=inputs,
        params=params,
        arguments=arguments,
        outputs=r.optional(doc, "outputs", path, r.names, ()),
        scope=r.optional(doc, "scope", path, lambda v, p: r.name(v, p, TOOL_NAME), None),
        risk=r.optional(doc, "risk", path, risk, "read"),
        cost=r.optional(doc, "cost", path, r.number, 0.0),
        uses={k: r.number(v, f"{path}.uses.{k}") for k, v in uses_doc.items()},
        llm_calls=r.optional(doc, "llm_calls", path, lambda v, p: r.integer(v, p, 0), 0),
        description=r.optional(doc, "description", path, r.text, ""),
        by=r.optional(doc, "by", path, by, "tool"),
        writes=r.optional(doc, "writes", path, r.text, None),
        on_failure=r.optional(doc, "on_failure", path, r.failure_policy, None),
        retries=r.optional(doc, "retries", path, lambda v, p: r.integer(v, p, 0), None),
        idempotency=r.optional(doc, "idempotency", path, r.text, None),
    )
    unknown = unknown_fields(tool.idempotency or "", tool)
    if unknown:
        raise r.fail(join(path, "idempotency"), f"field {{{unknown[0]}}} is none of {', '.join(FIELDS)} "
                     f"nor an input of {name}")
    return tool


def read_inputs(r: Reader, value: object, path: str) -> tuple[tuple[str, ...], dict[str, str]]:
    """A tool's ``inputs``: a list of facts (each a parameter of its own name), or a mapping
    parameter -> fact for a callable whose parameters are named otherwise (two parameters may
    read one fact). The facts, and the mapping (empty for a list)."""
    if value is None:
        return (), {}
    if not isinstance(value, Mapping):
        return r.names(value, path), {}
    params = {}
    for param, fact in r.mapping(value, path, None).items():
        r.string(param, path)
        params[param] = r.name(fact, join(path, param))
    return tuple(dict.fromkeys(params.values())), params


def problem_to_dict(problem: Problem) -> dict[str, Any]:
    """The document :func:`problem_from_dict` reads back to an equal problem (defaults left out)."""
    tools: dict[str, Any] = {}
    for tool in problem.tools.values():
        spec: dict[str, Any] = {"duration": tool.duration}
        optional = {
            "scope": tool.scope, "inputs": dict(tool.params) if tool.params else list(tool.inputs),
            "arguments": dict(tool.arguments), "outputs": list(tool.outputs),
            "risk": tool.risk if tool.risk != "read" else None, "cost": tool.cost or None,
            "uses": dict(tool.uses), "llm_calls": tool.llm_calls or None,
            "description": tool.description or None, "by": tool.by if tool.by != "tool" else None,
            "writes": tool.writes, "on_failure": tool.on_failure, "retries": tool.retries,
            "idempotency": tool.idempotency,
        }
        spec.update({k: v for k, v in optional.items() if v or (k == "retries" and v == 0)})
        tools[tool.name] = spec
    doc: dict[str, Any] = {"name": problem.name}
    if problem.objective:
        doc["objective"] = problem.objective
    doc["initial"] = list(problem.initial)
    doc["criteria"] = list(problem.criteria)
    if problem.scopes is not None:
        doc["scopes"] = list(problem.scopes)
    limits = {k: v for k, v in (("max_parallel", problem.limits.max_parallel),
                                ("max_tasks", problem.limits.max_tasks),
                                ("deadline_s", problem.limits.deadline_s),
                                ("max_llm_calls", problem.limits.max_llm_calls)) if v is not None}
    if limits:
        doc["limits"] = limits
    if problem.resources:
        doc["resources"] = dict(problem.resources)
    flags = (("write_requires_approval", problem.policy.write_requires_approval),
             ("require_evidence", problem.policy.require_evidence))
    policy: dict[str, Any] = {k: True for k, v in flags if v}
    thresholds: dict[str, Any] = dict(problem.policy.approval_required)
    if thresholds:
        policy["approval_required"] = thresholds
    if policy:
        doc["policy"] = policy
    doc["tools"] = tools
    if isinstance(problem.template, Plan):
        doc["template"] = problem.template.to_dict()
    return doc
