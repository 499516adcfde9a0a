"""Reading problem and plan files strictly.

A typo in a problem file must never turn into a silent default, so every key is
checked: unknown keys and wrong types raise :class:`InputError` naming the file,
the key path (``tools.orders.get.duration``) and what was expected.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import stat
import unicodedata
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar, cast

import yaml

from evolve.model.errors import InputError
from evolve.model.expression import ExpressionError, parse_expression
from evolve.model.keys import FIELDS, unknown_fields
from evolve.model.limits import (
    DEPTH_PROBLEM,
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_INTEGER,
    MAX_NUMBER,
    MAX_TEXT,
    NAME,
    TOOL_NAME,
    flow_depth,
    name_problem,
    tree_problem,
)
from evolve.model.plan import FAILURE_POLICIES, FailurePolicy, Plan, Task
from evolve.model.problem import BY, RISKS, By, Limits, Policy, Problem, Risk, Tool
from evolve.model.validate import validate

T = TypeVar("T")

PROBLEM_KEYS = (
    "name", "objective", "initial", "criteria", "scopes", "limits",
    "resources", "policy", "tools", "template",
)
TOOL_KEYS = (
    "scope", "duration", "inputs", "outputs", "risk", "cost", "uses", "llm_calls", "description", "by",
    "writes", "arguments", "on_failure", "retries", "idempotency",
)
TASK_KEYS = (
    "id", "tool", "deps", "inputs", "outputs", "when", "idempotency_key", "name",
    "assumes", "on_failure", "retries", "timeout", "evidence", "proof",
)
LIMIT_KEYS = ("max_parallel", "max_tasks", "deadline_s", "max_llm_calls")
POLICY_KEYS = ("write_requires_approval", "require_evidence", "approval_required")
PLAN_KEYS = ("tasks", "priority", "schedule", "steps", "goal")
STEP_KEYS = ("id", "description", "tool", "args", "depends_on")
"""A typed plan's step (a model's structured output): an integer id, a description, a tool, its
arguments and the ids of the steps it depends on; read as the task ``t<id>``."""
TEMPLATE_RULES = frozenset({
    "unique-id", "dep-exists", "no-cycle", "tool-registered", "scope-granted", "ref-initial",
    "ref-task", "expression", "priority",
})
"""Validator rules a template must pass when it is loaded: no search can repair them, as every
plan keeps the template's tasks and tools (an input binding, an approval or evidence it lacks, a
search may still add)."""


def describe(value: object) -> str:
    """How a bad value is quoted in an error: short, JSON-like and printable, at a cost bounded
    whatever the value's size (a container is cut before it is encoded)."""
    text = json.dumps(_clip(value, 2), default=_opaque, ensure_ascii=True)
    return text if len(text) <= 40 else text[:37] + "..."


def _clip(value: object, depth: int) -> object:
    if isinstance(value, str):
        return value[:60]
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INTEGER:
        return f"<a {len(str(abs(value))) if value.bit_length() < 20_000 else 'huge'}-digit integer>"
    if isinstance(value, (list, tuple)):
        return [_clip(v, depth - 1) for v in value[:4]] if depth > 0 else "[...]"
    if isinstance(value, Mapping):
        items = list(value.items())[:4]
        return {str(k)[:30]: _clip(v, depth - 1) for k, v in items} if depth > 0 else "{...}"
    return value


def _opaque(value: object) -> str:
    return f"<{type(value).__name__}>"


