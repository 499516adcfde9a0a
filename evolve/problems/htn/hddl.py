"""Grounding HDDL (the hierarchical track of the planning competitions) into an HTN domain document.

Relevance-based, as PANDA's and Lilotane's grounders are: starting from the
initial task network, only the method and action instances its tasks can reach
are made. A method's free parameters are bound by joining its precondition's
static predicates (those no action changes) with the initial state, and every
other parameter runs over the objects of its type and all its subtypes; an
instance whose static conditions are false, or whose action would need one, is
never made. Instances that cannot finish (a subtask with no possible
decomposition, found bottom-up, so endless recursion counts as none) are
dropped, then whatever the root no longer reaches. ``forall`` and ``exists``
are expanded over typed objects; ``or`` and ``imply`` become negated
conjunctions; conditional effects split an action into one operator per
combination of its conditions, behind a compound task of the action's name
whose methods pick the one that applies.

The problem's ``:goal`` is part of the task: the root method ends with the
operator :data:`GOAL_OPERATOR`, whose precondition is the goal, so no plan is
complete unless its final state meets it. Ground atoms are named
``pred_arg1_arg2`` with every ``_`` inside a name doubled (names never start
with ``_``), so two different atoms never share a name.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evolve.model.collector import collector_paused
from evolve.model.errors import InfeasibleProblem, InputError
from evolve.problems.htn.hddl_formulas import (
    Effect,
    Ground,
    atom_key,
    conj,
    disj,
    negate,
    operator_doc,
    to_doc,
)
from evolve.problems.htn.hddl_objects import Objects
from evolve.problems.htn.hddl_relation import Relation
from evolve.problems.htn.hddl_relevance import Patterns, pattern_relations, relevant, wanted
from evolve.problems.htn.hddl_split import split
from evolve.problems.htn.hddl_syntax import (
    OBJECT,
    HddlDomain,
    HddlProblem,
    MethodDef,
    Sexp,
    Syntax,
    Typed,
    conjuncts,
    read_files,
    show,
)

ROOT_TASK = "__root__"
ROOT_METHOD = "__root__m"
GOAL_OPERATOR = "__goal__"
VARIANT = "~when"
"""Separates an action's ground name from the conditions one of its variants assumes."""
MAX_CONDITIONS = 6
"""Conditional effects one ground action may have whose conditions grounding cannot decide
(each doubles its operators)."""


def ground_name(name: str, args: Sequence[str]) -> str:
    return f"{name}({','.join(args)})" if args else name


def split_name(text: str) -> tuple[str, tuple[str, ...]]:
    """``name(a,b)`` -> ``("name", ("a", "b"))``: the inverse of :func:`ground_name`."""
    head, _, rest = text.partition("(")
    return head, tuple(a for a in rest.rstrip(")").split(",") if a)


def read_hddl(domain_file: str | Path, problem_file: str | Path) -> dict[str, Any]:
    """The HTN domain document of an HDDL domain and problem (see the module docstring): read,
    its methods' local parameters split off (:mod:`evolve.problems.htn.hddl_split`), and
    grounded with the cyclic collector held back (see :mod:`evolve.model.collector`)."""
    with collector_paused():
        domain, problem = split(*read_files(domain_file, problem_file))
        return Grounder(domain, problem, str(problem_file)).document()


def free_vars(node: Sexp, bound: frozenset[str] = frozenset()) -> set[str]:
    if isinstance(node, str):
        return {node} if node.startswith("?") and node not in bound else set()
    if node[:1] in (("forall",), ("exists",)) and len(node) == 3 and isinstance(node[1], tuple):
        inner = bound | {v for v in node[1] if isinstance(v, str) and v.startswith("?")}
        return free_vars(node[2], frozenset(inner))
    return {v for item in node for v in free_vars(item, bound)}


@dataclass(frozen=True)
class Literal:
    """A compiled precondition literal: predicate, terms (parameters or objects), sign, and
    whether the predicate is static (decided by the initial state alone)."""

    name: str
    terms: tuple[str, ...]
    positive: bool
    static: bool


