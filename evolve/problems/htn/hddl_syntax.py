"""HDDL, the language of the planning competitions' hierarchical track, read into lifted values.

A small reader of its own (no parser dependency), so what the language allows is
accepted: a type and a predicate sharing a name, ``either`` types, constants,
``:ordered-subtasks`` or ``:subtasks`` with an ``:ordering`` that is total,
method ``:constraints``, an initial task network with parameters, and formulas
(``and or not imply = forall exists when``) kept as s-expressions, which the
grounder and the verifier each interpret on their own. Names are lower-cased
(PDDL is case-insensitive). Every error names the file and what is wrong.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from evolve.model.errors import InputError

Sexp = str | tuple["Sexp", ...]
Typed = tuple[tuple[str, tuple[str, ...]], ...]
"""``((name, types), ...)``: a typed list; ``types`` has several entries for ``(either a b)``."""

TOKEN = re.compile(r"\(|\)|[^\s()]+")
OBJECT = "object"
SUBTASK_KEYS = (":ordered-subtasks", ":ordered-tasks", ":subtasks", ":tasks")


@dataclass(frozen=True)
class Call:
    """A task, action or predicate applied to terms (``?var`` or object names)."""

    name: str
    args: tuple[str, ...]


@dataclass(frozen=True)
class Action:
    name: str
    params: Typed
    pre: Sexp
    effect: Sexp


@dataclass(frozen=True)
class MethodDef:
    """A method; ``subtasks`` in their (total) order, or unordered when ``unordered``."""

    name: str
    params: Typed
    task: Call
    pre: Sexp
    subtasks: tuple[Call, ...]
    unordered: bool = False


@dataclass(frozen=True)
class HddlDomain:
    name: str
    parents: dict[str, tuple[str, ...]]
    constants: dict[str, tuple[str, ...]]
    predicates: dict[str, Typed]
    tasks: dict[str, Typed]
    methods: tuple[MethodDef, ...]
    actions: dict[str, Action]


@dataclass(frozen=True)
class HddlProblem:
    """A problem; its initial task network is a method of the root task (``params`` free)."""

    name: str
    objects: dict[str, tuple[str, ...]]
    init: tuple[Call, ...]
    goal: Sexp
    network: MethodDef | None


class Syntax:
    """Parsing one file: positions are not kept, so errors name the construct instead."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, message: str) -> InputError:
        return InputError(self.source, "", message)

    def read(self, text: str) -> Sexp:
        text = re.sub(r";[^\n]*", "", text).lower()
        stack: list[list[Sexp]] = [[]]
        for token in TOKEN.findall(text):
            if token == "(":
                stack.append([])
            elif token == ")":
                if len(stack) == 1:
                    raise self.fail("not readable HDDL: a ')' closes nothing")
                done = tuple(stack.pop())
                stack[-1].append(done)
            else:
                stack[-1].append(token)
        if len(stack) != 1:
            raise self.fail(f"not readable HDDL: {len(stack) - 1} '(' never closed")
        if len(stack[0]) != 1 or not isinstance(stack[0][0], tuple) or stack[0][0][:1] != ("define",):
            raise self.fail("not readable HDDL: expected one (define ...)")
        return stack[0][0]

    def sections(self, tree: Sexp) -> Iterator[tuple[str, tuple[Sexp, ...]]]:
        """The ``(:keyword ...)`` parts of a ``(define ...)``, with their keyword."""
        for part in tree[1:]:
            if not isinstance(part, tuple) or not part or not isinstance(part[0], str):
                raise self.fail(f"not readable HDDL: unexpected {show(part)}")
            yield part[0], part

    def fields(self, items: Sequence[Sexp], where: str) -> dict[str, Sexp]:
        """``:key value`` pairs (a key without a value is an error)."""
        out: dict[str, Sexp] = {}
        for i in range(0, len(items), 2):
            key = items[i]
            if not isinstance(key, str) or not key.startswith(":") or i + 1 >= len(items):
                raise self.fail(f"{where}: expected ':keyword value' pairs, got {show(key)}")
            out[key] = items[i + 1]
        return out

    def typed(self, node: Sexp, where: str, variables: bool) -> Typed:
        """A typed list ``a b - t c - (either u v) d``; untyped names are objects."""
        if isinstance(node, str):
            raise self.fail(f"{where}: expected a list, got {node!r}")
        out: list[tuple[str, tuple[str, ...]]] = []
        waiting: list[str] = []
        i = 0
        while i < len(node):
            item = node[i]
            if item == "-":
                if i + 1 >= len(node):
                    raise self.fail(f"{where}: '-' without a type")
                kind = node[i + 1]
                types = kind[1:] if isinstance(kind, tuple) and kind[:1] == ("either",) else (kind,)
                if not all(isinstance(t, str) for t in types) or not types:
                    raise self.fail(f"{where}: not a type: {show(kind)}")
                out.extend((name, tuple(str(t) for t in types)) for name in waiting)
                waiting = []
                i += 2
                continue
            if not isinstance(item, str) or (variables and not item.startswith("?")):
                raise self.fail(f"{where}: expected a {'variable' if variables else 'name'}, "
                                f"got {show(item)}")
            waiting.append(item)
            i += 1
        out.extend((name, (OBJECT,)) for name in waiting)
        return tuple(out)

    def call(self, node: Sexp, where: str) -> Call:
        if not isinstance(node, tuple) or not node or not all(isinstance(a, str) for a in node):
            raise self.fail(f"{where}: expected (name args...), got {show(node)}")
        return Call(str(node[0]), tuple(str(a) for a in node[1:]))

    def network(self, name: str, params: Typed, task: Call, fields: dict[str, Sexp],
                where: str) -> MethodDef:
        """The subtasks of a method (or of the initial task network) in their total order."""
        keys = [k for k in SUBTASK_KEYS if k in fields]
        if len(keys) > 1:
            raise self.fail(f"{where}: both {keys[0]} and {keys[1]}")
        ordered = bool(keys) and keys[0] in (":ordered-subtasks", ":ordered-tasks")
        raw = fields[keys[0]] if keys else ()
        entries: list[Sexp] = []
        if isinstance(raw, tuple) and raw[:1] == ("and",):
            entries = list(raw[1:])
        elif raw != ():
            entries = [raw]
        labels: list[str] = []
        calls: list[Call] = []
        for i, entry in enumerate(entries):
            if isinstance(entry, tuple) and len(entry) == 2 and isinstance(entry[0], str) \
                    and isinstance(entry[1], tuple):
                labels.append(entry[0])
                calls.append(self.call(entry[1], where))
            else:
                labels.append(f"#{i}")
                calls.append(self.call(entry, where))
        pairs = self.ordering(fields.get(":ordering", ()), labels, where)
        unordered = not ordered and len(calls) > 1
        if pairs:
            order = total_order(labels, pairs)
            if order is None:
                raise self.fail(f"{where}: the :ordering is partial (only total orders are supported)")
            calls = [calls[labels.index(label)] for label in order]
            unordered = False
        elif ordered or len(calls) < 2:
            unordered = False
        pre = fields.get(":precondition", ())
        constraints = fields.get(":constraints", ())
        if constraints != ():
            pre = ("and", pre, constraints)
        return MethodDef(name, params, task, pre, tuple(calls), unordered)

    def ordering(self, node: Sexp, labels: list[str], where: str) -> list[tuple[str, str]]:
        items: list[Sexp] = list(node[1:]) if isinstance(node, tuple) and node[:1] == ("and",) \
            else ([] if node == () else [node])
        pairs = []
        for item in items:
            if not (isinstance(item, tuple) and len(item) == 3 and item[0] in ("<", ">")
                    and item[1] in labels and item[2] in labels):
                raise self.fail(f"{where}: :ordering: expected (< label label), got {show(item)}")
            a, b = str(item[1]), str(item[2])
            pairs.append((a, b) if item[0] == "<" else (b, a))
        return pairs


