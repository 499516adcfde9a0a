"""The HTN planner: depth-first decomposition with backtracking, bounded in depth and nodes,
and, for a first plan the depth-first search does not find in
:data:`~evolve.defaults.HTN_DEPTH_FIRST_NODES` nodes (or an eighth of the node budget,
:data:`~evolve.defaults.HTN_DEPTH_FIRST_SHARE`), a greedy best-first search on the relaxed
composition (:meth:`Planner.best_first`).

A compound task is replaced by the subtasks of the first method whose guard
holds; a primitive one is applied when its precondition holds; when a branch
fails, the planner backtracks to the last choice and tries the next method (or
the next order of an unordered method's subtasks). This is progression search:
a node is a state and the task network still to do, and a node met again (same
state, same tasks, none of them with less depth left) is not searched twice, so
recursive methods cannot loop. In the first plan's depth-first phase a compound task met again
before any step since it was decomposed on the branch is cut too (a recursion that made no
progress: Hiking's ``trip_to2`` splits a trip whose first half is the same trip); such a cut
may cut a plan, so it makes the phase's exhaustion prove nothing. How deep compound tasks may
nest is not one fixed limit but a portfolio, as in iterative deepening with restarts: limits from
:data:`FIRST_DEPTH` growing up to ``max_depth``, each run in turn with a node
cap that grows every cycle. A shallow limit finds short plans and stops a
recursive method from wandering; a deep one finds the plans only deep nesting
allows; neither can starve the other, and which one a domain needs need not be
known. ``max_nodes`` bounds the nodes of one call over all its rounds. Every
call ends: with a plan, or with a
:class:`~evolve.problems.htn.decomposition.NoPlan` saying which limit was hit
(the depth, the nodes) or that the space is exhausted, and what blocked the
deepest attempt.

The order in which alternatives are tried is the genome the search evolves: a
:class:`~evolve.problems.htn.decomposition.Choice` per choice point (the method
preferred at one occurrence of a compound task, the order of one unordered
method's subtasks), keyed by the occurrence's path in the decomposition tree. A
choice is a preference, not a command: when the preferred method fails the
others are still tried, so every genome decodes to a plan whenever the domain
has one. The stack is explicit, so deep plans never meet Python's recursion
limit. The values the planner returns live in
:mod:`evolve.problems.htn.decomposition`.
"""

from __future__ import annotations

import heapq
import itertools
import json
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from evolve import defaults
from evolve.model.collector import collector_paused
from evolve.problems.htn.decomposition import (
    Choice,
    ChoiceValue,
    Chooser,
    Decomposition,
    NoPlan,
    Outcome,
    Step,
)
from evolve.problems.htn.domain import (
    All,
    Domain,
    Has,
    Method,
    Not,
    Predicate,
    State,
    Unknown,
    Value,
    atoms,
    first_failing,
    holds,
    show,
    truth,
)
from evolve.problems.htn.fallback import DecompositionFallback, FallbackReply
from evolve.problems.htn.goal_reach import GoalReach
from evolve.problems.htn.hddl_split import is_part
from evolve.problems.htn.heuristic import INFINITE, Costs, RelaxedComposition
from evolve.problems.htn.memory import MemoryGuard
from evolve.problems.htn.nodes import Choices, Node, Pending, finished, network_key, short_path

Check = tuple[tuple[str, ...], tuple[str, ...]] | Literal[False]
"""A guard compiled by :func:`literals`: the keys it needs set and unset, or False (walk it)."""
Guide = Callable[[int, str], bool]
"""Whether the operator named may be the plan's step at that position (0 first): see
:meth:`Planner.follow`."""
FIRST_DEPTH = 8
"""The shallowest depth limit of the portfolio; each next one is :data:`DEPTH_GROWTH` times
deeper, up to ``max_depth``."""
DEPTH_GROWTH = 2
FIRST_CAP = 1000
"""Nodes each depth limit gets in the first cycle of the portfolio."""
CAP_GROWTH = 4
"""How much more each cycle gives (so the total is a small multiple of the last cycle's)."""
ANCHORED = 8
"""A task with at least this many methods has only the methods whose anchor fact holds tried
(see :meth:`Planner.candidates`); with fewer, all are (the index would not pay)."""
CLOCK_EVERY = 256
"""Nodes between two looks at the clock when a search has a deadline (a node costs microseconds
to a few milliseconds, so the deadline is met to a few hundredths of a second)."""
STATE_CACHE = 16
"""States whose relaxed costs the best-first search keeps (most nodes only decompose, keeping
their parent's state)."""