class Reader:
    """Walks a parsed document, tracking the key path for error messages."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, path: str, message: str) -> InputError:
        return InputError(self.source, path, message)

    def mapping(self, value: object, path: str, allowed: tuple[str, ...] | None) -> dict[str, Any]:
        if not isinstance(value, Mapping):
            raise self.fail(path, f"expected a mapping, got {describe(value)}")
        for key in value:
            if not isinstance(key, str):
                raise self.fail(path, f"keys must be strings, got {describe(key)}")
            if allowed is not None and key not in allowed:
                raise self.fail(
                    join(path, key), f"unknown key (allowed: {', '.join(allowed)})"
                )
        return dict(value)

    def string(self, value: object, path: str) -> str:
        if not isinstance(value, str) or not value:
            raise self.fail(path, f"expected a non-empty string, got {describe(value)}")
        return value

    def text(self, value: object, path: str) -> str:
        """Free text (an objective, a description): a string of at most :data:`MAX_TEXT`
        characters, without control characters other than newlines and tabs."""
        if not isinstance(value, str):
            raise self.fail(path, f"expected text, got {describe(value)}")
        if len(value) > MAX_TEXT:
            raise self.fail(path, f"longer than {MAX_TEXT:,} characters")
        bad = next((c for c in value if unicodedata.category(c) in ("Cc", "Cf") and c not in "\n\t"), None)
        if bad is not None:
            raise self.fail(path, f"holds the control character U+{ord(bad):04X}")
        return value

    def name(self, value: object, path: str, pattern: re.Pattern[str] = NAME) -> str:
        """A name that references can spell and tables can show (see :mod:`evolve.model.limits`)."""
        text = self.string(value, path)
        problem = name_problem(text, pattern)
        if problem is not None:
            raise self.fail(path, f"{describe(text)} {problem}")
        return text

    def names(self, value: object, path: str, pattern: re.Pattern[str] = NAME) -> tuple[str, ...]:
        items = self.strings(value, path)
        for i, item in enumerate(items):
            self.name(item, f"{path}[{i}]", pattern)
        return items

    def strings(self, value: object, path: str) -> tuple[str, ...]:
        if not isinstance(value, list):
            raise self.fail(path, f"expected a list of strings, got {describe(value)}")
        items = tuple(self.string(item, f"{path}[{i}]") for i, item in enumerate(value))
        seen: set[str] = set()
        for i, item in enumerate(items):
            if item in seen:
                raise self.fail(f"{path}[{i}]", f"{describe(item)} appears twice")
            seen.add(item)
        return items

    def number(self, value: object, path: str, minimum: float = 0.0) -> float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if ok and isinstance(value, int) and abs(value) > MAX_NUMBER:
            raise self.fail(path, f"expected a number <= {MAX_NUMBER:g}, got {describe(value)}")
        if not ok or not math.isfinite(cast(float, value)) or cast(float, value) < minimum:
            raise self.fail(path, f"expected a number >= {minimum:g}, got {describe(value)}")
        if cast(float, value) > MAX_NUMBER:
            raise self.fail(path, f"expected a number <= {MAX_NUMBER:g}, got {describe(value)}")
        return float(cast(float, value))

    def integer(self, value: object, path: str, minimum: int) -> int:
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            raise self.fail(path, f"expected an integer >= {minimum}, got {describe(value)}")
        if value > MAX_INTEGER:
            raise self.fail(path, f"expected an integer <= {MAX_INTEGER}, got {describe(value)}")
        return value

    def texts(self, value: object, path: str) -> tuple[str, ...]:
        """One string or a list of them (``assumes``, ``evidence``, ``proof``), as a tuple."""
        if isinstance(value, str):
            return (self.string(value, path),)
        if isinstance(value, list):
            return self.strings(value, path)
        raise self.fail(path, f"expected a string or a list of strings, got {describe(value)}")

    def choice(self, value: object, path: str, allowed: tuple[str, ...]) -> str:
        if not isinstance(value, str) or value not in allowed:
            raise self.fail(path, f"expected one of {', '.join(allowed)}, got {describe(value)}")
        return value

    def failure_policy(self, value: object, path: str) -> FailurePolicy:
        """An ``on_failure`` (a task's or a tool's): one of :data:`FAILURE_POLICIES`."""
        for known in FAILURE_POLICIES:
            if value == known:
                return known
        raise self.fail(path, f"expected one of {', '.join(FAILURE_POLICIES)}, got {describe(value)}")

    def positive(self, value: object, path: str) -> float:
        """A finite number > 0 (a timeout)."""
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not ok or not math.isfinite(cast(float, value)) or cast(float, value) <= 0:
            raise self.fail(path, f"expected a number > 0, got {describe(value)}")
        return float(cast(float, value))

    def boolean(self, value: object, path: str) -> bool:
        if not isinstance(value, bool):
            raise self.fail(path, f"expected true or false, got {describe(value)}")
        return value

    def optional(self, data: Mapping[str, Any], key: str, path: str,
                 read: Callable[[object, str], T], default: T) -> T:
        if key not in data or data[key] is None:
            return default
        return read(data[key], join(path, key))


def join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


SAFE_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's C loader where PyYAML was built with it: ten times faster on large catalogs."""


