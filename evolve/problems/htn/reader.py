"""Reading an HTN domain file strictly: every key checked, every error names file and field.

The file is a problem file whose ``htn`` section replaces ``initial``,
``criteria`` and ``template``; the other keys (``name``, ``objective``,
``tools``, ``scopes``, ``limits``, ``resources``, ``policy``) mean what they mean
in a problem file and are read by the same code.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from evolve import defaults
from evolve.model.documents import Reader, describe, join, read_document
from evolve.model.problem import RISKS, Problem, Tool
from evolve.model.problem_file import problem_from_dict
from evolve.problems.htn.domain import (
    TRUE,
    All,
    CompoundTask,
    Decision,
    Domain,
    Effects,
    Eq,
    Has,
    Method,
    Not,
    Operator,
    Predicate,
    Scalar,
    Unknown,
    Value,
    read_keys,
)

DOMAIN_KEYS = ("name", "objective", "htn", "tools", "scopes", "limits", "resources", "policy")
HTN_KEYS = ("state", "goal", "operators", "methods", "tasks", "max_depth", "max_nodes", "decide")
DECISION_KEYS = ("prompt", "enum", "default", "type", "fields")
FIELD_KEYS = ("enum", "default", "type")
OPERATOR_KEYS = ("pre", "effects", "duration", "cost", "tool", "risk", "scope", "uses", "llm_calls",
                 "description", "prompt", "exec", "args")
ARG_TYPES = ("string", "number", "integer", "boolean")
EXEC_KEYS = ("cmd", "args")
METHOD_KEYS = ("task", "pre", "subtasks", "unordered")
TASK_KEYS = ("achieves", "description")
EFFECT_KEYS = ("set", "unset")
PREDICATE_KEYS = ("has", "eq", "not")
RESULT = "$result."
MAX_DEPTH_LIMIT = defaults.HTN_MAX_DEPTH_LIMIT
"""The deepest ``max_depth`` a file may ask for (the planner's own stack is iterative; this
only keeps a typo such as 1e9 from reading as "no limit")."""


def is_htn_document(doc: object) -> bool:
    """Whether a parsed problem file is an HTN domain (it has an ``htn`` section)."""
    return isinstance(doc, Mapping) and "htn" in doc


def read_domain(path: str | Path) -> tuple[Domain, Problem]:
    """The domain in ``path`` and the catalog part of the file (tools, scopes, limits, ...)."""
    return domain_from_dict(read_document(path), str(path))


def domain_from_dict(data: object, source: str = "<domain>") -> tuple[Domain, Problem]:
    r = Reader(source)
    doc = r.mapping(data, "", DOMAIN_KEYS)
    if "htn" not in doc:
        raise r.fail("htn", "missing: an HTN domain needs an htn section")
    catalog = read_catalog(doc, source)
    htn = r.mapping(doc["htn"], "htn", HTN_KEYS)
    for key in ("goal", "operators"):
        if key not in htn:
            raise r.fail(join("htn", key), "missing")
    state = {k: scalar(r, v, f"htn.state.{k}") for k, v in any_mapping(r, htn, "state", "htn").items()}
    tools = dict(catalog.tools) if "tools" in doc else {}
    ops_doc = r.mapping(htn["operators"], "htn.operators", None)
    if not ops_doc:
        raise r.fail("htn.operators", "a domain needs at least one operator")
    operators = {name: read_operator(r, name, spec, tools) for name, spec in ops_doc.items()}
    methods_doc = any_mapping(r, htn, "methods", "htn")
    tasks_doc = any_mapping(r, htn, "tasks", "htn")
    compound: dict[str, CompoundTask] = {}
    for name, spec in tasks_doc.items():
        path = f"htn.tasks.{name}"
        tdoc = r.mapping(spec if spec is not None else {}, path, TASK_KEYS)
        compound[name] = CompoundTask(
            name=name,
            achieves=optional_predicate(r, tdoc, "achieves", path),
            description=r.optional(tdoc, "description", path, lambda v, p: str(v), ""))
    methods = []
    for name, spec in methods_doc.items():
        method = read_method(r, name, spec)
        methods.append(method)
        compound.setdefault(method.task, CompoundTask(name=method.task))
    for name in compound:
        if name in operators:
            raise r.fail(f"htn.tasks.{name}" if name in tasks_doc else "htn.methods",
                         f"{name!r} is both an operator and a compound task")
    for method in methods:
        for i, sub in enumerate(method.subtasks):
            if sub not in operators and sub not in compound:
                raise r.fail(f"htn.methods.{method.name}.subtasks[{i}]",
                             f"unknown task or operator {sub!r}")
    goal = r.string(htn["goal"], "htn.goal")
    if goal not in operators and goal not in compound:
        raise r.fail("htn.goal", f"unknown task or operator {goal!r}")
    domain = Domain(
        name=r.optional(doc, "name", "", r.string, Path(source).stem),
        state=state, goal=goal, operators=operators, methods=tuple(methods), tasks=compound,
        max_depth=r.optional(htn, "max_depth", "htn", lambda v, p: bounded(r, v, p, MAX_DEPTH_LIMIT),
                             defaults.HTN_MAX_DEPTH),
        max_nodes=r.optional(htn, "max_nodes", "htn", lambda v, p: r.integer(v, p, 1),
                             defaults.HTN_MAX_NODES),
        source=source)
    decide = any_mapping(r, htn, "decide", "htn")
    if decide:
        known = {*domain.state, *(k for m in methods for k in read_keys(m.pre)),
                 *(k for op in operators.values() for k in (*read_keys(op.pre), *op.effects.writes()))}
        domain = replace(domain, decisions={key: read_decision(r, key, spec, known)
                                            for key, spec in decide.items()})
    return domain, catalog


def read_decision(r: Reader, key: str, spec: object, known: set[str]) -> Decision:
    path = f"htn.decide.{key}"
    if key not in known:
        raise r.fail(path, "not a key the domain's state, guards or effects name")
    doc = r.mapping(spec, path, DECISION_KEYS)
    if "prompt" not in doc:
        raise r.fail(join(path, "prompt"), "missing")
    fields = any_mapping(r, doc, "fields", path)
    for name in fields:
        r.name(name, f"{path}.fields.{name}")
        if name == key:
            raise r.fail(f"{path}.fields.{name}", "the decision's own key is its first field already")
    return replace(read_answer(r, key, doc, path), prompt=r.text(doc["prompt"], join(path, "prompt")),
                   fields=tuple(read_answer(r, name, r.mapping(spec_, f"{path}.fields.{name}", FIELD_KEYS),
                                            f"{path}.fields.{name}")
                                for name, spec_ in fields.items()))


def read_answer(r: Reader, key: str, doc: Mapping[str, Any], path: str) -> Decision:
    """One field of a decision's answer: its enum, type and default (the prompt is the caller's)."""
    enum: tuple[Scalar, ...] | None = None
    if "enum" in doc:
        raw = doc["enum"]
        if not isinstance(raw, list) or not raw:
            raise r.fail(join(path, "enum"), f"expected a non-empty list of values, got {describe(raw)}")
        enum = tuple(scalar(r, v, f"{path}.enum[{i}]") for i, v in enumerate(raw))
    default = scalar(r, doc["default"], join(path, "default")) if "default" in doc else None
    if "default" in doc and enum is not None and not any(
            type(default) is type(v) and default == v for v in enum):
        raise r.fail(join(path, "default"), f"{describe(default)} is not one of the enum")
    kind = r.optional(doc, "type", path, lambda v, p: r.choice(v, p, ARG_TYPES), None)
    return Decision(key=key, prompt="", enum=enum, default=default, has_default="default" in doc, kind=kind)


def any_mapping(r: Reader, doc: Mapping[str, Any], key: str, path: str) -> dict[str, Any]:
    """``doc[key]`` as a mapping with any keys (empty when absent)."""
    found: dict[str, Any] = r.optional(doc, key, path, lambda v, p: r.mapping(v, p, None), {})
    return found


def optional_predicate(r: Reader, doc: Mapping[str, Any], key: str, path: str) -> Predicate:
    """``doc[key]`` as a predicate; absent means true (nothing required)."""
    default: Predicate = TRUE
    found: Predicate = r.optional(doc, key, path, lambda v, p: predicate(r, v, p), default)
    return found


def bounded(r: Reader, value: object, path: str, top: int) -> int:
    number = r.integer(value, path, 1)
    if number > top:
        raise r.fail(path, f"expected an integer between 1 and {top}, got {describe(value)}")
    return number


def read_catalog(doc: Mapping[str, Any], source: str) -> Problem:
    """The problem-file keys of a domain, read by the problem reader itself (one definition of
    what ``tools``, ``limits``, ``resources`` ... mean); the criterion given here is a stand-in."""
    shared = {k: doc[k] for k in ("tools", "scopes", "limits", "resources", "policy") if k in doc}
    shared.setdefault("tools", {"_": {"duration": 0}})
    return problem_from_dict({**shared, "criteria": ["_"]}, source)


def scalar(r: Reader, value: object, path: str) -> Scalar:
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise r.fail(path, f"expected a string, number, true/false or null, got {describe(value)}")


@functools.lru_cache(maxsize=1 << 16)
def has(key: str) -> Has:
    """One ``Has`` per key (a grounded domain tests each fact in many guards)."""
    return Has(key)


@functools.lru_cache(maxsize=1 << 16)
def has_not(key: str) -> Not:
    return Not(Has(key))


def simple(value: object) -> Predicate | None:
    """The predicate of ``{has: k}``, ``{not: P}`` and lists of those (what grounded HDDL is
    made of), read without the checks' bookkeeping; None for anything else, which the full
    reader then reads (and reports, if it is wrong)."""
    if type(value) is dict and len(value) == 1:
        key = value.get("has")
        if type(key) is str and key:
            return has(key)
        inner = value.get("not")
        if inner is not None:
            if type(inner) is dict and len(inner) == 1 and type(inner.get("has")) is str and inner["has"]:
                return has_not(inner["has"])
            found = simple(inner)
            return None if found is None else Not(found)
        return None
    if type(value) is list:
        items = []
        for item in value:
            found = simple(item)
            if found is None:
                return None
            items.append(found)
        return All(tuple(items))
    return None


def predicate(r: Reader, value: object, path: str) -> Predicate:
    """``{has: k}``, ``{eq: [k, v]}``, ``{not: P}``, or a list of predicates (all of them)."""
    fast = simple(value)
    if fast is not None:
        return fast
    if isinstance(value, list):
        return All(tuple(predicate(r, item, f"{path}[{i}]") for i, item in enumerate(value)))
    doc = r.mapping(value, path, PREDICATE_KEYS)
    if len(doc) != 1:
        raise r.fail(path, f"expected exactly one of {', '.join(PREDICATE_KEYS)}, got {describe(value)}")
    (op, arg), = doc.items()
    here = join(path, op)
    if op == "has":
        return Has(r.string(arg, here))
    if op == "eq":
        if not isinstance(arg, list) or len(arg) != 2:
            raise r.fail(here, f"expected [key, value], got {describe(arg)}")
        return Eq(r.string(arg[0], f"{here}[0]"), scalar(r, arg[1], f"{here}[1]"))
    return Not(predicate(r, arg, here))


def read_operator(r: Reader, name: str, spec: object, tools: Mapping[str, Tool]) -> Operator:
    path = f"htn.operators.{name}"
    doc = r.mapping(spec, path, OPERATOR_KEYS)
    tool_name = r.optional(doc, "tool", path, r.string, None)
    tool = tools.get(tool_name) if tool_name is not None else None
    if tool_name is not None and tools and tool is None:
        raise r.fail(join(path, "tool"), f"tool {tool_name!r} is not in the tools catalog")
    if "duration" not in doc and tool is None:
        raise r.fail(join(path, "duration"), "missing: every operator needs a duration >= 0 "
                                             "(or a tool from the catalog that has one)")
    pre = optional_predicate(r, doc, "pre", path)
    if tool is not None and tool.inputs:  # the catalog tool's inputs must be in the state
        pre = All((*(pre.items if isinstance(pre, All) else (pre,)), *(Has(k) for k in tool.inputs)))
    effects = r.optional(doc, "effects", path, lambda v, p: read_effects(r, v, p, tool_name, tool),
                         Effects())

    def risk(value: object, p: str) -> str:
        if value not in RISKS:
            raise r.fail(p, f"expected one of {', '.join(RISKS)}, got {describe(value)}")
        return str(value)

    uses_doc = r.optional(doc, "uses", path, lambda v, p: r.mapping(v, p, None), None)
    return Operator(
        name=name, pre=pre, effects=effects,
        duration=r.optional(doc, "duration", path, r.number, tool.duration if tool else 0.0),
        cost=r.optional(doc, "cost", path, r.number, tool.cost if tool else 0.0),
        tool=tool_name,
        risk=r.optional(doc, "risk", path, risk, str(tool.risk) if tool else "read"),
        scope=r.optional(doc, "scope", path, r.string, tool.scope if tool else None),
        uses=({k: r.number(v, f"{path}.uses.{k}") for k, v in uses_doc.items()} if uses_doc is not None
              else dict(tool.uses) if tool else {}),
        llm_calls=r.optional(doc, "llm_calls", path, lambda v, p: r.integer(v, p, 0),
                             tool.llm_calls if tool else 0),
        description=r.optional(doc, "description", path, lambda v, p: str(v),
                               tool.description if tool else ""),
        prompt=r.optional(doc, "prompt", path, r.text, None),
        exec_spec=r.optional(doc, "exec", path, lambda v, p: read_exec(r, v, p), None),
        args=read_args(r, doc, path),
    )


def read_args(r: Reader, doc: Mapping[str, Any], path: str) -> dict[str, str] | None:
    """``args: {name: type}``, the schema of a prompted operator's model-filled arguments."""
    if "args" not in doc:
        return None
    if doc.get("prompt") is None:
        raise r.fail(join(path, "args"), "needs a prompt (the model fills the arguments from it)")
    spec = r.mapping(doc["args"], join(path, "args"), None)
    return {name: r.choice(kind, f"{path}.args.{name}", ARG_TYPES) for name, kind in spec.items()}


