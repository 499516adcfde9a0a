"""A lifted depth-first planner for total-order HDDL: a first plan before anything is grounded.

Grounding a mid-size competition problem takes a third of a second to seconds (thousands of
ground methods), while the competition's winner, a lifted depth-first planner, answers most of
them in a twentieth of a second. This is that kind of search, in its plainest form: the task
network is a stack of ground tasks; the first is popped; an action applies if its precondition
holds; a compound task tries its methods in the domain's order, each with every binding of its
parameters that its precondition allows, found by joining the precondition's atoms against the
state (a parameter no atom binds is tried with every object of its type). A task decomposed again
before any action, in the same state, is a cycle and cut, as the grounded planner does, and a
(state, network) met before is not searched again.

It is deterministic (the facts of a predicate are tried in sorted order, never in a hash's) and
bounded by work (bindings tried), not by time, so a run's result does not depend on the
machine. It answers with the plan in the competition's format and its actions, or ``None``: it
is an attempt before the grounded search, which stays the planner of record (the actions it
finds are the grounded search's first plan: see :mod:`evolve.problems.htn.algorithm`). Nothing
here is shared with the verifier, which checks every plan this module returns before it is
used (:func:`evolve.cli.first_plan.lifted_first_plan`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from evolve.problems.htn.hddl_syntax import (
    OBJECT,
    Call,
    HddlDomain,
    HddlProblem,
    MethodDef,
    Sexp,
    Syntax,
    conjuncts,
)

Args = tuple[str, ...]
State = Mapping[str, "Facts"]
Binding = dict[str, str]
Agenda = tuple[int, Call, "Agenda", int] | None
"""The task network still to do: ``(id, task, rest, key)``, a list that children share; ``key``
numbers the tasks' sequence (ids aside), so two equal networks have the same key."""
Trail = tuple[tuple[object, ...], "Trail"] | None
"""What the search did, newest first: ``("a", id, task)`` or ``("m", id, task, method, ids)``."""



class Facts:
    """One predicate's true atoms: a set to test, and (made on first use, then shared by every
    state that keeps them) the same atoms sorted, to try in a fixed order."""

    __slots__ = ("_by", "_ordered", "held")

    def __init__(self, held: frozenset[Args]) -> None:
        self.held = held
        self._ordered: tuple[Args, ...] | None = None
        self._by: dict[int, dict[str, list[Args]]] = {}

    @property
    def ordered(self) -> tuple[Args, ...]:
        if self._ordered is None:
            self._ordered = tuple(sorted(self.held))
        return self._ordered

    def having(self, position: int, value: str) -> Sequence[Args]:
        """The atoms whose argument at ``position`` is ``value``, sorted (an index made on
        first use: a join with one argument bound need not scan every atom)."""
        index = self._by.get(position)
        if index is None:
            index = self._by[position] = {}
            for args in self.ordered:
                if position < len(args):
                    index.setdefault(args[position], []).append(args)
        return index.get(value, ())


NO_FACTS = Facts(frozenset())


class OutOfWork(Exception):
    """The work budget is spent."""


@dataclass(frozen=True)
class LiftedPlan:
    """A plan: its actions in order, the plan in the competition's format, and the work spent."""

    actions: tuple[Call, ...]
    ipc: str
    work: int


@dataclass(frozen=True)
class Node:
    state: State
    agenda: Agenda
    trail: Trail
    next_id: int
    open: frozenset[Call]
    """The compound tasks decomposed since the last action (in this state)."""


def variables(node: Sexp, bound: frozenset[str] = frozenset()) -> set[str]:
    """The free variables of a formula (those a quantifier binds left out)."""
    if isinstance(node, str):
        return {node} if node.startswith("?") and node not in bound else set()
    if node and node[0] in ("forall", "exists") and len(node) == 3:
        inner = frozenset(v for v in flat_names(node[1]) if v.startswith("?"))
        return variables(node[2], bound | inner)
    out: set[str] = set()
    for item in node[1:] if node and isinstance(node[0], str) else node:
        out |= variables(item, bound)
    return out


def flat_names(node: Sexp) -> list[str]:
    return [node] if isinstance(node, str) else [n for item in node for n in flat_names(item)]


def quantified(node: Sexp) -> bool:
    if isinstance(node, str):
        return False
    return bool(node) and (node[0] in ("forall", "exists") or any(quantified(n) for n in node))


def rename(node: Sexp, names: Mapping[str, str]) -> Sexp:
    if isinstance(node, str):
        return names.get(node, node)
    return tuple(rename(item, names) for item in node)