def total_order(labels: list[str], pairs: list[tuple[str, str]]) -> list[str] | None:
    """The labels in the one order ``pairs`` allow, or None when they allow several (or none)."""
    after = {label: {b for a, b in pairs if a == label} for label in labels}
    before = {label: sum(1 for _, b in pairs if b == label) for label in labels}
    ready = [label for label in labels if before[label] == 0]
    out = []
    while ready:
        if len(ready) > 1:
            return None
        label = ready.pop()
        out.append(label)
        for b in sorted(after[label]):
            before[b] -= 1
            if before[b] == 0:
                ready.append(b)
    return out if len(out) == len(labels) else None


def conjuncts(node: Sexp) -> list[Sexp]:
    """A formula's conjuncts, nested ``and`` flattened (the empty formula has none)."""
    if isinstance(node, tuple) and node[:1] == ("and",):
        return [c for item in node[1:] for c in conjuncts(item)]
    return [] if node == () else [node]


def show(node: Sexp) -> str:
    return node if isinstance(node, str) else "(" + " ".join(show(n) for n in node) + ")"


def parse_domain(text: str, source: str) -> HddlDomain:
    syntax = Syntax(source)
    tree = syntax.read(text)
    parents: dict[str, tuple[str, ...]] = {OBJECT: ()}
    constants: dict[str, tuple[str, ...]] = {}
    predicates: dict[str, Typed] = {}
    tasks: dict[str, Typed] = {}
    methods: list[MethodDef] = []
    actions: dict[str, Action] = {}
    name = ""
    for head, part in syntax.sections(tree):
        if head == "domain" and len(part) == 2:
            name = show(part[1])
        elif head == ":types":
            for type_name, supers in syntax.typed(part[1:], ":types", False):
                parents[type_name] = tuple(s for s in (*parents.get(type_name, ()), *supers)
                                           if s != type_name)
        elif head in (":constants",):
            constants.update(syntax.typed(part[1:], ":constants", False))
        elif head == ":predicates":
            for item in part[1:]:
                if not isinstance(item, tuple) or not item or not isinstance(item[0], str):
                    raise syntax.fail(f":predicates: expected (name ?args), got {show(item)}")
                predicates[item[0]] = syntax.typed(item[1:], f"predicate {item[0]}", True)
        elif head == ":task":
            task_name = str(part[1])
            found = syntax.fields(part[2:], f"task {task_name}")
            tasks[task_name] = syntax.typed(found.get(":parameters", ()), f"task {task_name}", True)
        elif head == ":method":
            method_name = str(part[1])
            where = f"method {method_name}"
            found = syntax.fields(part[2:], where)
            if ":task" not in found:
                raise syntax.fail(f"{where}: missing :task")
            params = syntax.typed(found.get(":parameters", ()), where, True)
            methods.append(syntax.network(method_name, params, syntax.call(found[":task"], where),
                                          found, where))
        elif head == ":action":
            action_name = str(part[1])
            where = f"action {action_name}"
            found = syntax.fields(part[2:], where)
            actions[action_name] = Action(action_name, syntax.typed(found.get(":parameters", ()), where,
                                                                     True),
                                          found.get(":precondition", ()), found.get(":effect", ()))
        elif head == ":requirements":
            continue
        else:
            raise syntax.fail(f"unsupported HDDL section {head}")
    for kind, supers in list(parents.items()):
        for s in supers:
            parents.setdefault(s, (OBJECT,) if s != OBJECT else ())
        if kind != OBJECT and not supers:
            parents[kind] = (OBJECT,)
    for method in methods:
        if method.task.name not in tasks:
            raise syntax.fail(f"method {method.name}: unknown task {method.task.name}")
    return HddlDomain(name, parents, constants, predicates, tasks, tuple(methods), actions)


