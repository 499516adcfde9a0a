"""The pi-htn domain format, read as it is and converted to an evolve domain document.

pi-htn (the sources' runtime) writes a domain as one task tree::

    domain: pr-doctor
    worldState: {failure_class: null, fixed: false}
    root: {name: pr-doctor, type: sequence, tasks: [...]}

A compound node is ``{name, type: select|sequence, conditions?, tasks}``, a primitive one
``{name, conditions?, operator: {tool, prompt?, exec?}, effects?: [{set: {...}}]}``; conditions
are lists of ``{eq: [k, v]}``, ``{has: k}``, ``{not: P}``; a ``set`` value ``$result.<path>``
binds the tool's output. The conversion, so that the planner does what pi-htn's does:

- a ``sequence`` node is a compound task with one method of the same name (its conditions are
  the method's guard, its tasks the subtasks, in order);
- a ``select`` node is a compound task whose methods are its children, tried in order: a
  ``sequence`` child becomes a method of that name (guard: the select's conditions, then the
  child's), any other child a method ``<select>/<child>`` whose one subtask is the child;
- a primitive is an operator named by the node (its conditions the precondition, its effects
  merged in order), one unit of duration (pi-htn has no durations);
- every key a condition or effect names and ``worldState`` does not is seeded ``null``, as
  pi-htn seeds it; the root is the goal (no ``achieves``: the goal holds when its decomposition
  ran). :func:`to_pihtn` is the way back, for domains of that shape.

Errors name the file and the field in the pi-htn document (``root.tasks[0].conditions[1]``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evolve.model.documents import Reader, describe, join
from evolve.problems.htn.domain import Domain, Eq, Has, Not, Predicate, Unknown, atoms, to_doc
from evolve.problems.htn.reader import predicate, scalar

DOCUMENT_KEYS = ("domain", "worldState", "root")
COMPOUND_KEYS = ("name", "type", "conditions", "tasks")
PRIMITIVE_KEYS = ("name", "conditions", "operator", "effects")
OPERATOR_KEYS = ("tool", "prompt", "exec")
TYPES = ("select", "sequence")
STEP_DURATION = 1.0
"""The duration of a converted primitive: pi-htn has none, and plans of it are compared by
their number of steps."""


def is_pihtn_document(doc: object) -> bool:
    """Whether a parsed file is a pi-htn domain (a ``root`` task tree, no ``htn`` section)."""
    return isinstance(doc, Mapping) and "root" in doc and "htn" not in doc


class Converter:
    """Walks the tree once, collecting operators, methods and compound tasks in file order."""

    def __init__(self, source: str) -> None:
        self.r = Reader(source)
        self.operators: dict[str, dict[str, Any]] = {}
        self.methods: dict[str, dict[str, Any]] = {}
        self.compound: set[str] = set()
        self.keys: list[str] = []

    def conditions(self, node: Mapping[str, Any], path: str) -> list[Any]:
        """The node's conditions as file predicates (each one checked)."""
        raw = node.get("conditions", [])
        here = join(path, "conditions")
        if not isinstance(raw, list):
            raise self.r.fail(here, f"expected a list of predicates, got {describe(raw)}")
        out = []
        for i, item in enumerate(raw):
            if not isinstance(item, Mapping):
                raise self.r.fail(f"{here}[{i}]",
                                  f"expected one of {{eq}}, {{has}}, {{not}}, got {describe(item)}")
            parsed = predicate(self.r, item, f"{here}[{i}]")
            self.keys.extend(a.key for a in atoms(parsed))
            out.append(to_doc(parsed))
        return out

    def name(self, node: Mapping[str, Any], path: str) -> str:
        if "name" not in node:
            raise self.r.fail(join(path, "name"), "missing")
        return self.r.string(node["name"], join(path, "name"))

    def node(self, value: object, path: str) -> tuple[str, list[Any], str | None, list[tuple[Any, str]]]:
        """``(name, conditions, type, children)`` of a node; a primitive is registered here and
        has type ``None``."""
        if not isinstance(value, Mapping):
            raise self.r.fail(path, f"expected a task node (a mapping), got {describe(value)}")
        if "type" not in value and "operator" not in value:
            raise self.r.fail(path, "expected a compound node (type: select|sequence, tasks) or a "
                                    "primitive (operator: {tool})")
        if "type" in value:
            doc = self.r.mapping(value, path, COMPOUND_KEYS)
            name = self.name(doc, path)
            kind = self.r.choice(doc["type"], join(path, "type"), TYPES)
            tasks = doc.get("tasks")
            if not isinstance(tasks, list) or not tasks:
                raise self.r.fail(join(path, "tasks"), f"expected a non-empty list of task nodes, got "
                                                       f"{describe(tasks)}")
            if name in self.compound or name in self.operators:
                raise self.r.fail(join(path, "name"), f"{name!r} names two nodes")
            self.compound.add(name)
            children = [(t, f"{path}.tasks[{i}]") for i, t in enumerate(tasks)]
            return name, self.conditions(doc, path), kind, children
        doc = self.r.mapping(value, path, PRIMITIVE_KEYS)
        name = self.name(doc, path)
        op = self.primitive(doc, path)
        if name in self.compound or (name in self.operators and self.operators[name] != op):
            raise self.r.fail(join(path, "name"), f"{name!r} names two different nodes")
        self.operators[name] = op
        return name, [], None, []

    def primitive(self, doc: Mapping[str, Any], path: str) -> dict[str, Any]:
        here = join(path, "operator")
        spec = self.r.mapping(doc["operator"], here, OPERATOR_KEYS)
        if "tool" not in spec:
            raise self.r.fail(join(here, "tool"), "missing")
        tool = self.r.string(spec["tool"], join(here, "tool"))
        op: dict[str, Any] = {"duration": STEP_DURATION, "tool": tool}
        pre = self.conditions(doc, path)
        if pre:
            op["pre"] = pre
        for key in ("prompt", "exec"):
            if key in spec and spec[key] is not None:
                op[key] = spec[key]
        sets: dict[str, Any] = {}
        raw = doc.get("effects", [])
        where = join(path, "effects")
        if not isinstance(raw, list):
            raise self.r.fail(where, f"expected a list of {{set: {{...}}}}, got {describe(raw)}")
        for i, effect in enumerate(raw):
            body = self.r.mapping(effect, f"{where}[{i}]", ("set",))
            if "set" not in body:
                raise self.r.fail(f"{where}[{i}].set", "missing")
            for key, v in self.r.mapping(body["set"], f"{where}[{i}].set", None).items():
                at = f"{where}[{i}].set.{key}"
                if isinstance(v, str) and v.startswith("$"):
                    if not v.startswith("$result.") or v == "$result.":
                        raise self.r.fail(at, f"a value starting with $ must be $result.<path>, "
                                              f"got {describe(v)}")
                    sets[key] = v
                else:
                    sets[key] = scalar(self.r, v, at)
                self.keys.append(key)
        if sets:
            op["effects"] = {"set": sets}
        return op

    def walk(self, value: object, path: str) -> str:
        """Registers the node's task (and everything under it); returns its name."""
        name, conditions, kind, children = self.node(value, path)
        self.expand(name, conditions, kind, children, path)
        return name

    def expand(self, name: str, conditions: list[Any], kind: str | None, children: list[tuple[Any, str]],
               path: str) -> None:
        """The methods of a compound node (a primitive has none)."""
        if kind == "sequence":
            self.method(name, name, conditions, [self.walk(c, p) for c, p in children], path)
            return
        if kind != "select":
            return
        for child, child_path in children:
            child_name, child_conditions, child_kind, grandchildren = self.node(child, child_path)
            if child_kind == "sequence":
                self.method(child_name, name, conditions + child_conditions,
                            [self.walk(c, p) for c, p in grandchildren], child_path)
            else:
                self.expand(child_name, child_conditions, child_kind, grandchildren, child_path)
                self.method(f"{name}/{child_name}", name, conditions, [child_name], child_path)

    def method(self, name: str, task: str, pre: list[Any], subtasks: list[str], path: str) -> None:
        if name in self.methods:
            raise self.r.fail(join(path, "name"), f"{name!r} names two methods")
        spec: dict[str, Any] = {"task": task}
        if pre:
            spec["pre"] = pre
        spec["subtasks"] = subtasks
        self.methods[name] = spec