def read_exec(r: Reader, value: object, path: str) -> dict[str, Any]:
    """``exec: {cmd, args}``: a command and its argument list (``{{key}}`` templates allowed)."""
    doc = r.mapping(value, path, EXEC_KEYS)
    if "cmd" not in doc:
        raise r.fail(join(path, "cmd"), "missing")
    args = doc.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise r.fail(join(path, "args"), f"expected a list of strings, got {describe(args)}")
    return {"cmd": r.string(doc["cmd"], join(path, "cmd")), "args": list(args)}


def read_effects(r: Reader, value: object, path: str, tool_name: str | None, tool: Tool | None) -> Effects:
    doc = r.mapping(value, path, EFFECT_KEYS)
    sets: dict[str, Value] = {}
    for key, raw in any_mapping(r, doc, "set", path).items():
        here = f"{path}.set.{key}"
        if isinstance(raw, str) and raw.startswith("$"):
            sets[key] = result_ref(r, raw, here, tool_name, tool)
        else:
            sets[key] = scalar(r, raw, here)
    unset: tuple[str, ...] = r.optional(doc, "unset", path, r.strings, ())
    return Effects(set=sets, unset=unset)


def result_ref(r: Reader, text: str, path: str, tool_name: str | None, tool: Tool | None) -> Unknown:
    """``$result.<output>[.<path>]``: a tool's output, bound into the state when the plan runs."""
    if not text.startswith(RESULT) or len(text) == len(RESULT):
        raise r.fail(path, f"a value starting with $ must be $result.<output>, got {describe(text)}")
    if tool_name is None:
        raise r.fail(path, "$result needs the operator to name a tool")
    output, *rest = text[len(RESULT):].split(".")
    if tool is not None and output not in tool.outputs:
        raise r.fail(path, f"tool {tool_name!r} has no output {output!r} "
                           f"(outputs: {', '.join(tool.outputs) or 'none'})")
    return Unknown(output, tuple(rest))


def read_method(r: Reader, name: str, spec: object) -> Method:
    path = f"htn.methods.{name}"
    doc = r.mapping(spec, path, METHOD_KEYS)
    if "task" not in doc:
        raise r.fail(join(path, "task"), "missing")
    if "subtasks" not in doc:
        raise r.fail(join(path, "subtasks"), "missing")
    raw = doc["subtasks"]
    if not isinstance(raw, list):
        raise r.fail(join(path, "subtasks"), f"expected a list of task names, got {describe(raw)}")
    return Method(
        name=name, task=r.string(doc["task"], join(path, "task")),
        pre=optional_predicate(r, doc, "pre", path),
        subtasks=tuple(r.string(s, f"{path}.subtasks[{i}]") for i, s in enumerate(raw)),
        unordered=r.optional(doc, "unordered", path, r.boolean, False))