def literals(pred: Predicate) -> Check:
    """``(keys that must be set, keys that must not be)`` of a conjunction of ``has`` and
    ``not has`` tests; False for any other predicate."""
    positive: list[str] = []
    negative: list[str] = []
    todo = [pred]
    while todo:
        item = todo.pop()
        if isinstance(item, Has):
            positive.append(item.key)
        elif isinstance(item, Not) and isinstance(item.inner, Has):
            negative.append(item.inner.key)
        elif isinstance(item, All):
            todo.extend(item.items)
        else:
            return False
    return tuple(positive), tuple(negative)


@dataclass
class Learned:
    """What the fallback taught during a run: methods (kept for later choice points), the verdict
    on every question asked (so a question is asked once), and records for the events."""

    methods: list[Method] = field(default_factory=list)
    verdicts: dict[str, str | None] = field(default_factory=dict)
    records: list[dict[str, Any]] = field(default_factory=list)


def state_key(task: str, state: State) -> str:
    """A question to the fallback: the task and the state, as canonical text."""
    return json.dumps([task, {k: str(v) if isinstance(v, Unknown) else v for k, v in state.items()}],
                      sort_keys=True, separators=(",", ":"))


class Planner:
    """Decomposes a domain's goal; ``fallback`` (optional) is asked when no method applies.

    A planner with a fallback is stateful: accepted proposals become learned
    methods that later decompositions use too, and each question is asked once.
    """

    def __init__(self, domain: Domain, fallback: DecompositionFallback | None = None,
                 learned: Learned | None = None, memory: MemoryGuard | None = None) -> None:
        self.domain = domain
        self.memory = memory if memory is not None else MemoryGuard()
        """Stops every search (``memory``) once the machine's free memory runs low."""
        self.fallback = fallback
        self.learned = learned if learned is not None else Learned()
        self.deepest: tuple[int, str] = (-1, "")
        self.limit = domain.max_depth
        self.cut = False
        self.repeats = False
        """Whether a compound task met again before any step since it was decomposed is cut
        (the first plan's depth-first phase: see :meth:`plan`)."""
        self.pruned = False
        """Whether the last search cut such a repeat (so its exhaustion proves nothing)."""
        self.by_task: dict[str, tuple[Method, ...]] = {}
        for method in domain.methods:
            self.by_task[method.task] = (*self.by_task.get(method.task, ()), method)
        for method in self.learned.methods:
            self.by_task[method.task] = (*self.by_task.get(method.task, ()), method)
        self._relaxation: RelaxedComposition | None = None
        self._goal_reach: GoalReach | None = None
        self.goal_check = fallback is None
        """Whether a node whose tasks can no longer make a goal fact true is given up
        (:mod:`~evolve.problems.htn.goal_reach`; off with a fallback, which can learn methods)."""
        self._components: dict[str, int] | None = None
        self.checks: dict[str, Check] = {}
        self.op_checks: dict[str, Check] = {}
        self.anchors: dict[str, tuple[dict[str, list[int]], list[int]]] = {}
        self.deadline: float | None = None
        """A :func:`time.perf_counter` time at which every search ends (``seconds``), or None."""
        self.guide: Guide | None = None
        """Which operator may come at which step, for the search :meth:`follow` runs."""

    @property
    def cached_methods(self) -> tuple[Method, ...]:
        """The methods the fallback taught that the planner kept (the sources' name for
        ``learned.methods``): the next call uses them without asking again."""
        return tuple(self.learned.methods)

    def relaxation(self) -> RelaxedComposition:
        """The domain's compiled heuristic (built on first use: the decodes of the evolutionary
        search never need it)."""
        if self._relaxation is None:
            self._relaxation = RelaxedComposition(self.domain)
        return self._relaxation

    def methods(self, task: str) -> tuple[Method, ...]:
        return self.by_task.get(task, ())

    def goal_reach(self) -> GoalReach:
        """What each task can still make true of the goal (built on first use)."""
        if self._goal_reach is None:
            self._goal_reach = GoalReach(self.domain, self.by_task)
            self.goal_check = self.goal_check and bool(self._goal_reach.need)  # nothing to watch
        return self._goal_reach

    def plan(self, genome: Sequence[Choice] = (), chooser: Chooser | None = None,
             state: State | None = None, max_nodes: int | None = None,
             first_depth: int | None = None) -> Outcome:
        """Decompose the goal from ``state`` (default: the domain's), trying ``genome``'s
        preferences first; open choice points go to ``chooser`` (default: file order), in at
        most ``max_nodes`` nodes (default: the domain's), depth limits from ``first_depth``
        (default :data:`FIRST_DEPTH`) on."""
        # a search makes no cycles (Freecell 02-2, 44,328 nodes: none to collect after it, the
        # same peak memory), so the collector's passes over its growing frontier find nothing:
        # 8.96 s with it held back against 11.41 s
        with collector_paused():
            start = dict(self.domain.state if state is None else state)
            root = Pending(self.domain.goal, self.domain.goal, 0, (), None)
            total = max_nodes or self.domain.max_nodes
            if genome or chooser is not None or self.fallback is not None or first_depth is not None:
                return self.search(root, start, {c.key: c.value for c in genome}, chooser,
                                   use_fallback=True, max_nodes=total, first_depth=first_depth)
            # the first plan: the domain's order depth-first for a while (cheap per node, and what a
            # small domain needs), then the heuristic search with what is left
            self.repeats = True
            try:
                quick = self.search(root, start, {}, None, use_fallback=True,
                                    max_nodes=min(total, max(defaults.HTN_DEPTH_FIRST_NODES,
                                                             total // defaults.HTN_DEPTH_FIRST_SHARE)))
            finally:
                self.repeats = False
            if isinstance(quick, Decomposition) or not quick.exhausted or quick.nodes >= total \
                    or quick.stopped:
                return quick
            guided = self.best_first(root, start, total - quick.nodes)
            return replace(guided, nodes=guided.nodes + quick.nodes)

    def follow(self, guide: Guide, max_nodes: int) -> Outcome:
        """The decomposition whose steps ``guide`` allows, one by one (a plan found apart from
        this planner, such as :mod:`~evolve.problems.htn.lifted`'s, found again in this domain's
        terms: its choices and tree), depth-first in at most ``max_nodes`` nodes."""
        self.guide = guide
        try:
            root = Pending(self.domain.goal, self.domain.goal, 0, (), None)
            with collector_paused():
                return self.search(root, dict(self.domain.state), {}, None, use_fallback=False,
                                   max_nodes=max_nodes)
        finally:
            self.guide = None

    def search(self, root: Pending | None, state: State, prefs: Mapping[str, ChoiceValue],
               chooser: Chooser | None, use_fallback: bool, max_nodes: int | None = None,
               first_depth: int | None = None) -> Outcome:
        """Depth limits tried as a portfolio (see the module docstring): in each cycle every
        open limit, shallow to deep, gets ``cap`` nodes; a limit whose space is exhausted is
        closed, and a round the depth never cut makes the deeper limits of its cycle the same
        search, so they are skipped; the cap grows by :data:`CAP_GROWTH` each cycle until
        ``max_nodes`` are spent."""
        domain = self.domain
        limits = [min(first_depth or FIRST_DEPTH, domain.max_depth)]
        while limits[-1] < domain.max_depth:
            limits.append(min(DEPTH_GROWTH * limits[-1], domain.max_depth))
        cap, used, total = FIRST_CAP, 0, max_nodes or domain.max_nodes
        last: NoPlan | None = None
        while limits:
            for limit in list(limits):
                budget = min(cap, total - used)
                if budget <= 0:
                    assert last is not None
                    return replace(last, reason="budget", nodes=used, limit=total)
                outcome = self.bounded(root, state, prefs, chooser, use_fallback, limit, budget)
                used += outcome.nodes
                if isinstance(outcome, Decomposition):
                    return replace(outcome, nodes=used, limit=limit)
                last = outcome
                if outcome.reason == "no-plan" or outcome.stopped or \
                        (outcome.reason == "depth" and not self.cut):
                    return replace(outcome, nodes=used)  # no plan (but for repeats cut), or stopped
                if outcome.reason == "depth":  # exhausted within this limit: close it
                    limits = [x for x in limits if x > limit]
                elif not self.cut:  # the budget ran out before the depth mattered
                    break
            cap *= CAP_GROWTH
        assert last is not None
        return replace(last, nodes=used)

    def bounded(self, root: Pending | None, state: State, prefs: Mapping[str, ChoiceValue],
                chooser: Chooser | None, use_fallback: bool, limit: int, budget: int) -> Outcome:
        """Depth-first search with compound tasks nested at most ``limit`` deep, at most
        ``budget`` nodes, and a node dominated by one seen before not searched again."""
        self.reset(limit)
        seen: dict[tuple[object, tuple[str, ...]], tuple[tuple[int, ...], frozenset[str]]] = {}
        stack: list[Iterator[Node]] = [iter([Node(root, state)])]
        nodes = 0
        while stack:
            node = next(stack[-1], None)
            if node is None:
                stack.pop()
                continue
            nodes += 1
            if node.pending is None:
                return finished(node, nodes)
            if nodes >= budget:
                return self.out_of_budget(nodes)
            if nodes % CLOCK_EVERY == 1 and self.past_deadline():
                return self.out_of_time(nodes)
            key, depths = network_key(node)
            before, cut_before = seen.get(key, ((), node.recent))
            # met before with at least as much depth left and no more repeats cut below it
            if before and len(before) == len(depths) and cut_before <= node.recent and \
                    all(b <= d for b, d in zip(before, depths)):
                self.blocked(node, "every way on returns to a state and task network already searched "
                                   "(a cycle)", node.pending.path)
                continue  # met before with at least as much depth left: nothing new below
            seen[key] = depths, node.recent
            stack.append(self.expand(node, prefs, chooser, use_fallback))
        return self.exhausted(nodes)

    def best_first(self, root: Pending | None, state: State, budget: int) -> Outcome:
        """Greedy best-first search on the relaxed composition's estimate (see
        :mod:`evolve.problems.htn.heuristic`): the open node whose tasks look cheapest from its
        state is expanded first, ties to the newest (so a decomposition the estimate likes is
        followed down at once); a node whose estimate is infinite can never finish and is
        dropped, and a state and task network met before is not expanded again."""
        relaxation = self.relaxation()
        self.reset(self.domain.max_depth)
        by_state: OrderedDict[frozenset[tuple[str, Value]], Costs] = OrderedDict()

        def estimate(node: Node, facts: frozenset[tuple[str, Value]]) -> int:
            costs = by_state.get(facts)
            if costs is None:
                costs = relaxation.costs(node.state)
                by_state[facts] = costs
                if len(by_state) > STATE_CACHE:
                    by_state.popitem(last=False)
            names = node.pending.network[0] if node.pending is not None else ()
            return relaxation.estimate(costs, names)

        start = Node(root, state)
        first = estimate(start, frozenset(state.items()))
        if first >= INFINITE:
            return NoPlan("no-plan", "the relaxed problem proves the tasks can never be done", 1)
        tie = 0
        queue: list[tuple[int, int, Node]] = [(first, tie, start)]
        seen: set[tuple[frozenset[tuple[str, Value]], tuple[str, ...]]] = set()
        nodes = 0
        while queue:
            _, _, node = heapq.heappop(queue)
            nodes += 1
            if node.pending is None:
                return finished(node, nodes)
            if nodes >= budget:
                return self.out_of_budget(nodes)
            if nodes % CLOCK_EVERY == 1 and self.past_deadline():
                return self.out_of_time(nodes)
            facts = frozenset(node.state.items())
            key = (facts, node.pending.network[0])
            if key in seen:
                continue
            seen.add(key)
            for child in self.expand(node, {}, None, False):
                child_facts = facts if child.state is node.state else frozenset(child.state.items())
                value = estimate(child, child_facts)
                if value >= INFINITE:
                    self.blocked(child, "the relaxed problem proves the remaining tasks can never be "
                                        "done", node.pending.path)
                    continue
                tie -= 1
                heapq.heappush(queue, (value, tie, child))
        return self.exhausted(nodes)

    def reset(self, limit: int) -> None:
        """Start a search (:meth:`bounded`, :meth:`best_first`): nothing tried yet, compound
        tasks nested at most ``limit`` deep, the depth not cut."""
        self.deepest = (-1, "")
        self.limit = limit
        self.cut = False
        self.pruned = False

    def out_of_budget(self, nodes: int) -> NoPlan:
        """The outcome of a search that spent its node budget (``nodes``) before finishing."""
        return NoPlan("budget", self.deepest[1] or "nothing tried", nodes, self.domain.max_nodes)

    def past_deadline(self) -> bool:
        """Whether every search must stop now: the :attr:`deadline` passed, or :attr:`memory`
        tripped."""
        return (self.deadline is not None and time.perf_counter() >= self.deadline) or self.memory.low()

    def out_of_time(self, nodes: int) -> NoPlan:
        """The outcome of a search stopped by :attr:`deadline` or :attr:`memory` after ``nodes``."""
        if self.memory.tripped is not None:
            return NoPlan("memory", self.memory.describe(), nodes)
        return NoPlan("seconds", self.deepest[1] or "nothing tried", nodes)

    def exhausted(self, nodes: int) -> NoPlan:
        """The outcome of a search whose open nodes ran out after ``nodes``: ``depth`` when the
        depth limit cut a branch (a plan may lie deeper), else ``no-plan``."""
        if self.cut or self.pruned:
            return NoPlan("depth", self.deepest[1] or "nothing tried", nodes, self.domain.max_depth)
        return NoPlan("no-plan", self.deepest[1] or f"nothing decomposes {self.domain.goal!r}", nodes)

    def blocked(self, node: Node, why: str, at: str = "") -> None:
        """Remember the failure of the attempt that got furthest (most steps applied), ``at``
        that task's path, shortened (:func:`~evolve.problems.htn.nodes.short_path`) and only
        then: most nodes meet a failure, and a deep path is kilobytes of text."""
        if node.length > self.deepest[0]:
            self.deepest = (node.length, f"{why} (at {short_path(at)})" if at else why)

    def expand(self, node: Node, prefs: Mapping[str, ChoiceValue], chooser: Chooser | None,
               use_fallback: bool) -> Iterator[Node]:
        """The alternatives for the node's first pending task, best-preferred first."""
        task = node.pending
        assert task is not None
        domain = self.domain
        if task.depth > self.limit:
            self.cut = True
            if node.length > self.deepest[0]:  # the path shortened only for the message kept
                self.blocked(node, f"depth {self.limit} reached at {short_path(task.path)}")
            return
        operator = domain.operators.get(task.name)
        if operator is not None:
            if self.guide is not None and not self.guide(node.length, operator.name):
                self.blocked(node, f"{operator.name} is not the guide's step {node.length + 1}", task.path)
                return
            if self.guard(self.op_checks, operator.name, operator.pre, node.state):
                step = Step(operator.name, task.path, task.trail)
                yield Node(task.rest, operator.effects.apply(node.state), (step, node.steps), node.choices,
                           node.applied, length=node.length + 1)  # a step: nothing recent
            elif node.length > self.deepest[0]:
                failing = first_failing(operator.pre, node.state)
                self.blocked(node, f"{operator.name} needs {show(failing or operator.pre)}", task.path)
            return
        if self.goal_check:  # at a compound task: where the choices that lose a goal fact show
            fact = self.goal_reach().dead(task, node.state)
            if fact is not None:
                self.blocked(node, f"{fact} can no longer be made true: no task left reaches an "
                                   "action that adds it", task.path)
                return
        if self.repeats and task.name in node.recent:
            self.pruned = True
            self.blocked(node, f"{task.name} is decomposed again before any step", task.path)
            return
        methods = self.methods(task.name)
        applicable = False
        if node.length > self.deepest[0] or len(methods) < ANCHORED:
            order: Iterable[int] = self.method_order(task.path, len(methods), prefs, chooser)
        else:  # only the methods whose anchor fact holds (the failures' messages are not kept)
            order = self.candidates(task.name, methods, node.state,
                                    self.preferred(task.path, len(methods), prefs, chooser))
        for index in order:
            method = methods[index]
            if not self.method_guard(method, node.state):
                if node.length > self.deepest[0]:  # the message only when it is kept
                    failing = first_failing(method.pre, node.state)
                    if failing is None and not holds(method.pre, node.state):
                        failing = method.pre
                    why = show(failing) if failing is not None else self.opening(method, node.state)
                    self.blocked(node, f"method {method.name} of {task.name} needs {why}", task.path)
                continue
            applicable = True
            yield from self.apply_method(node, task, method, index, len(methods), prefs, chooser)
        if applicable:
            return
        if not methods:
            self.blocked(node, f"no method for {task.name}", task.path)
        if use_fallback and self.fallback is not None:
            learned = self.ask(task, node.state)
            if learned is not None:
                methods = self.methods(task.name)
                yield from self.apply_method(node, task, learned, methods.index(learned), len(methods),
                                             prefs, chooser)

    def method_check(self, method: Method) -> Check:
        """The keys a method needs set and unset to be applied: its guard's, and, when its first
        subtask is an operator (an ordered method), that operator's precondition's too, since the
        operator runs in the very state the method is applied in. A grounded method often has no
        guard of its own (Towers' ``move_abstract`` has one method per ring and places, all but one
        failing at their ``move``): each would be a node of its own; so it is none, and the anchor
        index (:meth:`candidates`) skips it."""
        check = self.checks.get(method.name)
        if check is None:
            check = literals(method.pre)
            first = self.domain.operators.get(method.subtasks[0]) if method.subtasks else None
            ordered = not method.unordered or len(method.subtasks) == 1
            if check is not False and first is not None and ordered:
                extra = self.op_checks.get(first.name)
                if extra is None:
                    extra = self.op_checks[first.name] = literals(first.pre)
                if extra is not False:
                    check = (tuple(dict.fromkeys((*check[0], *extra[0]))),
                             tuple(dict.fromkeys((*check[1], *extra[1]))))
            self.checks[method.name] = check
        return check

    def method_guard(self, method: Method, state: State) -> bool:
        """Whether ``method`` may be applied in ``state`` (see :meth:`method_check`)."""
        check = self.method_check(method)
        return holds(method.pre, state) if check is False else self.keys_hold(check, state)

    def opening(self, method: Method, state: State) -> str:
        """Why a method whose guard holds cannot start: its first operator's precondition."""
        first = self.domain.operators[method.subtasks[0]]
        failing = first_failing(first.pre, state)
        return f"its first step {first.name}'s {show(failing or first.pre)}"

    def guard(self, checks: dict[str, Check], name: str,
              pre: Predicate, state: State) -> bool:
        """``holds(pre, state)``, with a conjunction of ``has`` and ``not has`` tests (all a
        grounded HDDL domain has) checked as two key lists instead of walking the predicate."""
        check = checks.get(name)
        if check is None:
            check = checks[name] = literals(pre)
        return holds(pre, state) if check is False else self.keys_hold(check, state)

    @staticmethod
    def keys_hold(check: tuple[tuple[str, ...], tuple[str, ...]], state: State) -> bool:
        """Whether every key of ``check``'s first list is set in ``state`` and none of its second."""
        positive, negative = check
        for key in positive:
            value = state.get(key)
            if value is None or value is False or isinstance(value, Unknown):
                return False
        for key in negative:
            value = state.get(key)
            if value is not None and value is not False:
                return False
        return True

    def preferred(self, key: str, count: int, prefs: Mapping[str, ChoiceValue],
                  chooser: Chooser | None) -> int:
        preferred = prefs.get(key)
        if not isinstance(preferred, int) or not 0 <= preferred < count:
            preferred = chooser.method(key, count) if chooser is not None and count > 1 else 0
        return preferred

    def method_order(self, key: str, count: int, prefs: Mapping[str, ChoiceValue],
                     chooser: Chooser | None) -> list[int]:
        if not count:
            return []
        preferred = self.preferred(key, count, prefs, chooser)
        return [preferred, *(i for i in range(count) if i != preferred)]

    def candidates(self, task: str, methods: Sequence[Method], state: State, preferred: int) -> list[int]:
        """The methods of ``task`` (indices, in :meth:`method_order`'s order) whose guard may
        hold in ``state``: those with no fact a guard must have set, and those whose first such
        fact (their anchor) is set. A task of a grounded domain can have thousands of methods,
        of which a state's few facts admit a handful."""
        index = self.anchors.get(task)
        if index is None:
            by_key: dict[str, list[int]] = {}
            free: list[int] = []
            for i, method in enumerate(methods):
                check = self.method_check(method)
                if check is False or not check[0]:
                    free.append(i)
                else:
                    by_key.setdefault(check[0][0], []).append(i)
            index = self.anchors[task] = (by_key, free)
        by_key, free = index
        found = list(free)
        if len(by_key) <= len(state):
            for key, indices in by_key.items():
                value = state.get(key)
                if value is not None and value is not False:
                    found.extend(indices)
        else:
            for key, value in state.items():
                if value is not None and value is not False and key in by_key:
                    found.extend(by_key[key])
        found.sort()
        if preferred in found:
            found.remove(preferred)
            found.insert(0, preferred)
        return found

    def apply_method(self, node: Node, task: Pending, method: Method, index: int, count: int,
                     prefs: Mapping[str, ChoiceValue], chooser: Chooser | None) -> Iterator[Node]:
        here = f"{task.path}/{method.name}"
        size = len(method.subtasks)
        choice = Choice(task.path, index, count)
        order_key = f"{task.path}>{method.name}"
        depth = task.depth if is_part(task.name) else task.depth + 1  # a split subtask: its own level
        # only under the last depth limit of the portfolio (max_depth): the shallower ones are
        # there to stop a recursive method from wandering (AssemblyHierarchical depth03: 187
        # steps found at limit 8 when its tail recursion did not nest, 23 when it did)
        tail = self.limit >= self.domain.max_depth and not method.unordered and bool(method.subtasks) \
            and self.recursive(task.name, method.subtasks[-1])
        for order in self.orders(order_key, size, method.unordered, prefs, chooser):
            rest = task.rest
            for i in reversed(order):
                # an ordered method's last subtask takes its task's place, nothing after it
                # waits on it: a recursion through it (Towers' rotate, exchange, rotate, ...)
                # is a loop, which the state and network check cuts, not a nesting
                # (a last subtask that cannot lead back to its task still nests: max_depth
                # bounds a chain of methods as the manual says)
                level = task.depth if i == order[-1] and tail else depth
                rest = Pending(method.subtasks[i], f"{here}#{i}", level,
                               (*task.trail, (here, not method.unordered, i)), rest)
            choices: Choices = (choice, node.choices)
            if method.unordered and size > 1:
                choices = (Choice(order_key, tuple(order), size), choices)
            yield Node(rest, node.state, node.steps, choices,
                       ((task.path, task.name, method.name), node.applied),
                       node.recent | {task.name} if self.repeats else node.recent, node.length)

    def recursive(self, task: str, subtask: str) -> bool:
        """Whether ``subtask`` can decompose back into ``task`` (the two are in one strongly
        connected component of the task decomposition graph, :func:`components`)."""
        if self._components is None:
            self._components = components(self.by_task)
        found = self._components.get(task)
        return found is not None and found == self._components.get(subtask)

    def orders(self, key: str, size: int, unordered: bool, prefs: Mapping[str, ChoiceValue],
               chooser: Chooser | None) -> Iterator[tuple[int, ...]]:
        identity = tuple(range(size))
        if not unordered or size < 2:
            yield identity
            return
        preferred = prefs.get(key)
        if not (isinstance(preferred, tuple) and sorted(preferred) == list(identity)):
            preferred = chooser.order(key, size) if chooser is not None else identity
        yield preferred
        for order in itertools.permutations(identity):
            if order != preferred:
                yield order

    # -- the fallback -------------------------------------------------------------------------

    def ask(self, task: Pending, state: State) -> Method | None:
        """The fallback's method for ``task`` in ``state`` once the planner accepts it; each
        question is asked once a run, its verdict and record kept."""
        assert self.fallback is not None
        question = state_key(task.name, state)
        if question in self.learned.verdicts:
            name = self.learned.verdicts[question]
            return next((m for m in self.methods(task.name) if m.name == name), None)
        saved = (self.deepest, self.limit, self.cut)  # judging searches too
        reply = self.fallback.decompose(task.name, dict(state), self.domain.operators, self.domain.tasks)
        method, rejected, detail = self.judge(task, state, reply)
        self.deepest, self.limit, self.cut = saved
        record: dict[str, Any] = {"task": task.name, "path": task.path, "accepted": method is not None,
                                  "subtasks": list(reply.subtasks or ()), **dict(reply.meta)}
        if method is not None:
            record.update(method=method.name, reason=reply.reason)
            self.learned.methods.append(method)
            self.by_task[task.name] = (*self.methods(task.name), method)
            self.anchors.pop(task.name, None)
            self._components = None
        else:
            record.update(rejected=rejected, detail=detail[:300])
        self.learned.verdicts[question] = method.name if method is not None else None
        self.learned.records.append(record)
        return method

    def judge(self, task: Pending, state: State, reply: FallbackReply) -> tuple[Method | None, str, str]:
        """Accept a proposal only when it applies from ``state`` and achieves the task."""
        if reply.error is not None or reply.subtasks is None:
            return None, reply.error or "schema", reply.detail
        if not reply.subtasks:
            return None, "no-subtasks", "the reply proposes no subtasks"
        unknown = [s for s in reply.subtasks if not self.domain.knows(s)]
        if unknown:
            return None, "unknown-operator", f"unknown operator or task: {', '.join(map(repr, unknown))}"
        rest: Pending | None = None
        for i in reversed(range(len(reply.subtasks))):
            rest = Pending(reply.subtasks[i], f"{task.path}/fallback#{i}", task.depth + 1, (), rest)
        tried = self.search(rest, state, {}, None, use_fallback=False)
        if isinstance(tried, NoPlan):
            return None, "precondition", tried.blocked
        goal = self.domain.tasks[task.name].achieves
        if not holds(goal, tried.state):
            failing = first_failing(goal, tried.state)
            return None, "not-achieved", f"{task.name} needs {show(failing or goal)} afterwards"
        number = sum(1 for m in self.learned.methods if m.task == task.name) + 1
        return Method(name=f"{task.name}_learned{number}", task=task.name,
                      pre=regress(self.domain, tried.steps, state), subtasks=reply.subtasks,
                      learned=True), "", ""


def regress(domain: Domain, steps: Sequence[Step], state: State) -> Predicate:
    """The guard of a learned method: the truth of every test its steps made of the state they
    started from (keys no earlier step wrote), so it is tried again only where it applied."""
    written: set[str] = set()
    tests: dict[object, Predicate] = {}
    for step in steps:
        operator = domain.operators[step.operator]
        for atom in atoms(operator.pre):
            if atom.key in written:
                continue
            value = truth(atom, state)
            if value is not None:
                tests.setdefault(atom, atom if value else Not(atom))
        written.update(operator.effects.writes())
    return All(tuple(tests.values()))


def components(by_task: Mapping[str, Sequence[Method]]) -> dict[str, int]:
    """The strongly connected components of the task decomposition graph (a task, an edge to
    every subtask of each of its methods), as task -> component number, for the tasks on a
    cycle only (Tarjan's algorithm with an explicit stack: grounded domains have many thousand
    tasks)."""
    edges = {task: list(dict.fromkeys(s for m in methods for s in m.subtasks if s in by_task))
             for task, methods in by_task.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: dict[str, int] = {}
    for root in edges:
        if root in index:
            continue
        work: list[tuple[str, int]] = [(root, 0)]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            task, next_edge = work[-1]
            children = edges[task]
            if next_edge < len(children):
                work[-1] = (task, next_edge + 1)
                child = children[next_edge]
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, 0))
                elif child in on_stack:
                    low[task] = min(low[task], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[task])
            if low[task] == index[task]:
                members = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    members.append(member)
                    if member == task:
                        break
                if len(members) > 1 or task in edges[task]:
                    for member in members:
                        out[member] = index[task]
    return out