class StrictLoader(SAFE_LOADER):  # type: ignore[misc]
    """The safe loader, refusing a mapping that holds one key twice (YAML would keep the last,
    silently: two ``tools:`` sections must be an error, not a lost catalog)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"the key {describe(key)} appears twice", key_node.start_mark)
            seen.add(key)
        return cast(dict[Any, Any], super().construct_mapping(node, deep=deep))


StrictLoader.add_constructor("tag:yaml.org,2002:map", StrictLoader.construct_yaml_map)


class DuplicateKey(ValueError):
    """A JSON object holding one key twice."""


def unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKey(key)
        out[key] = value
    return out


FILE_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
              (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
"""What a path may be instead of a regular file, in the words of the refusal."""


def read_file_bytes(path: str | Path) -> bytes:
    """The bytes of an input file, refused unless it is a regular file of at most
    :data:`MAX_FILE_BYTES`.

    Checked before opening, because opening a FIFO blocks until a writer comes and reading
    ``/dev/zero`` never ends; the read itself is bounded too, so a file that grows after the
    check cannot make it allocate more than the limit.
    """
    source = str(path)
    try:
        mode = os.stat(path).st_mode
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in FILE_KINDS if test(mode)), "not a file")
            raise InputError(source, "", f"not a regular file ({kind}); give the path of a file")
        with open(path, "rb") as stream:
            data = stream.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise InputError(source, "", f"cannot read file ({exc.strerror or exc})") from None
    if len(data) > MAX_FILE_BYTES:
        raise InputError(source, "", f"larger than {MAX_FILE_BYTES >> 20} MiB; such files are not read")
    return data


def read_text_file(path: str | Path) -> str:
    """A UTF-8 text file within :data:`MAX_FILE_BYTES`; any failure is one line naming it."""
    try:
        return read_file_bytes(path).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(str(path), "", f"not UTF-8 text (byte {exc.start})") from None


def write_text_file(path: str | Path, text: str) -> None:
    """Write ``text`` as UTF-8 to ``path``, or say in one line why it cannot be: a missing folder,
    a parent that is a file or a read-only place is the user's path to fix, not a bug in evolve."""
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(str(path), "", f"cannot write {describe(path)} ({exc.strerror or exc})") from None


def read_document(path: str | Path) -> Any:
    """Parse a YAML or JSON file (JSON is YAML, but its errors read better from ``json``), within
    the bounds of :mod:`evolve.model.limits`."""
    source = str(path)
    text = read_text_file(path)
    try:
        if source.endswith(".json"):
            doc = json.loads(text, object_pairs_hook=unique_pairs)
        else:
            doc = yaml.load(text, Loader=StrictLoader)
    except DuplicateKey as exc:
        raise InputError(source, "", f"invalid JSON: the key {describe(exc.args[0])} appears twice") from None
    except json.JSONDecodeError as exc:
        raise InputError(source, "", f"invalid JSON at line {exc.lineno}: {exc.msg}") from None
    except RecursionError:
        raise InputError(source, "", DEPTH_PROBLEM) from None
    except yaml.YAMLError as exc:
        if flow_depth(text) > MAX_DEPTH:
            raise InputError(source, "", DEPTH_PROBLEM) from None
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(source, "", f"invalid YAML{where}: {problem}") from None
    problem = tree_problem(doc)
    if problem is not None:
        raise InputError(source, "", problem)
    return doc


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


def fingerprint(data: object) -> str:
    """A stable digest of JSON-able data (a problem document, the options that matter, a
    family's settings): what a checkpoint's identity is made of."""
    text = json.dumps(data, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()