def parse_problem(text: str, source: str) -> HddlProblem:
    syntax = Syntax(source)
    tree = syntax.read(text)
    name = ""
    objects: dict[str, tuple[str, ...]] = {}
    init: list[Call] = []
    goal: Sexp = ()
    network: MethodDef | None = None
    for head, part in syntax.sections(tree):
        if head == "problem" and len(part) == 2:
            name = show(part[1])
        elif head == ":objects":
            objects.update(syntax.typed(part[1:], ":objects", False))
        elif head == ":init":
            init.extend(syntax.call(item, ":init") for item in part[1:])
        elif head == ":goal":
            goal = part[1] if len(part) > 1 else ()
        elif head == ":htn":
            found = syntax.fields(part[1:], ":htn")
            params = syntax.typed(found.get(":parameters", ()), ":htn", True)
            network = syntax.network("__top", params, Call("__top", ()), found, ":htn")
        elif head in (":domain", ":requirements"):
            continue
        else:
            raise syntax.fail(f"unsupported HDDL problem section {head}")
    return HddlProblem(name, objects, tuple(init), goal, network)


def read_files(domain_file: str | Path, problem_file: str | Path) -> tuple[HddlDomain, HddlProblem]:
    """Both files, parsed; an unreadable file is one :class:`InputError` naming it."""
    texts = []
    for path in (domain_file, problem_file):
        try:
            texts.append(Path(path).read_text(encoding="utf-8", errors="replace"))
        except OSError as exc:
            raise InputError(str(path), "", f"cannot read: {exc.strerror or exc}") from None
    return parse_domain(texts[0], str(domain_file)), parse_problem(texts[1], str(problem_file))