class Grounder:
    """One domain and problem, grounded (see the module docstring)."""

    def __init__(self, domain: HddlDomain, problem: HddlProblem, source: str,
                 reference: bool = False) -> None:
        self.domain = domain
        self.reference = reference
        """The plain path the tests compare the fast one with (the document is the same): every
        reachable action's operator and effects made during :meth:`relax`, not only those a
        method instance uses, and a join that matches every relation to pick the smallest."""
        self.problem = problem
        self.source = source
        self.objects = Objects(domain, problem, source)
        self.types = self.objects.types  # every object's types: what a term may name
        self.effect_cache: dict[tuple[str, tuple[str, ...]], list[Effect]] = {}
        changed = {p for a in domain.actions.values() for p in self.effect_predicates(a.effect)}
        self.static = {p for p in (*domain.predicates, *(c.name for c in problem.init)) if p not in changed}
        self.init = {(c.name, c.args) for c in problem.init}
        self.facts: dict[str, Relation] = {}
        for name, args in dict.fromkeys((c.name, c.args) for c in problem.init):
            self.facts.setdefault(name, Relation()).add(args)
        self.reached = {atom_key(n, a) for n, a in self.init}
        self.closed = False
        self.instances: dict[str, Relation] = {}
        self.actions: dict[tuple[str, tuple[str, ...]], dict[str, Any] | None] = {}
        self.operators: dict[str, Any] = {}
        self.variants: dict[str, Any] = {}
        self.keys: dict[tuple[str, tuple[str, ...]], str] = {}
        self.compiled_pre: dict[tuple[int, frozenset[str]], list[tuple[Literal | None, Sexp]]] = {}
        self.keep_alive: list[Sexp] = []  # the nodes compiled_pre's ids name
        self.tried: dict[int, set[tuple[str, ...]]] = {}  # by id of a method definition (kept by the domain)
        self.kept: dict[str, tuple[int, ...]] = {}
        """An action's parameter positions its instances keep, when a precondition leaves some open."""
        self.patterns: Patterns | None = None
        """The compound task instances the initial task network can reach (``hddl_relevance``),
        by task: for each set of positions known, the values there; None in the reference."""

    def fail(self, message: str) -> InputError:
        return InputError(self.source, "", message)

    # -- types and terms ------------------------------------------------------------------------

    def term(self, term: str, binding: Mapping[str, str]) -> str:
        if term.startswith("?"):
            if term not in binding:
                raise self.fail(f"variable {term} is not a parameter")
            return binding[term]
        if term not in self.types:
            raise self.fail(f"unknown object or constant {term}")
        return term

    # -- formulas -------------------------------------------------------------------------------

    def quantified(self, node: tuple[Sexp, ...], binding: Mapping[str, str]) -> Iterator[dict[str, str]]:
        if len(node) != 3 or not isinstance(node[1], tuple):
            raise self.fail(f"expected ({node[0]} (?vars - type) formula), got {show(node)}")
        variables = self.typed_vars(node[1])
        pools = [self.objects.of(types) for _, types in variables]
        for combo in itertools.product(*pools):
            yield {**binding, **{v: o for (v, _), o in zip(variables, combo)}}

    def typed_vars(self, node: Sexp) -> Typed:
        return Syntax(self.source).typed(node, "quantifier", True)

    def formula(self, node: Sexp, binding: Mapping[str, str]) -> Ground:
        """A precondition or goal under ``binding``, with what grounding can decide decided."""
        if node == ():
            return True
        if isinstance(node, str):
            raise self.fail(f"not a formula: {node}")
        head = node[0]
        if head == "and":
            return conj([self.formula(n, binding) for n in node[1:]])
        if head == "or":
            return disj([self.formula(n, binding) for n in node[1:]])
        if head == "not" and len(node) == 2:
            return negate(self.formula(node[1], binding))
        if head == "imply" and len(node) == 3:
            return disj([negate(self.formula(node[1], binding)), self.formula(node[2], binding)])
        if head == "=" and len(node) == 3 and all(isinstance(n, str) for n in node[1:]):
            return self.term(str(node[1]), binding) == self.term(str(node[2]), binding)
        if head in ("forall", "exists"):
            parts = [self.formula(node[2], b) for b in self.quantified(node, binding)]
            return conj(parts) if head == "forall" else disj(parts)
        if not all(isinstance(n, str) for n in node) or (head not in self.domain.predicates \
                and head not in self.static):
            raise self.fail(f"unsupported formula {show(node)}")
        args = tuple(self.term(str(a), binding) for a in node[1:])
        if head in self.static:
            return (head, args) in self.init
        key = atom_key(str(head), args)
        if self.closed and key not in self.reached:
            return False  # no action ever makes it true
        return ("atom", key)

    def literal(self, node: Sexp, params: frozenset[str]) -> Literal | None:
        """A conjunct of the form ``(p t...)`` or ``(not (p t...))`` whose terms are all
        parameters or known objects, compiled once so that grounding it under a binding is a
        tuple lookup; None for anything else (which :meth:`formula` evaluates)."""
        positive = True
        if isinstance(node, tuple) and len(node) == 2 and node[0] == "not" and isinstance(node[1], tuple):
            positive, node = False, node[1]
        if not isinstance(node, tuple) or not node or not all(isinstance(n, str) for n in node):
            return None
        head = str(node[0])
        if head == "=" or (head not in self.domain.predicates and head not in self.static):
            return None
        terms = tuple(str(t) for t in node[1:])
        if any(t not in params if t.startswith("?") else t not in self.types for t in terms):
            return None
        return Literal(head, terms, positive, head in self.static)

    def compiled(self, node: Sexp, params: frozenset[str]) -> list[tuple[Literal | None, Sexp]]:
        """The conjuncts of a precondition, each with its compiled literal (made once per node)."""
        key = (id(node), params)
        found = self.compiled_pre.get(key)
        if found is None:
            found = [(self.literal(c, params), c) for c in conjuncts(node)]
            self.compiled_pre[key] = found
            self.keep_alive.append(node)
        return found

    def ground_literal(self, literal: Literal, binding: Mapping[str, str]) -> bool | str:
        """The literal under ``binding``: decided (True/False), or the state key it tests."""
        args = tuple(binding[t] if t[0] == "?" else t for t in literal.terms)
        if literal.static:
            return ((literal.name, args) in self.init) == literal.positive
        key = self.key(literal.name, args)
        if self.closed and key not in self.reached:
            return not literal.positive  # no action ever makes it true
        return key

    def key(self, name: str, args: tuple[str, ...]) -> str:
        found = self.keys.get((name, args))
        if found is None:
            found = self.keys[(name, args)] = atom_key(name, args)
        return found

    def pre_doc(self, pre: Sexp, params: frozenset[str], binding: Mapping[str, str]) -> list[Any] | None:
        """``to_doc(formula(pre, binding))``, without building the formula for its literals;
        None when the precondition is false."""
        out: list[Any] = []
        for literal, node in self.compiled(pre, params):
            if literal is None:
                ground = self.formula(node, binding)
                if ground is False:
                    return None
                out.extend(to_doc(ground))
                continue
            value = self.ground_literal(literal, binding)
            if value is False:
                return None
            if value is not True:
                out.append({"has": value} if literal.positive else {"not": {"has": value}})
        return out

    def effect_predicates(self, node: Sexp) -> Iterator[str]:
        if isinstance(node, str) or node == ():
            return
        head = node[0]
        if head == "and":
            for n in node[1:]:
                yield from self.effect_predicates(n)
        elif head == "not" and len(node) == 2:
            yield from self.effect_predicates(node[1])
        elif (head == "forall" and len(node) == 3) or (head == "when" and len(node) == 3):
            yield from self.effect_predicates(node[2])
        elif isinstance(head, str):
            yield head

    def effects(self, node: Sexp, binding: Mapping[str, str], when: Ground = True) -> Iterator[Effect]:
        if node == ():
            return
        if isinstance(node, str):
            raise self.fail(f"not an effect: {node}")
        head = node[0]
        if head == "and":
            for n in node[1:]:
                yield from self.effects(n, binding, when)
        elif head == "forall":
            for b in self.quantified(node, binding):
                yield from self.effects(node[2], b, when)
        elif head == "when" and len(node) == 3:
            condition = conj([when, self.formula(node[1], binding)])
            if condition is not False:
                yield from self.effects(node[2], binding, condition)
        elif head == "not" and len(node) == 2 and isinstance(node[1], tuple):
            for e in self.effects(node[1], binding, when):
                yield Effect(not e.positive, e.atom, e.when)
        elif all(isinstance(n, str) for n in node) and head in self.domain.predicates:
            yield Effect(True, (str(head), tuple(self.term(str(a), binding) for a in node[1:])), when)
        else:
            raise self.fail(f"unsupported effect {show(node)} (numeric effects are not supported)")

    # -- bindings -------------------------------------------------------------------------------

    def bindings(self, params: Typed, pre: Sexp,
                 relations: Sequence[tuple[Sequence[str], Relation]] = ()) -> Iterator[dict[str, str]]:
        """Every binding of ``params`` under which each of ``relations`` (terms, rows) holds a
        row and no conjunct of ``pre`` is false: a join, fewest candidate rows first, with the
        precondition's positive atoms (over the reachable facts) as relations too, and every
        parameter no relation binds over the objects of its type."""
        types = dict(params)
        names = frozenset(v for v, _ in params)
        parts = [(c, free_vars(c), literal) for literal, c in self.compiled(pre, names)]
        joined = [*relations, *((tuple(str(a) for a in c[1:]), self.facts.setdefault(str(c[0]), Relation()))
                                for c, _, _ in parts if isinstance(c, tuple) and c and str(c[0]) in
                                self.domain.predicates and all(isinstance(a, str) for a in c))]
        for c, _, _ in parts:  # (= ?v object): ?v is bound, not run over its type and refused
            if isinstance(c, tuple) and len(c) == 3 and c[0] == "=" and all(isinstance(a, str) for a in c):
                var, value = sorted((str(c[1]), str(c[2])), key=lambda t: not t.startswith("?"))
                if var.startswith("?") and not value.startswith("?") and var in types:
                    only = Relation()
                    only.add((value,))
                    joined.append(((var,), only))
        joined_vars = [{t for t in terms if t.startswith("?")} for terms, _ in joined]

        Checks = tuple[list[tuple[Sexp, Literal | None]], list[tuple[Sequence[str], Relation]]]

        def checks(bound: AbstractSet[str], fresh: set[str]) -> Checks:
            """The conjuncts and relations that binding ``fresh`` (with ``bound`` already bound)
            completes: the ones to test then (the same for every row a relation yields)."""
            return ([(node, literal) for node, vs, literal in parts if vs & fresh and vs <= bound],
                    [r for r, vs in zip(joined, joined_vars) if vs & fresh and vs <= bound])

        def consistent(binding: dict[str, str], tests: Checks) -> bool:
            for node, literal in tests[0]:
                if (self.formula(node, binding) if literal is None
                        else self.ground_literal(literal, binding)) is False:
                    return False
            for terms, relation in tests[1]:
                if tuple(binding.get(t, t) for t in terms) not in relation.rows:
                    return False
            return True

        def extend(binding: dict[str, str]) -> Iterator[dict[str, str]]:
            open_ = [v for v, _ in params if v not in binding]
            if not open_:
                yield binding
                return
            # the relation with the fewest candidate rows (an index's bound, not the matches:
            # matching every relation at every level to pick one cost most of the join)
            chosen: tuple[Sequence[str], Relation] | None = None
            fewest = 0
            for (terms, relation), vs in zip(joined, joined_vars):
                if vs <= binding.keys():
                    continue
                size = len(self.matches(terms, relation, binding, types)) if self.reference else \
                    relation.size([(i, binding.get(t, t)) for i, t in enumerate(terms)
                                   if not t.startswith("?") or t in binding])
                if chosen is None or size < fewest:
                    chosen, fewest = (terms, relation), size
                    if not size:
                        return
            best = self.matches(*chosen, binding, types) if chosen is not None else None
            if best is None:
                var = min(open_, key=lambda v: len(self.objects.of(types.get(v, (OBJECT,)))))
                best = [{var: o} for o in self.objects.of(types.get(var, (OBJECT,)))]
            tests: Checks | None = None
            for extra in best:
                merged = {**binding, **extra}
                if tests is None:  # every row binds the same parameters
                    tests = checks(merged.keys(), set(extra))
                if consistent(merged, tests):
                    yield from extend(merged)

        if consistent({}, checks(set(), set())):
            yield from extend({})

    def matches(self, terms: Sequence[str], relation: Relation, binding: dict[str, str],
                types: Mapping[str, tuple[str, ...]]) -> list[dict[str, str]]:
        """The new bindings under which ``terms`` match a row of ``relation``."""
        fixed = [(i, binding.get(t, t)) for i, t in enumerate(terms) if not t.startswith("?") or t in binding]
        opens = [(i, t, self.objects.member_set(types[t]) if t in types else None)
                 for i, t in enumerate(terms) if t.startswith("?") and t not in binding]
        size = len(terms)
        out = []
        for row in relation.candidates(fixed):
            if len(row) != size:
                continue
            extra: dict[str, str] = {}
            for i, term, members in opens:
                value = row[i]
                if extra.setdefault(term, value) != value or (members is not None and value not in members):
                    break
            else:
                out.append(extra)
        return out

    def adds(self, effect: Sexp, params: frozenset[str]) -> list[tuple[str, tuple[str, ...]]] | None:
        """The positive atoms of an effect made only of atoms, negated atoms and ``and`` (what
        :meth:`relax` needs of it, as predicate and terms to substitute); None for any other
        effect (``forall``, ``when``, an unknown term), which :meth:`effects` grounds."""
        if effect == ():
            return []
        if isinstance(effect, str):
            return None
        if effect[0] == "and":
            out = []
            for item in effect[1:]:
                found = self.adds(item, params)
                if found is None:
                    return None
                out += found
            return out
        if effect[0] == "not" and len(effect) == 2 and isinstance(effect[1], tuple):
            return [] if self.adds(effect[1], params) is not None else None
        if not all(isinstance(n, str) for n in effect) or effect[0] not in self.domain.predicates or \
                any(t not in params if t.startswith("?") else t not in self.types
                    for t in map(str, effect[1:])):
            return None
        return [(str(effect[0]), tuple(str(t) for t in effect[1:]))]

    def substitute(self, terms: tuple[str, ...], binding: Mapping[str, str],
                   params: Typed) -> Iterator[tuple[str, ...]]:
        """``terms`` under ``binding``; a parameter it leaves open runs over its type's objects."""
        args = tuple(binding.get(t, t) for t in terms)
        opens = [i for i, t in enumerate(args) if t.startswith("?")]
        if not opens:
            yield args
            return
        types = dict(params)
        for combo in itertools.product(*(self.objects.of(types[args[i]]) for i in opens)):
            filled = list(args)
            for i, value in zip(opens, combo):
                filled[i] = value
            yield tuple(filled)

    def relax(self) -> None:
        """The facts and actions reachable when deletes are ignored (a superset of every
        reachable state's); afterwards an atom outside it counts as false. Semi-naive: an
        action is joined again only when a predicate of its precondition gained facts. Only
        the added atoms are made here (by substitution, when the effect is a plain
        conjunction); an action's operator is made when a method instance first uses it
        (:meth:`action`), as most reachable actions are used by none (Hiking p04: 34,327
        reachable, 3,200 used).

        A parameter no precondition mentions (Woodworking's actions have up to five, bound only
        by the constants of the methods that call them) is left open: the action is joined
        over its other parameters, an added atom that names it is added for every object of
        its type (the relaxation may only grow), and the action's instances keep the other
        positions only; a method's call binds the rest (:meth:`instantiate`). Enumerating them
        here was the product of their types' sizes (Woodworking p14: still grounding after
        150 s)."""
        done: dict[str, dict[tuple[str, ...], None]] = {name: {} for name in self.domain.actions}
        plain = {a.name: None if self.reference else self.adds(a.effect, frozenset(v for v, _ in a.params))
                 for a in self.domain.actions.values()}
        params: dict[str, Typed] = {}
        for a in self.domain.actions.values():
            used = free_vars(a.pre)
            if plain[a.name] is not None and any(v not in used for v, _ in a.params):
                self.kept[a.name] = tuple(i for i, (v, _) in enumerate(a.params) if v in used)
            params[a.name] = tuple(a.params[i] for i in self.kept.get(a.name, range(len(a.params))))
        reads = {a.name: {str(c[0]) for c in conjuncts(a.pre) if isinstance(c, tuple) and c}
                 for a in self.domain.actions.values()}
        grown: set[str] | None = None
        while grown is None or grown:
            grew: set[str] = set()
            for action in self.domain.actions.values():
                if grown is not None and not reads[action.name] & grown:
                    continue
                for binding in list(self.bindings(params[action.name], action.pre)):
                    args = tuple(binding[v] for v, _ in params[action.name])
                    if args in done[action.name]:
                        continue
                    done[action.name][args] = None
                    added = plain[action.name]
                    if added is not None:
                        for name, terms in added:
                            for atom_args in self.substitute(terms, binding, action.params):
                                relation = self.facts.get(name)
                                if relation is None:
                                    relation = self.facts[name] = Relation()
                                if relation.add(atom_args):
                                    grew.add(name)
                                    self.reached.add(self.key(name, atom_args))
                        continue
                    effects = list(self.effects(action.effect, binding))
                    if self.reference:
                        self.effect_cache[(action.name, args)] = effects
                    for effect in effects:
                        if effect.positive:
                            name, atom_args = effect.atom
                            if self.facts.setdefault(name, Relation()).add(atom_args):
                                grew.add(name)
                                self.reached.add(effect.key)
            grown = grew
        self.closed = True
        for name, rows in done.items():
            relation = self.instances.setdefault(name, Relation())
            for args in rows:  # one that can never apply is refused by method() when used
                if not self.reference or self.action(name, args) is not None:
                    relation.add(args)

    # -- actions --------------------------------------------------------------------------------

    def action(self, name: str, args: tuple[str, ...]) -> dict[str, Any] | None:
        """The ground action's operator document (made once), or None when it can never apply."""
        key = (name, args)
        if key in self.actions:
            return self.actions[key]
        definition = self.domain.actions[name]
        made: dict[str, Any] | None = None
        if len(args) == len(definition.params) and all(
                self.objects.is_a(a, types) for a, (_, types) in zip(args, definition.params)):
            binding = {v: a for (v, _), a in zip(definition.params, args)}
            pre = self.formula(definition.pre, binding)
            if pre is not False:
                effects = self.effect_cache.get(key)
                made = self.make_operator(ground_name(name, args), pre, effects if effects is not None
                                          else list(self.effects(definition.effect, binding)))
        self.actions[key] = made
        return made

    def make_operator(self, name: str, pre: Ground, effects: list[Effect]) -> dict[str, Any]:
        """The operator (or, with undecided conditional effects, the variants' task) ``name``."""
        conditions = list(dict.fromkeys(e.when for e in effects if e.when is not True))
        if not conditions:
            self.operators[name] = operator_doc(pre, effects)
            return {"name": name}
        if len(conditions) > MAX_CONDITIONS:
            raise self.fail(f"action {name}: more than {MAX_CONDITIONS} conditional effects whose "
                            "conditions grounding cannot decide")
        methods = {}
        for bits in itertools.product((True, False), repeat=len(conditions)):
            assumed = conj([c if b else negate(c) for c, b in zip(conditions, bits)])
            guard = conj([pre, assumed])
            if guard is False:
                continue
            label = "".join("1" if b else "0" for b in bits)
            variant = f"{name}{VARIANT}{label}"
            chosen = {c for c, b in zip(conditions, bits) if b}
            self.operators[variant] = operator_doc(
                pre, [e for e in effects if e.when is True or e.when in chosen])
            methods[f"{variant}_m"] = {"task": name, "pre": to_doc(assumed), "subtasks": [variant]}
        self.variants[name] = methods
        return {"name": name}

    # -- the task decomposition graph -----------------------------------------------------------

    def document(self) -> dict[str, Any]:
        problem = self.problem
        if problem.network is None:
            raise self.fail("the problem has no :htn initial task network (goal-only problems are "
                            "classical planning, not HTN)")
        self.relax()
        if not self.reference:
            self.patterns = relevant(self.domain, self.objects, problem.network)
        goal = self.formula(problem.goal, {})
        if goal is False:
            raise InfeasibleProblem(f"{self.source}: no plan: the goal can never hold (it needs a "
                                    "fact no action can make true, or a static fact that is false)")
        self.operators[GOAL_OPERATOR] = {"pre": to_doc(goal), "duration": 0,
                                         "effects": {"set": {}, "unset": []}}
        methods: dict[str, dict[str, Any]] = {}
        tasks: dict[str, list[str]] = {}
        # a task's methods in a canonical order, whatever order the join made them in: cheapest
        # first, then the domain's order of method definitions, then the objects' order of
        # their parameters (a variant of a conditional action keeps its place among its own)
        position = {name: i for i, name in enumerate(self.types)}
        rank: dict[str, tuple[int, tuple[int, ...]]] = {}
        grown: set[str] | None = None  # None: the first round joins every method
        while grown is None or grown:
            grew: set[str] = set()
            for number, definition in enumerate(self.domain.methods):
                if grown is not None and not any(c.name in grown for c in definition.subtasks):
                    continue
                if self.patterns is not None and definition.task.name not in self.patterns:
                    continue  # the initial task network never reaches its task
                for name, doc, args in self.instantiate(definition):
                    if name not in methods:
                        methods[name] = doc
                        rank[name] = (number, tuple(position[binding] for binding in split_name(name)[1]))
                        tasks.setdefault(doc["task"], []).append(name)
                        if self.instances.setdefault(definition.task.name, Relation()).add(args):
                            grew.add(definition.task.name)
            grown = grew
        roots = list(self.instantiate(problem.network, ROOT_TASK))
        if not roots:
            raise InfeasibleProblem(f"{self.source}: no plan: the initial task network has no "
                                    "decomposition into actions that can ever apply (grounding "
                                    "proves it)")
        for name, doc, _ in roots:
            doc["subtasks"].append(GOAL_OPERATOR)
            methods[name] = doc
            tasks.setdefault(ROOT_TASK, []).append(name)
        for task_name, variants in self.variants.items():
            tasks[task_name] = list(variants)
            methods.update(variants)
        kept = self.reachable(methods, tasks)
        operators = {n: op for n, op in self.operators.items() if n in kept}
        cost = cheapest(methods, tasks, set(self.operators))
        last = (len(self.domain.methods), ())

        def left_recursive(doc: dict[str, Any]) -> bool:
            """Whether the method's first subtask is its own task again (other arguments): tried
            first, it only grows the network without applying anything (Hiking's trip_to2
            splits a trip at any next place, forever), so such methods go last."""
            subtasks = doc["subtasks"]
            return bool(subtasks) and split_name(subtasks[0])[0] == split_name(doc["task"])[0] \
                and subtasks[0] in tasks
        order = sorted((n for n in methods if n in kept),
                       key=lambda n: (left_recursive(methods[n]),
                                      sum(cost.get(s, INFINITE) for s in methods[n]["subtasks"]),
                                      rank.get(n, last)))
        return {"name": problem.name or self.domain.name,
                "htn": {"state": {atom_key(n, a): True for n, a in sorted(self.init)
                                  if n not in self.static},
                        "goal": ROOT_TASK, "operators": operators,
                        "methods": {n: methods[n] for n in order}}}

    def projected(self, name: str, args: tuple[str, ...]) -> tuple[str, ...]:
        """A call's arguments at the positions its action's instances keep (see :meth:`relax`)."""
        kept = self.kept.get(name)
        if kept is None or len(args) != len(self.domain.actions[name].params):
            return args
        return tuple(args[i] for i in kept)

    def instantiate(self, definition: MethodDef, root: str | None = None) \
            -> Iterator[tuple[str, dict[str, Any], tuple[str, ...]]]:
        """The method's instances whose every subtask has an instance already: name, document
        and the ground arguments of the task it achieves."""
        relations: list[tuple[Sequence[str], Relation]] = [
            (self.projected(c.name, c.args), self.instances.setdefault(c.name, Relation()))
            for c in definition.subtasks]
        if root is None:
            relations += pattern_relations(self.patterns, definition)
        tried = self.tried.setdefault(id(definition), set())  # a binding's verdict never changes
        for binding in self.bindings(definition.params, definition.pre, relations):
            values = tuple(binding[v] for v, _ in definition.params)
            if values in tried:
                continue
            tried.add(values)
            made = self.method(definition, root, binding)
            if made is not None:
                yield made

    def method(self, definition: MethodDef, root: str | None, binding: dict[str, str]) \
            -> tuple[str, dict[str, Any], tuple[str, ...]] | None:
        """A method instance (name, document, the achieved task's arguments); None when it can
        never apply (a false precondition, an action that can never apply) or that the initial
        task network never reaches."""
        args = tuple(self.term(a, binding) for a in definition.task.args)
        if root is None and not wanted(self.patterns, definition.task.name, args):
            return None
        pre = self.pre_doc(definition.pre, frozenset(v for v, _ in definition.params), binding)
        if pre is None:
            return None
        subtasks = []
        for call in definition.subtasks:
            call_args = tuple(binding[a] if a in binding else self.term(a, binding) for a in call.args)
            if call.name in self.domain.actions:
                made = self.action(call.name, call_args)
                if made is None:
                    return None
                subtasks.append(made["name"])
            elif call.name in self.domain.tasks:
                subtasks.append(ground_name(call.name, call_args))
            else:
                raise self.fail(f"method {definition.name}: unknown task or action {call.name}")
        values = [binding[v] for v, _ in definition.params]
        task = root if root is not None else ground_name(definition.task.name, args)
        name = ground_name(ROOT_METHOD if root is not None else definition.name, values)
        return name, {"task": task, "pre": pre, "subtasks": subtasks,
                      "unordered": definition.unordered}, args

    def reachable(self, methods: Mapping[str, dict[str, Any]], tasks: Mapping[str, list[str]]) -> set[str]:
        """Names of the tasks, methods and operators the root reaches."""
        kept: set[str] = set()
        todo = [ROOT_TASK]
        while todo:
            task = todo.pop()
            if task in kept:
                continue
            kept.add(task)
            for name in tasks.get(task, ()):
                kept.add(name)
                todo.extend(methods[name]["subtasks"])
        return kept


INFINITE = 10 ** 9


def cheapest(methods: Mapping[str, dict[str, Any]], tasks: Mapping[str, list[str]],
             operators: set[str]) -> dict[str, int]:
    """The fewest actions each task can take, preconditions ignored (a least fixpoint): the
    planner tries a task's methods in the file's order, so the document lists the cheapest
    first (ties keep the domain's order), which finds short plans first and leaves recursion
    for when nothing shorter works."""
    cost = {name: 0 if name == GOAL_OPERATOR else 1 for name in operators}
    changed = True
    while changed:
        changed = False
        for task, names in tasks.items():
            best = min((sum(cost.get(s, INFINITE) for s in methods[n]["subtasks"]) for n in names),
                       default=INFINITE)
            if best < cost.get(task, INFINITE):
                cost[task] = best
                changed = True
    return cost
