"""An HDDL plan verifier written apart from the grounder and the planner, for tests and benchmarks.

It reads the competition's plan format (``==>``, one line per action, ``root``,
one line per decomposition ``id task args -> method ids``, ``<==``) and checks
it against the lifted domain and problem (parsed by :mod:`hddl_syntax`, and
nothing else of the planning code): every action applies in turn under PDDL
semantics (deletes, then adds; conditional effects judged in the state before),
the final state meets the problem's goal, the root tasks are the initial task
network, every decomposition is a method of its task whose precondition holds
where it starts, with its subtasks in its order, each task used once, and the
actions' order respects every ordered method. :func:`check_graph` checks a task
graph made from the plan: every two steps that interfere (one writes what the
other reads or writes) are ordered as in the plan.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from evolve.problems.htn.hddl_syntax import OBJECT, Call, HddlDomain, HddlProblem, MethodDef, Sexp, Syntax

Atom = tuple[str, ...]
"""A ground atom: the predicate, then its arguments."""


@dataclass
class Verdict:
    """Every fault found (empty: the plan is valid), and the actions' atoms for the graph check."""

    faults: list[str] = field(default_factory=list)
    actions: list[Call] = field(default_factory=list)
    reads: list[set[Atom]] = field(default_factory=list)
    writes: list[set[Atom]] = field(default_factory=list)
    goal_atoms: set[Atom] = field(default_factory=set)

    @property
    def valid(self) -> bool:
        return not self.faults


class World:
    """Objects, types and formulas of one domain and problem, evaluated directly."""

    def __init__(self, domain: HddlDomain, problem: HddlProblem) -> None:
        self.domain = domain
        self.problem = problem
        self.objects = {**domain.constants, **problem.objects}

    def ancestors(self, kind: str) -> set[str]:
        out, todo = {kind}, [kind]
        while todo:
            for parent in self.domain.parents.get(todo.pop(), ()):
                if parent not in out:
                    out.add(parent)
                    todo.append(parent)
        return out | {OBJECT}

    def is_a(self, name: str, types: Sequence[str]) -> bool:
        if name not in self.objects:
            return False
        kinds = set().union(*(self.ancestors(t) for t in self.objects[name]))
        return any(t in kinds for t in types)

    def value(self, term: str, binding: Mapping[str, str]) -> str:
        return binding[term] if term.startswith("?") else term

    def holds(self, node: Sexp, binding: Mapping[str, str], state: set[Atom], seen: set[Atom]) -> bool:
        """``node`` in ``state``; every atom looked at goes into ``seen``."""
        if node == ():
            return True
        assert isinstance(node, tuple)
        head = node[0]
        if head == "and":
            return all([self.holds(n, binding, state, seen) for n in node[1:]])
        if head == "or":
            return any([self.holds(n, binding, state, seen) for n in node[1:]])
        if head == "not":
            return not self.holds(node[1], binding, state, seen)
        if head == "imply":
            return not self.holds(node[1], binding, state, seen) or self.holds(node[2], binding, state, seen)
        if head == "=":
            return self.value(str(node[1]), binding) == self.value(str(node[2]), binding)
        if head in ("forall", "exists"):
            results = [self.holds(node[2], b, state, seen) for b in self.quantify(node[1], binding)]
            return all(results) if head == "forall" else any(results)
        atom = (str(head), *(self.value(str(a), binding) for a in node[1:]))
        seen.add(atom)
        return atom in state

    def quantify(self, variables: Sexp, binding: Mapping[str, str]) -> Iterator[dict[str, str]]:
        typed = Syntax("<plan>").typed(variables, "quantifier", True)
        pools = [[o for o in self.objects if self.is_a(o, types)] for _, types in typed]
        for combo in itertools.product(*pools):
            yield {**binding, **{v: o for (v, _), o in zip(typed, combo)}}

    def effects(self, node: Sexp, binding: Mapping[str, str], state: set[Atom], seen: set[Atom],
                adds: set[Atom], deletes: set[Atom], positive: bool = True) -> None:
        if node == ():
            return
        assert isinstance(node, tuple)
        head = node[0]
        if head == "and":
            for n in node[1:]:
                self.effects(n, binding, state, seen, adds, deletes, positive)
        elif head == "not":
            self.effects(node[1], binding, state, seen, adds, deletes, not positive)
        elif head == "forall":
            for b in self.quantify(node[1], binding):
                self.effects(node[2], b, state, seen, adds, deletes, positive)
        elif head == "when":
            if self.holds(node[1], binding, state, seen):
                self.effects(node[2], binding, state, seen, adds, deletes, positive)
        else:
            (adds if positive else deletes).add((str(head), *(self.value(str(a), binding) for a in node[1:])))


@dataclass
class Entry:
    name: str
    args: tuple[str, ...]
    method: str | None = None
    children: tuple[int, ...] = ()