def from_pihtn(data: object, source: str) -> dict[str, Any]:
    """The evolve domain document (``name`` and ``htn``) of a pi-htn document."""
    c = Converter(source)
    doc = c.r.mapping(data, "", DOCUMENT_KEYS)
    for key in ("domain", "root"):
        if key not in doc:
            raise c.r.fail(key, "missing")
    name = c.r.string(doc["domain"], "domain")
    state = {k: scalar(c.r, v, f"worldState.{k}")
             for k, v in c.r.mapping(doc.get("worldState", {}), "worldState", None).items()}
    root = doc["root"]
    if not isinstance(root, Mapping) or "type" not in root:
        raise c.r.fail("root", "expected a compound node (type: select|sequence, tasks), "
                               f"got {describe(root)}")
    goal = c.walk(root, "root")
    for key in c.keys:
        state.setdefault(key, None)
    htn: dict[str, Any] = {"state": state, "goal": goal, "operators": c.operators}
    if c.methods:
        htn["methods"] = c.methods
    return {"name": name, "htn": htn}


# -- the way back ---------------------------------------------------------------------------------

def pred_items(pred: Predicate) -> list[Predicate]:
    return list(pred.items) if not isinstance(pred, (Has, Eq, Not)) else [pred]


def to_pihtn(domain: Domain) -> dict[str, Any]:
    """The pi-htn document of ``domain``; refused (an input error naming the field) for what the
    tree form cannot say: ``unset`` effects, unordered methods, an operator as the goal."""
    fail = Reader(domain.source).fail

    def primitive(name: str) -> dict[str, Any]:
        op = domain.operators[name]
        if op.effects.unset:
            raise fail(f"htn.operators.{name}.effects.unset", "pi-htn has no unset effects")
        node: dict[str, Any] = {"name": name}
        if pred_items(op.pre):
            node["conditions"] = [to_doc(p) for p in pred_items(op.pre)]
        spec: dict[str, Any] = {"tool": op.tool or name}
        if op.prompt is not None:
            spec["prompt"] = op.prompt
        if op.exec_spec is not None:
            spec["exec"] = dict(op.exec_spec)
        node["operator"] = spec
        if op.effects.set:
            node["effects"] = [{"set": {k: str(v) if isinstance(v, Unknown) else v
                                        for k, v in op.effects.set.items()}}]
        return node

    def node(name: str) -> dict[str, Any]:
        if name in domain.operators:
            return primitive(name)
        methods = domain.methods_for(name)
        if any(m.unordered for m in methods):
            raise fail(f"htn.methods.{name}", "pi-htn has no unordered methods")
        if len(methods) == 1 and methods[0].name == name:
            out: dict[str, Any] = {"name": name, "type": "sequence"}
            if pred_items(methods[0].pre):
                out["conditions"] = [to_doc(p) for p in pred_items(methods[0].pre)]
            out["tasks"] = [node(s) for s in methods[0].subtasks]
            return out
        common = common_prefix([pred_items(m.pre) for m in methods])
        out = {"name": name, "type": "select"}
        if common:
            out["conditions"] = [to_doc(p) for p in common]
        children = []
        for m in methods:
            if len(m.subtasks) == 1 and m.name == f"{name}/{m.subtasks[0]}":
                children.append(node(m.subtasks[0]))
                continue
            child: dict[str, Any] = {"name": m.name, "type": "sequence"}
            rest = pred_items(m.pre)[len(common):]
            if rest:
                child["conditions"] = [to_doc(p) for p in rest]
            child["tasks"] = [node(s) for s in m.subtasks]
            children.append(child)
        out["tasks"] = children
        return out

    root = node(domain.goal)
    if "type" not in root:
        raise fail("htn.goal", "pi-htn's root is a compound task, the goal here is an operator")
    return {"domain": domain.name, "worldState": dict(domain.state), "root": root}


def common_prefix(lists: list[list[Predicate]]) -> list[Predicate]:
    if not lists:
        return []
    prefix = lists[0]
    for items in lists[1:]:
        n = 0
        while n < min(len(prefix), len(items)) and prefix[n] == items[n]:
            n += 1
        prefix = prefix[:n]
    return prefix