def is_atom(node: Sexp) -> bool:
    return (isinstance(node, tuple) and bool(node) and isinstance(node[0], str)
            and node[0] not in ("and", "or", "not", "imply", "=", "forall", "exists", "when")
            and all(isinstance(a, str) for a in node[1:]))


class LiftedPlanner:
    """The search over one domain and problem; :meth:`plan` runs it."""

    def __init__(self, domain: HddlDomain, problem: HddlProblem) -> None:
        self.domain = domain
        self.problem = problem
        objects = {**domain.constants, **problem.objects}
        self.kinds = {name: self.ancestors(types) for name, types in objects.items()}
        self.pools: dict[str, tuple[str, ...]] = {}
        self.methods: dict[str, list[MethodDef]] = {}
        for method in domain.methods:
            self.methods.setdefault(method.task.name, []).append(method)
        self.work = 0
        self.budget = 0
        self.syntax = Syntax("<lifted>")
        self.folded: dict[str, Sexp] = {}
        self.member_sets: dict[tuple[str, ...], frozenset[str]] = {}
        self.goals: dict[int, list[tuple[Sexp, set[str]]]] = {}
        """Each precondition's conjuncts and their variables, by the formula's id."""
        self.kept: list[Sexp] = []
        """The formulas :attr:`goals` holds, kept alive so that no id is reused."""
        self.keys: dict[tuple[str, Args, int], int] = {}

    def ancestors(self, types: Sequence[str]) -> frozenset[str]:
        out, todo = set(types), list(types)
        while todo:
            for parent in self.domain.parents.get(todo.pop(), ()):
                if parent not in out:
                    out.add(parent)
                    todo.append(parent)
        return frozenset(out | {OBJECT})

    def is_a(self, name: str, types: Sequence[str]) -> bool:
        kinds = self.kinds.get(name)
        return kinds is not None and any(t in kinds for t in types)

    def members(self, types: tuple[str, ...]) -> frozenset[str]:
        found = self.member_sets.get(types)
        if found is None:
            found = self.member_sets[types] = frozenset(self.pool(types))
        return found

    def pool(self, types: Sequence[str]) -> tuple[str, ...]:
        key = " ".join(types)
        if key not in self.pools:
            self.pools[key] = tuple(o for o in self.kinds if self.is_a(o, types))
        return self.pools[key]

    def spend(self) -> None:
        self.work += 1
        if self.work > self.budget:
            raise OutOfWork

    # formulas, judged in a state once their variables are bound

    def term(self, name: str, binding: Mapping[str, str]) -> str:
        return binding[name] if name.startswith("?") else name

    def holds(self, node: Sexp, binding: Mapping[str, str], state: State) -> bool:
        if node == ():
            return True
        assert isinstance(node, tuple)
        head = node[0]
        if head == "and":
            return all(self.holds(n, binding, state) for n in node[1:])
        if head == "or":
            return any(self.holds(n, binding, state) for n in node[1:])
        if head == "not":
            return not self.holds(node[1], binding, state)
        if head == "imply":
            return not self.holds(node[1], binding, state) or self.holds(node[2], binding, state)
        if head == "=":
            return self.term(str(node[1]), binding) == self.term(str(node[2]), binding)
        if head in ("forall", "exists"):
            test = all if head == "forall" else any
            return test(self.holds(node[2], b, state) for b in self.quantify(node[1], binding))
        args = tuple(self.term(str(a), binding) for a in node[1:])
        return args in state.get(str(head), NO_FACTS).held

    def quantify(self, typed: Sexp, binding: Mapping[str, str]) -> Iterator[Binding]:
        names = self.syntax.typed(typed, "quantifier", True)
        combos: list[Binding] = [dict(binding)]
        for name, types in names:
            combos = [{**b, name: o} for b in combos for o in self.pool(types)]
        yield from combos

    def effects(self, node: Sexp, binding: Mapping[str, str], state: State,
                adds: dict[str, set[Args]], deletes: dict[str, set[Args]], positive: bool = True) -> None:
        if node == ():
            return
        assert isinstance(node, tuple)
        head = node[0]
        if head == "and":
            for item in node[1:]:
                self.effects(item, binding, state, adds, deletes, positive)
        elif head == "not":
            self.effects(node[1], binding, state, adds, deletes, not positive)
        elif head == "forall":
            for inner in self.quantify(node[1], binding):
                self.effects(node[2], inner, state, adds, deletes, positive)
        elif head == "when":
            if self.holds(node[1], binding, state):
                self.effects(node[2], binding, state, adds, deletes, positive)
        else:
            args = tuple(self.term(str(a), binding) for a in node[1:])
            (adds if positive else deletes).setdefault(str(head), set()).add(args)

    def apply(self, effect: Sexp, binding: Mapping[str, str], state: State) -> State:
        """The state after the effect: deletes, then adds (PDDL's semantics)."""
        adds: dict[str, set[Args]] = {}
        deletes: dict[str, set[Args]] = {}
        self.effects(effect, binding, state, adds, deletes)
        out = dict(state)
        for name in {*adds, *deletes}:
            out[name] = Facts((state.get(name, NO_FACTS).held - deletes.get(name, set()))
                              | adds.get(name, set()))
        return out

    # bindings

    def bindings(self, pre: Sexp, binding: Binding, wanted: Sequence[tuple[str, tuple[str, ...]]],
                 state: State) -> Iterator[Binding]:
        """Every extension of ``binding`` to the ``wanted`` variables (typed) under which
        ``pre`` holds: atoms joined against the state first, then objects by type."""
        types = dict(wanted)
        goals = self.goals.get(id(pre))
        if goals is None:  # the domain's formulas live as long as the planner: their ids stay theirs
            goals = self.goals[id(pre)] = [(c, variables(c)) for c in conjuncts(pre)]
            self.kept.append(pre)
        needed = set(types) | {v for _, free in goals for v in free}
        yield from self.join(goals, binding, needed, types, state)

    def join(self, goals: list[tuple[Sexp, set[str]]], binding: Binding, needed: set[str],
             types: Mapping[str, tuple[str, ...]], state: State) -> Iterator[Binding]:
        self.spend()
        waiting = []
        for goal, free in goals:
            if free <= binding.keys():
                if not self.holds(goal, binding, state):
                    return
            else:
                waiting.append((goal, free))
        if not waiting:
            open_vars = sorted(needed - binding.keys())
            if not open_vars:
                yield binding
                return
            yield from self.by_type(open_vars[0], [], binding, needed, types, state)
            return
        atoms = [(goal, free) for goal, free in waiting if is_atom(goal)]
        if atoms:
            goal, _ = min(atoms, key=lambda item: len(item[1] - binding.keys()))
            assert isinstance(goal, tuple)
            rest = [item for item in waiting if item[0] is not goal]
            terms = [str(a) for a in goal[1:]]
            facts = state.get(str(goal[0]), NO_FACTS)
            bound = next(((i, self.term(t, binding)) for i, t in enumerate(terms)
                          if not t.startswith("?") or t in binding), None)
            for args in facts.ordered if bound is None else facts.having(*bound):
                extended = self.match(terms, args, binding, types)
                if extended is not None:
                    yield from self.join(rest, extended, needed, types, state)
            return
        # only tests that name an unbound variable: bind one of theirs by its type
        name = sorted(waiting[0][1] - binding.keys())[0]
        yield from self.by_type(name, waiting, binding, needed, types, state)

    def by_type(self, name: str, goals: list[tuple[Sexp, set[str]]], binding: Binding, needed: set[str],
                types: Mapping[str, tuple[str, ...]], state: State) -> Iterator[Binding]:
        for value in self.pool(types.get(name, (OBJECT,))):
            yield from self.join(goals, {**binding, name: value}, needed, types, state)

    def match(self, terms: Sequence[str], args: Args, binding: Binding,
              types: Mapping[str, tuple[str, ...]]) -> Binding | None:
        if len(terms) != len(args):
            return None
        out = binding
        for term, value in zip(terms, args):
            if not term.startswith("?"):
                if term != value:
                    return None
            elif term in out:
                if out[term] != value:
                    return None
            else:
                if term in types and value not in self.members(types[term]):
                    return None
                if out is binding:  # copied on the first new variable only
                    out = dict(binding)
                out[term] = value
        return out

    # the search

    def plan(self, budget: int) -> LiftedPlan | None:
        """The first plan depth-first, or ``None`` when the space holds none or ``budget``
        bindings were tried first."""
        self.work, self.budget = 0, budget
        facts: dict[str, set[Args]] = {}
        for call in self.problem.init:
            facts.setdefault(call.name, set()).add(call.args)
        state: State = {name: Facts(frozenset(held)) for name, held in facts.items()}
        root = Node(state, None, None, 0, frozenset())
        seen: set[tuple[frozenset[tuple[str, frozenset[Args]]], int]] = set()
        try:
            stack: list[Iterator[Node]] = [self.start(root)]
            while stack:
                node = next(stack[-1], None)
                if node is None:
                    stack.pop()
                    continue
                if node.agenda is None:
                    if self.holds(self.problem.goal, {}, node.state):
                        return self.answer(node)
                    continue
                stack.append(self.children(node, seen))
        except OutOfWork:
            return None
        return None

    def start(self, root: Node) -> Iterator[Node]:
        network = self.problem.network
        if network is None:
            yield root
            return
        for binding in self.bindings(network.pre, {}, self.wanted(network), root.state):
            yield self.decomposed(root, None, network, binding, root.agenda)

    def precondition(self, method: MethodDef) -> Sexp:
        """The method's precondition and its first subtask's, when that is an action: it runs
        in the same state, so a binding it refuses need not be tried (a parameter only the
        action's precondition ties, such as Towers' ring to move, is then found by the join
        instead of tried object by object)."""
        if method.name in self.folded:
            return self.folded[method.name]
        pre = method.pre
        first = method.subtasks[0] if method.subtasks else None
        action = self.domain.actions.get(first.name) if first is not None else None
        if (action is not None and first is not None and len(action.params) == len(first.args)
                and not quantified(action.pre)):
            names = {name: arg for (name, _), arg in zip(action.params, first.args)}
            pre = ("and", pre, rename(action.pre, names))
        self.folded[method.name] = pre
        return pre

    def wanted(self, method: MethodDef) -> list[tuple[str, tuple[str, ...]]]:
        """The method's parameters that its subtasks name (the others need no value)."""
        named = dict.fromkeys(a for sub in method.subtasks for a in sub.args if a.startswith("?"))
        declared = dict(method.params)
        # a variable the method does not declare is any object (the grounder names the fault)
        return [(name, declared.get(name, (OBJECT,))) for name in named]

    def decomposed(self, node: Node, task: tuple[int, Call] | None, method: MethodDef, binding: Binding,
                   rest: Agenda) -> Node:
        subtasks = [Call(sub.name, tuple(self.term(a, binding) for a in sub.args))
                    for sub in method.subtasks]
        ids = tuple(range(node.next_id, node.next_id + len(subtasks)))
        agenda = rest
        for ident, sub in reversed(list(zip(ids, subtasks))):
            agenda = self.cons(ident, sub, agenda)
        record = ("root", ids) if task is None else ("m", task[0], task[1], method.name, ids)
        opened = node.open if task is None else node.open | {task[1]}
        return Node(node.state, agenda, (record, node.trail), node.next_id + len(ids), opened)

    def cons(self, ident: int, task: Call, rest: Agenda) -> Agenda:
        """The network ``task`` then ``rest``, its key found (or numbered) in one lookup."""
        wanted = (task.name, task.args, 0 if rest is None else rest[3])
        key = self.keys.setdefault(wanted, len(self.keys) + 1)
        return (ident, task, rest, key)

    def children(self, node: Node, seen: set[tuple[frozenset[tuple[str, frozenset[Args]]], int]]
                 ) -> Iterator[Node]:
        assert node.agenda is not None
        ident, task, rest, _ = node.agenda
        action = self.domain.actions.get(task.name)
        if action is not None:
            self.spend()
            if len(action.params) != len(task.args) or not all(
                    self.is_a(a, types) for a, (_, types) in zip(task.args, action.params)):
                return
            binding = {name: value for (name, _), value in zip(action.params, task.args)}
            if not self.holds(action.pre, binding, node.state):
                return
            state = self.apply(action.effect, binding, node.state)
            key = (frozenset((k, v.held) for k, v in state.items() if v.held), 0 if rest is None else rest[3])
            if key in seen:
                return
            seen.add(key)
            yield Node(state, rest, (("a", ident, task), node.trail), node.next_id, frozenset())
            return
        if task in node.open:
            return  # decomposed again before any action: a cycle
        for method in self.methods.get(task.name, ()):
            params = dict(method.params)
            start = self.match(method.task.args, task.args, {}, params)
            if start is None:
                continue
            for found in self.bindings(self.precondition(method), start, self.wanted(method),
                                       node.state):
                yield self.decomposed(node, (ident, task), method, found, rest)

    def answer(self, node: Node) -> LiftedPlan:
        records: list[tuple[object, ...]] = []
        trail = node.trail
        while trail is not None:
            records.append(trail[0])
            trail = trail[1]
        records.reverse()
        actions: list[Call] = []
        lines = ["==>"]
        methods = []
        roots: tuple[int, ...] = ()
        for record in records:
            if record[0] == "a":
                call = record[2]
                assert isinstance(call, Call)
                actions.append(call)
                lines.append(" ".join((str(record[1]), call.name, *call.args)))
            elif record[0] == "root":
                roots = record[1]  # type: ignore[assignment]
            else:
                _, ident, call, method, ids = record
                assert isinstance(call, Call) and isinstance(ids, tuple)
                methods.append(" ".join((str(ident), call.name, *call.args, "->", str(method),
                                         *map(str, ids))))
        lines += ["root " + " ".join(map(str, roots)), *methods, "<=="]
        return LiftedPlan(tuple(actions), "\n".join(lines) + "\n", self.work)