def parse_plan(text: str) -> tuple[dict[int, Entry], list[int], list[int], list[str]]:
    """Entries by id, the action ids in plan order, the root ids, and format faults."""
    entries: dict[int, Entry] = {}
    order: list[int] = []
    roots: list[int] = []
    faults: list[str] = []
    for line in text.splitlines():
        line = line.strip().lower()
        if not line or line in ("==>", "<==") or line.startswith(";"):
            continue
        words = line.split()
        if words[0] == "root":
            roots = [int(w) for w in words[1:]]
            continue
        try:
            ident = int(words[0])
        except ValueError:
            faults.append(f"plan line {line!r}: expected an id first")
            continue
        if ident in entries:
            faults.append(f"plan: id {ident} used twice")
        if "->" in words:
            arrow = words.index("->")
            entries[ident] = Entry(words[1], tuple(words[2:arrow]), words[arrow + 1],
                                   tuple(int(w) for w in words[arrow + 2:]))
        else:
            entries[ident] = Entry(words[1], tuple(words[2:]))
            order.append(ident)
    return entries, order, roots, faults


def verify(domain: HddlDomain, problem: HddlProblem, plan_text: str) -> Verdict:
    """Check ``plan_text`` (the competition's format) against the domain and problem."""
    world = World(domain, problem)
    entries, order, roots, faults = parse_plan(plan_text)
    verdict = Verdict(faults=faults)
    state = {(c.name, *c.args) for c in problem.init}
    states = [set(state)]
    for i, ident in enumerate(order):
        entry = entries[ident]
        action = domain.actions.get(entry.name)
        verdict.actions.append(Call(entry.name, entry.args))
        reads: set[Atom] = set()
        adds: set[Atom] = set()
        deletes: set[Atom] = set()
        if action is None or len(action.params) != len(entry.args):
            verdict.faults.append(f"step {i + 1}: no action {entry.name} with {len(entry.args)} arguments")
        else:
            binding = {v: a for (v, _), a in zip(action.params, entry.args)}
            bad = [a for a, (_, types) in zip(entry.args, action.params) if not world.is_a(a, types)]
            if bad:
                verdict.faults.append(f"step {i + 1} ({entry.name}): {', '.join(bad)} of the wrong type")
            if not world.holds(action.pre, binding, state, reads):
                verdict.faults.append(f"step {i + 1} ({' '.join((entry.name, *entry.args))}): "
                                      "precondition false")
            world.effects(action.effect, binding, state, reads, adds, deletes)
        state = (state - deletes) | adds
        states.append(set(state))
        verdict.reads.append(reads)
        verdict.writes.append(adds | deletes)
    if not world.holds(problem.goal, {}, state, verdict.goal_atoms):
        verdict.faults.append("the final state does not meet the goal")
    Tree(world, entries, order, states, verdict).check(roots)
    return verdict


class Tree:
    """The decomposition's checks (see the module docstring)."""

    def __init__(self, world: World, entries: dict[int, Entry], order: list[int],
                 states: list[set[Atom]], verdict: Verdict) -> None:
        self.world = world
        self.entries = entries
        self.position = {ident: i for i, ident in enumerate(order)}
        self.states = states
        self.verdict = verdict
        self.leaves: dict[int, list[int]] = {}
        self.starts: dict[int, int] = {}

    def fault(self, text: str) -> None:
        self.verdict.faults.append(text)

    def check(self, roots: list[int]) -> None:
        network = self.world.problem.network
        used: dict[int, int] = {}
        for ident in (*roots, *(c for e in self.entries.values() for c in e.children)):
            used[ident] = used.get(ident, 0) + 1
        for ident, count in used.items():
            if ident not in self.entries:
                self.fault(f"decomposition: id {ident} is never defined")
            elif count > 1:
                self.fault(f"decomposition: id {ident} is used {count} times")
        for ident in self.entries:
            if ident not in used:
                self.fault(f"decomposition: id {ident} is not part of the tree")
        if self.verdict.faults or network is None:
            if network is None:
                self.fault("the problem has no initial task network")
            return
        for ident in roots:
            self.subtree(ident, set())
        self.number(roots)
        self.method_like(network, Entry("__top", (), "__top", tuple(roots)), "the initial task network")
        for ident, entry in self.entries.items():
            if entry.method is not None:
                self.decomposition(ident, entry)

    def subtree(self, ident: int, path: set[int]) -> list[int]:
        """The action positions below ``ident`` (and cycle detection: ``path`` holds the ids
        above it). An explicit stack, not recursion: a tail-recursive domain's plan of thousands
        of steps is a decomposition thousands deep (Towers pfile_11: 2,047)."""
        open_ids = set(path)
        stack: list[tuple[int, bool]] = [(ident, False)]
        while stack:
            current, done = stack.pop()
            if done:
                entry = self.entries[current]
                open_ids.discard(current)
                self.leaves[current] = sorted(p for c in entry.children for p in self.leaves.get(c, ()))
                continue
            if current in self.leaves:
                continue
            if current in open_ids:
                self.fault(f"decomposition: id {current} is its own ancestor")
                continue
            entry = self.entries[current]
            if entry.method is None:
                self.leaves[current] = [self.position[current]]
                continue
            open_ids.add(current)
            stack.append((current, True))
            stack.extend((c, False) for c in reversed(entry.children))
        return self.leaves.get(ident, [])

    def decomposition(self, ident: int, entry: Entry) -> None:
        matches = [m for m in self.world.domain.methods if m.name == entry.method]
        if not matches:
            self.fault(f"decomposition {ident}: no method {entry.method}")
            return
        self.method_like(matches[0], entry, f"decomposition {ident} ({entry.method})")

    def method_like(self, method: MethodDef, entry: Entry, where: str) -> None:
        if method.task.name != "__top" and (method.task.name != entry.name
                                            or len(method.task.args) != len(entry.args)):
            self.fault(f"{where}: method of {method.task.name}, used for {entry.name}")
            return
        children = [self.entries[c] for c in entry.children]
        if len(children) != len(method.subtasks):
            self.fault(f"{where}: {len(children)} subtasks, the method has {len(method.subtasks)}")
            return
        orders = itertools.permutations(range(len(children))) if method.unordered \
            else iter([tuple(range(len(children)))])
        for perm in orders:
            binding: dict[str, str] | None = {}
            pairs = [(method.task, Call(entry.name, entry.args))] if method.task.name != "__top" else []
            pairs += [(method.subtasks[k], Call(children[k].name, children[k].args)) for k in perm]
            for pattern, ground in pairs:
                binding = unify(pattern, ground, binding)
                if binding is None:
                    break
            if binding is None:
                continue
            if not method.unordered and not self.ordered(entry):
                self.fault(f"{where}: the actions of its subtasks are not in the method's order")
                return
            if self.precondition(method, binding, self.start(entry)):
                return
            self.fault(f"{where}: precondition false (or parameters of the wrong type)")
            return
        self.fault(f"{where}: subtasks do not match the method's")

    def ordered(self, entry: Entry) -> bool:
        blocks = [self.subtree(c, set()) for c in entry.children]
        ends = [(b[0], b[-1]) for b in blocks if b]
        return all(a[1] < b[0] for a, b in itertools.pairwise(ends))

    def start(self, entry: Entry) -> int:
        """Where a decomposition starts: its first action, else right before the next one in
        the tree's order."""
        below = sorted(p for c in entry.children for p in self.subtree(c, set()))
        return below[0] if below else self.starts.get(id(entry), len(self.states) - 1)

    def number(self, roots: list[int]) -> None:
        """For every empty decomposition, how many actions come before it in the tree's order."""
        count = 0
        todo = list(reversed(roots))
        while todo:
            entry = self.entries[todo.pop()]
            if entry.method is None:
                count += 1
                continue
            self.starts[id(entry)] = count
            todo.extend(reversed(entry.children))

    def precondition(self, method: MethodDef, binding: dict[str, str], at: int) -> bool:
        types = dict(method.params)
        if any(not self.world.is_a(v, types[k]) for k, v in binding.items() if k in types):
            return False
        free = [(v, t) for v, t in method.params if v not in binding]
        pools = [[o for o in self.world.objects if self.world.is_a(o, t)] for _, t in free]
        for combo in itertools.product(*pools):
            full = {**binding, **{v: o for (v, _), o in zip(free, combo)}}
            if self.world.holds(method.pre, full, self.states[at], set()):
                return True
        return False


def unify(pattern: Call, ground: Call, binding: dict[str, str] | None) -> dict[str, str] | None:
    if binding is None or pattern.name != ground.name or len(pattern.args) != len(ground.args):
        return None
    out = dict(binding)
    for term, value in zip(pattern.args, ground.args):
        if term.startswith("?"):
            if out.setdefault(term, value) != value:
                return None
        elif term != value:
            return None
    return out


def check_graph(verdict: Verdict, tools: Sequence[str], deps: Mapping[int, Sequence[int]]) -> list[str]:
    """Faults of a task graph made from the plan: ``tools[k]`` is the ground action of task k
    (``name(a,b)``), ``deps[k]`` the tasks it waits for; two steps that interfere must be
    ordered as in the plan (a later one waits for the earlier, maybe through others)."""
    names = [f"{a.name}({','.join(a.args)})" if a.args else a.name for a in verdict.actions]
    if list(tools) != names:
        return ["the task graph's tasks are not the plan's actions in order"]
    above: list[set[int]] = []
    for k in range(len(tools)):
        reach: set[int] = set()
        for d in deps.get(k, ()):
            if d >= k:
                return [f"task {k + 1} waits for a later task {d + 1}"]
            reach |= above[d] | {d}
        above.append(reach)
    faults = []
    for j in range(len(tools)):
        for i in range(j):
            w_i, w_j = verdict.writes[i], verdict.writes[j]
            if (w_i & (verdict.reads[j] | w_j) or verdict.reads[i] & w_j) and i not in above[j]:
                faults.append(f"steps {i + 1} and {j + 1} interfere but the graph does not order them")
    return faults
