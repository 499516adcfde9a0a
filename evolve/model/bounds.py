"""Lower bounds on the makespan of every valid complete plan of a catalog problem.

A search stops without saying how far from the best it is; a lower bound says it. The bound
holds for *any* plan that passes the validator and makes every criterion, however it is
wired and whatever order the scheduler takes, because each argument below reasons about
feasible schedules of tasks, not about evolve's scheduler:

* Any plan with a feasible schedule can be reduced, without moving a task, to a *minimal*
  plan: one task per tool (a later run of a tool is dropped and its readers read the
  earlier one, which ends sooner), initial facts read as ``$fact``, every task making a
  criterion, read by another task, or an approval a write needs (directly: a path from an
  approval to a write implies a direct edge with the same timing). Dropping tasks frees
  resources, so the reduced plan keeps the schedule and its makespan is no longer. Every
  argument may therefore assume a minimal plan.
* ``critical-path``: the dataflow critical path. Each fact's earliest availability with the
  fastest producers, resources ignored (a fixed point; a write waits for the earliest
  approval under ``policy.write_requires_approval``); the makespan is at least the latest
  criterion's.
* ``energy``: an LP relaxation over which tools are used (``used[t]`` in [0, 1]; each used
  tool's non-initial inputs covered by its producers, each criterion by its producers, each
  write by an approval, at most ``max_tasks`` tools). Every capacity-limited resource (the
  ``max_parallel`` slots, each named resource) must fit the work of the used tools into its
  window: when a plan uses any tool whose earliest start (head) is at least ``h`` and whose
  shortest remaining path after it (tail) is at least ``q``, all of those it uses fit
  ``capacity * (M - h - q) >= work``;
  and every used tool ``t`` makes ``M >= head[t] + duration[t] + tail[t]``. The LP minimises
  ``M`` over all of these at once, so the bound is a plan's, not one resource's.
  The covering rows are strengthened by *supply cuts* (:func:`separate_cuts`): for a set
  ``S`` of facts a plan needs one of, some used tool makes a fact of ``S`` and reads none.
* ``work-mip (<resource>)``: the least work on the busiest resource over its capacity, with
  ``used`` integral (HiGHS branch and bound within a time limit; its proven dual bound when it
  stops early). On the generated benchmark problems the ``max_parallel`` slots are the
  bottleneck and evolve's schedules pack them almost perfectly, so this is the argument that
  counts; without ``M``'s other rows HiGHS proves it far faster than the whole model.
* ``energy-mip``: the whole model with ``used`` integral, in the time that is left.

Tails: in a minimal plan a task's end is followed by at least the duration and tail of some
task that reads one of its facts (or, for an approval, of some write), unless it makes a
criterion (tail 0): a shortest path backwards from the criterion makers.

The arguments are independent; :func:`lower_bound` returns the largest and names it.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, linprog, milp
from scipy.sparse import coo_matrix, csr_matrix

from evolve.model.problem import Problem, Tool

SLOTS = "max_parallel"
"""The name the ``max_parallel`` slots go by among the resources of an energy argument."""

THRESHOLDS = 12
"""Head and tail cut-offs per resource (each way): up to this many squared window rows each."""

MIP_SECONDS = 5.0
"""How long :func:`lower_bound` lets the integral energy model run when asked for it."""


@dataclass(frozen=True)
class LowerBound:
    """A proven lower bound on the makespan of every valid complete plan, and what gave it.

    ``value`` is ``math.inf`` when no valid complete plan exists (a criterion nothing
    runnable makes); ``parts`` holds every argument computed, by name, so a reader sees
    which one is weak.
    """

    value: float
    source: str
    parts: Mapping[str, float] = field(default_factory=dict)
    seconds: float = 0.0
    witness: tuple[str, ...] = ()
    """The tools of the integral model's best solution (when it was solved): a tool set whose
    relaxation value is at most that solution's, often a plan nearly as good; not checked here
    (the relaxation ignores how tasks wait for each other beyond heads and tails)."""


# -- which tools an optimal plan may use ---------------------------------------------------------


def fits(problem: Problem, tool: Tool) -> bool:
    """Granted, and every demand within its resource's capacity (else no schedule places it)."""
    return problem.scope_granted(tool.scope) and all(
        amount <= problem.resources[r] for r, amount in tool.uses.items() if r in problem.resources)


def candidate_tools(problem: Problem) -> list[Tool]:
    """Tools a minimal plan may use: granted, fitting the capacities, runnable and useful.

    Runnable: reachable from the initial facts by granted tools (writes only once an approval
    is reachable, under the policy). Useful: makes a criterion, or an input of a useful tool,
    or is an approval a useful write needs. A minimal plan holds no other tool.
    """
    approval_needed = problem.policy.write_requires_approval
    granted = [t for t in problem.tools.values() if fits(problem, t)]
    known = set(problem.initial)
    runnable: dict[str, Tool] = {}
    changed = True
    while changed:
        changed = False
        approved = any(t.risk == "approval" for t in runnable.values())
        for tool in granted:
            if tool.name in runnable or not set(tool.inputs) <= known:
                continue
            if tool.risk == "write" and approval_needed and not approved:
                continue
            runnable[tool.name] = tool
            known.update(tool.outputs)
            changed = True
    needed = set(problem.criteria) - set(problem.initial)
    useful: set[str] = set()
    changed = True
    while changed:
        changed = False
        writes = any(runnable[n].risk == "write" for n in useful)
        for tool in runnable.values():
            if tool.name in useful:
                continue
            if set(tool.outputs) & needed or (tool.risk == "approval" and writes and approval_needed):
                useful.add(tool.name)
                needed.update(f for f in tool.inputs if f not in problem.initial)
                changed = True
    return [t for t in runnable.values() if t.name in useful]


# -- heads and tails ---------------------------------------------------------------------------


def earliest_starts(problem: Problem, tools: Sequence[Tool]) -> tuple[dict[str, float], dict[str, float]]:
    """Each tool's earliest start and each fact's earliest availability, resources ignored.

    The fastest producer of every fact assumed: a fixed point of ``start[t] >= max(ready[f]
    for f in inputs)`` (and the earliest approval's end for a write under the policy) and
    ``ready[f] = min(start[p] + duration[p])``, computed as a shortest-path sweep (Dijkstra
    over facts: a tool fires when its last input is settled).
    """
    policy = problem.policy.write_requires_approval
    initial = problem.initial_set()
    readers: dict[str, list[int]] = {}
    waiting: list[int] = []
    for i, tool in enumerate(tools):
        needs = {f for f in tool.inputs if f not in initial}
        if tool.risk == "write" and policy:
            needs.add("")  # the empty name stands for "some approval has ended"
        waiting.append(len(needs))
        for fact in needs:
            readers.setdefault(fact, []).append(i)
    ready: dict[str, float] = dict.fromkeys(initial, 0.0)
    start: dict[str, float] = {}
    settled: set[str] = set(initial)
    heap: list[tuple[float, str]] = []

    def fire(i: int) -> None:
        tool = tools[i]
        at = max((ready[f] for f in tool.inputs), default=0.0)
        if tool.risk == "write" and policy:
            at = max(at, ready[""])
        start[tool.name] = at
        end = at + tool.duration
        made = [*tool.outputs, *([""] if tool.risk == "approval" else [])]
        for fact in made:
            if fact not in settled and end < ready.get(fact, math.inf):
                ready[fact] = end
                heapq.heappush(heap, (end, fact))

    for i, n in enumerate(waiting):
        if n == 0:
            fire(i)
    while heap:
        at, fact = heapq.heappop(heap)
        if fact in settled or at > ready[fact]:
            continue
        settled.add(fact)
        for i in readers.get(fact, ()):
            waiting[i] -= 1
            if waiting[i] == 0:
                fire(i)
    ready.pop("", None)
    return start, ready


def shortest_tails(problem: Problem, tools: Sequence[Tool]) -> dict[str, float]:
    """The least time a minimal plan must still run after each tool ends (module docstring).

    A shortest path backwards: 0 for a maker of a criterion, else the least ``duration +
    tail`` over the tools that read one of its non-initial facts (and over the writes, for an
    approval under the policy). A tool no useful chain leaves from gets ``inf`` (never in a
    minimal plan; :func:`candidate_tools` keeps none).
    """
    initial = problem.initial_set()
    criteria = set(problem.criteria)
    policy = problem.policy.write_requires_approval
    by_name = {t.name: t for t in tools}
    makers: dict[str, list[str]] = {}
    for tool in tools:
        for fact in dict.fromkeys(tool.outputs):
            makers.setdefault(fact, []).append(tool.name)
    approvals = [t.name for t in tools if t.risk == "approval"] if policy else []
    tail: dict[str, float] = {}
    heap = [(0.0, t.name) for t in tools if set(t.outputs) & criteria]
    heapq.heapify(heap)
    while heap:
        at, name = heapq.heappop(heap)
        if name in tail:
            continue
        tail[name] = at
        after = at + by_name[name].duration
        tool = by_name[name]
        ups = {p for f in dict.fromkeys(tool.inputs) if f not in initial for p in makers.get(f, ())}
        if tool.risk == "write":
            ups.update(approvals)
        for up in ups:
            if up != name and up not in tail:
                heapq.heappush(heap, (after, up))
    return {t.name: tail.get(t.name, math.inf) for t in tools}


# -- the bounds --------------------------------------------------------------------------------


def critical_path(problem: Problem, ready: Mapping[str, float]) -> float:
    """The latest criterion's earliest availability (``inf`` when one can never be made)."""
    initial = problem.initial_set()
    return max((ready.get(c, math.inf) for c in problem.criteria if c not in initial), default=0.0)


def demands(problem: Problem, tools: Sequence[Tool]) -> dict[str, tuple[float, list[float]]]:
    """Each capacity-limited resource's capacity and every tool's demand of it (slots first)."""
    out: dict[str, tuple[float, list[float]]] = {}
    if problem.limits.max_parallel is not None:
        out[SLOTS] = (float(problem.limits.max_parallel), [1.0 if t.duration > 0 else 0.0 for t in tools])
    for name, capacity in problem.resources.items():
        need = [float(t.uses.get(name, 0.0)) for t in tools]
        if any(need) and capacity > 0:
            out[name] = (float(capacity), need)
    return out


def cutoffs(values: Iterable[float], count: int) -> list[float]:
    """Up to ``count`` cut-off values, evenly spread over the sorted distinct finite ``values``."""
    distinct = sorted({v for v in values if math.isfinite(v)})
    if len(distinct) <= count:
        return distinct
    picks = np.linspace(0, len(distinct) - 1, count).round().astype(int)
    return [distinct[int(i)] for i in dict.fromkeys(picks.tolist())]


@dataclass(frozen=True)
class Window:
    """The tools on one resource whose head is at least ``h`` and tail at least ``q``.

    When a plan uses any of them, all of its tools among them run inside ``[h, M - q]``:
    ``M >= h + q + work / capacity``. Written for the LP as ``M >= work / capacity + (h + q) *
    used[j]`` for a member ``j`` (at ``used[j] = 0`` it says only that the work fits in
    ``[0, M]``), one row per member that the solution makes the most violated, added lazily.
    """

    resource: str
    offset: float
    members: tuple[int, ...]
    weights: tuple[float, ...]


@dataclass
class Supply:
    """What the cut rows of :func:`separate_cuts` read: each tool's non-initial inputs and
    outputs, each fact's makers and readers, the non-initial criteria, the cuts made so far."""

    inputs: list[frozenset[str]]
    outputs: list[frozenset[str]]
    makers: dict[str, list[int]]
    readers: dict[str, list[int]]
    goals: list[str]
    made: set[tuple[int, frozenset[str]]] = field(default_factory=set)


@dataclass
class EnergyModel:
    """The relaxation ``minimise M`` (variables ``used[0..n-1]`` then ``M``) as rows ``A x <= b``.

    ``windows`` are the rows still to be generated (:func:`separate`); ``labels`` say what each
    row is (``cover``, ``path``, or the resource of an energy row), so the binding argument can
    be named.
    """

    n: int
    bounds: list[tuple[float, float]]
    feasible: bool
    windows: list[Window]
    supply: Supply | None = None
    work: dict[str, list[float]] = field(default_factory=dict)
    """Each resource's work per tool, over its capacity (the plain energy rows' weights)."""
    r_idx: list[int] = field(default_factory=list)
    c_idx: list[int] = field(default_factory=list)
    vals: list[float] = field(default_factory=list)
    upper: list[float] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)

    def row(self, entries: Iterable[tuple[int, float]], ub: float, label: str = "cover") -> None:
        r = len(self.upper)
        for col, value in entries:
            self.r_idx.append(r)
            self.c_idx.append(col)
            self.vals.append(value)
        self.upper.append(ub)
        self.labels.append(label)

    def matrix(self) -> csr_matrix:
        return coo_matrix((self.vals, (self.r_idx, self.c_idx)), shape=(len(self.upper), self.n + 1)).tocsr()

    def cost(self) -> np.ndarray:
        cost = np.zeros(self.n + 1)
        cost[self.n] = 1.0
        return cost


def energy_model(problem: Problem, tools: Sequence[Tool], head: Mapping[str, float],
                 tail: Mapping[str, float], floor: float, thresholds: int = THRESHOLDS) -> EnergyModel:
    """The relaxation of the module docstring: covering rows, path rows, each resource's whole
    work within ``[0, M]``, and its windows (generated lazily)."""
    n = len(tools)
    initial = problem.initial_set()
    makers: dict[str, list[int]] = {}
    for i, tool in enumerate(tools):
        for fact in dict.fromkeys(tool.outputs):
            makers.setdefault(fact, []).append(i)
    readers: dict[str, list[int]] = {}
    for i, tool in enumerate(tools):
        for fact in dict.fromkeys(tool.inputs):
            if fact not in initial:
                readers.setdefault(fact, []).append(i)
    supply = Supply(inputs=[frozenset(f for f in t.inputs if f not in initial) for t in tools],
                    outputs=[frozenset(f for f in t.outputs if f not in initial) for t in tools],
                    makers=makers, readers=readers,
                    goals=[c for c in dict.fromkeys(problem.criteria) if c not in initial])
    model = EnergyModel(n=n, bounds=[(0.0, 1.0)] * n + [(floor, math.inf)], feasible=True, windows=[],
                        supply=supply)
    for i, tool in enumerate(tools):
        for fact in dict.fromkeys(tool.inputs):
            if fact in initial:
                continue
            ps = [p for p in makers.get(fact, ()) if p != i]
            if not ps:
                model.bounds[i] = (0.0, 0.0)
            else:
                model.row([(i, 1.0), *((p, -1.0) for p in ps)], 0.0)
    for criterion in dict.fromkeys(problem.criteria):
        if criterion in initial:
            continue
        ps = makers.get(criterion, [])
        if not ps:
            model.feasible = False
        else:
            model.row(((p, -1.0) for p in ps), -1.0)
    if problem.policy.write_requires_approval:
        approvals = [i for i, t in enumerate(tools) if t.risk == "approval"]
        for i, tool in enumerate(tools):
            if tool.risk == "write":
                if approvals:
                    model.row([(i, 1.0), *((q, -1.0) for q in approvals)], 0.0)
                else:
                    model.bounds[i] = (0.0, 0.0)
    if problem.limits.max_tasks is not None:
        model.row(((i, 1.0) for i in range(n)), float(problem.limits.max_tasks))
    for i, tool in enumerate(tools):
        span = head[tool.name] + tool.duration + tail[tool.name]
        if math.isfinite(span) and span > floor:
            model.row([(i, span), (n, -1.0)], 0.0, "path")
    for resource, (capacity, need) in demands(problem, tools).items():
        on = [i for i in range(n) if need[i] > 0 and tools[i].duration > 0]
        if not on:
            continue
        holders = set(on)
        model.work[resource] = [t.duration * need[i] / capacity if i in holders else 0.0
                                for i, t in enumerate(tools)]
        model.row([*((i, model.work[resource][i]) for i in on), (n, -1.0)], 0.0, resource)
        hs = cutoffs((head[tools[i].name] for i in on), thresholds)
        qs = cutoffs((tail[tools[i].name] for i in on), thresholds)
        for h in hs:
            for q in qs:
                inside = tuple(i for i in on if head[tools[i].name] >= h and tail[tools[i].name] >= q)
                if inside and h + q > 0:
                    weights = tuple(tools[i].duration * need[i] / capacity for i in inside)
                    model.windows.append(Window(resource, h + q, inside, weights))
    return model


def separate(model: EnergyModel, x: np.ndarray, tol: float = 1e-6) -> int:
    """Add the most violated row of every window at solution ``x``; how many were added."""
    added = 0
    m = x[model.n]
    for w in model.windows:
        work = sum(x[i] * c for i, c in zip(w.members, w.weights))
        j = max(w.members, key=lambda i: x[i])
        if work + w.offset * x[j] > m + tol * max(1.0, m):
            entries = [(i, c + (w.offset if i == j else 0.0)) for i, c in zip(w.members, w.weights)]
            model.row([*entries, (model.n, -1.0)], 0.0, w.resource)
            added += 1
    return added + separate_cuts(model, x, tol)


CUT_DEPTH = 12
"""Facts a cut's set may grow to (:func:`separate_cuts`)."""

CUT_MIN = 0.05
"""Readers used less than this in the LP solution are not tried as cut starts."""


def separate_cuts(model: EnergyModel, x: np.ndarray, tol: float = 1e-6) -> int:
    """Add violated supply cuts at ``x``; how many.

    For a set ``S`` of non-initial facts, call a tool *entering* when it makes a fact of ``S``
    and reads none. If a plan needs a fact of ``S`` (a criterion, or an input of a used tool
    ``r``), the first task in topological order that makes a fact of ``S`` reads nothing of
    ``S`` (its inputs come from earlier tasks), so it is entering: ``sum(used[t] for t
    entering S) >= 1`` (or ``>= used[r]``). The per-input covering rows are the case ``S =
    {f}``; larger sets cut off the LP's habit of using two half-derivations that share their
    parts at half price. ``S`` grows greedily from one needed fact, adding the input that
    lowers the entering sum most, and every violated set on the way becomes a row.
    """
    supply = model.supply
    if supply is None:
        return 0
    added = 0
    starts: list[tuple[int, str, float]] = [(-1, c, 1.0) for c in supply.goals]
    starts += [(r, f, float(x[r])) for r in range(model.n) if x[r] >= CUT_MIN for f in supply.inputs[r]]
    for reader, fact, need in starts:
        grown = {fact}
        entering = {t: float(x[t]) for t in supply.makers.get(fact, ()) if not supply.inputs[t] & grown}
        for _ in range(CUT_DEPTH):
            total = sum(entering.values())
            if total < need - tol:
                key = (reader, frozenset(grown))
                if key not in supply.made:
                    supply.made.add(key)
                    entries = [(t, -1.0) for t in entering]
                    if reader >= 0:
                        model.row([(reader, 1.0), *entries], 0.0)
                    else:
                        model.row(entries, -1.0)
                    added += 1
                break
            best: tuple[float, str] | None = None
            for t, value in entering.items():
                if value <= tol:
                    continue
                for g in supply.inputs[t]:
                    lost = sum(v for u, v in entering.items() if g in supply.inputs[u])
                    wider = grown | {g}
                    gained = sum(float(x[p]) for p in supply.makers.get(g, ())
                                 if p not in entering and p != reader and not supply.inputs[p] & wider)
                    delta = gained - lost
                    if best is None or delta < best[0]:
                        best = (delta, g)
            if best is None or best[0] >= -tol:
                break
            g = best[1]
            grown.add(g)
            entering = {u: v for u, v in entering.items() if g not in supply.inputs[u]}
            for p in supply.makers.get(g, ()):
                if p not in entering and p != reader and not supply.inputs[p] & grown:
                    entering[p] = float(x[p])
    return added


MAX_ROUNDS = 60
"""Rounds of row generation before the relaxation is taken as it stands (still a valid bound)."""


def solve_lp(model: EnergyModel) -> tuple[float, str]:
    """The LP optimum with every violated window row added, and the label of the binding row
    (``inf`` when the relaxation is infeasible: then no plan is)."""
    if not model.feasible:
        return math.inf, "cover"
    value, label = float(model.bounds[-1][0]), "critical-path"
    for _ in range(MAX_ROUNDS):
        if not model.upper:
            return value, label
        res = linprog(model.cost(), A_ub=model.matrix(), b_ub=np.array(model.upper), bounds=model.bounds,
                      method="highs")
        if res.status == 2:
            return math.inf, "cover"
        if res.status != 0:
            return value, label
        value, label = float(res.fun), binding(model, res.x)
        if not separate(model, res.x):
            break
    return value, label


def binding(model: EnergyModel, x: np.ndarray) -> str:
    """The label of the tight non-covering row with the most weight on ``M`` (the argument that
    gave the value), or ``critical-path`` when only ``M``'s floor holds it."""
    if x[model.n] <= model.bounds[-1][0] + 1e-9:
        return "critical-path"
    slack = np.array(model.upper) - model.matrix() @ x
    tight = [model.labels[r] for r in np.flatnonzero(np.abs(slack) <= 1e-6 * max(1.0, x[model.n]))
             if model.labels[r] != "cover"]
    return tight[0] if tight else "energy"


def solve_mip(model: EnergyModel, seconds: float) -> tuple[float, str, list[int]]:
    """The integral model's optimum (rows generated at each integral solution), or its proven
    dual bound when the time limit stops it; the label of the binding row; and the tools of
    the best integral solution found (empty when none was)."""
    if not model.feasible:
        return math.inf, "cover", []
    n = model.n
    lower = np.array([b[0] for b in model.bounds])
    upper = np.array([b[1] for b in model.bounds])
    integrality = np.ones(n + 1)
    integrality[-1] = 0
    deadline = time.perf_counter() + seconds
    value, label, chosen = float(model.bounds[-1][0]), "critical-path", []
    while model.upper:
        left = deadline - time.perf_counter()
        if left <= 0.01:
            break
        res = milp(model.cost(), integrality=integrality, bounds=Bounds(lower, upper),
                   constraints=[LinearConstraint(model.matrix(), -np.inf, np.array(model.upper))],
                   options={"time_limit": left, "disp": False})
        if res.status == 2:
            return math.inf, "cover", []
        x = None if res.x is None else np.append(np.round(res.x[:n]), res.x[n])
        if x is not None:
            chosen = [i for i in range(n) if x[i] > 0.5]
        if res.status == 0 and x is not None:
            value, label = max(value, float(res.fun)), binding(model, x)
            if not separate(model, x):
                break
            continue
        dual = getattr(res, "mip_dual_bound", None)
        if dual is not None and math.isfinite(dual) and dual > value:
            value, label = float(dual), "energy-mip"
        break
    return value, label, chosen


def solve_work(model: EnergyModel, resource: str, seconds: float) -> tuple[float, list[int]]:
    """The least work on ``resource`` (over its capacity) of any integral covering: the
    energy argument alone, without ``M``'s other rows, which HiGHS proves far faster than the
    whole model. Its optimum, or its dual bound at the time limit; the tools of its best
    solution."""
    if not model.feasible:
        return math.inf, []
    n = model.n
    keep = [r for r, label in enumerate(model.labels) if label == "cover"]
    lower = np.array([b[0] for b in model.bounds[:n]])
    upper = np.array([b[1] for b in model.bounds[:n]])
    constraints = ([LinearConstraint(model.matrix()[keep][:, :n], -np.inf, np.array(model.upper)[keep])]
                   if keep else [])
    res = milp(np.array(model.work[resource]), integrality=np.ones(n), bounds=Bounds(lower, upper),
               constraints=constraints, options={"time_limit": max(0.01, seconds), "disp": False})
    if res.status == 2:
        return math.inf, []
    chosen = [] if res.x is None else [i for i in range(n) if res.x[i] > 0.5]
    if res.status == 0 and res.fun is not None:
        return float(res.fun), chosen
    dual = getattr(res, "mip_dual_bound", None)
    return (float(dual) if dual is not None and math.isfinite(dual) else 0.0), chosen


WORK_SHARE = 0.7
"""The share of ``mip_seconds`` the busiest resource's least-work model gets; the rest goes to
the whole integral model."""


def lower_bound(problem: Problem, *, mip_seconds: float | None = None,
                thresholds: int = THRESHOLDS) -> LowerBound:
    """The best of the arguments of the module docstring for ``problem`` (its template ignored:
    a template only adds tasks, so a bound without it still holds).

    ``mip_seconds``: also solve the integral energy model for at most that long (``None``:
    the LP only, which takes a fraction of a second at 1,000 facts).
    """
    began = time.perf_counter()
    tools = candidate_tools(problem)
    head, ready = earliest_starts(problem, tools)
    parts: dict[str, float] = {"critical-path": critical_path(problem, ready)}
    if math.isinf(parts["critical-path"]):
        return LowerBound(value=math.inf, source="critical-path", parts=parts,
                          seconds=time.perf_counter() - began)
    tail = shortest_tails(problem, tools)
    witness: tuple[str, ...] = ()
    model = energy_model(problem, tools, head, tail, parts["critical-path"], thresholds)
    parts["energy"], why = solve_lp(model)
    names = {"energy": f"energy ({why})"}
    if mip_seconds is not None and model.work:
        busiest = max(model.work, key=lambda r: sum(model.work[r]))
        deadline = time.perf_counter() + mip_seconds
        key = f"work-mip ({busiest})"
        parts[key], chosen = solve_work(model, busiest, mip_seconds * WORK_SHARE)
        parts["energy-mip"], why, whole = solve_mip(model, max(0.01, deadline - time.perf_counter()))
        names["energy-mip"] = f"energy-mip ({why})"
        witness = tuple(tools[i].name for i in (chosen or whole))
    source = max(parts, key=lambda k: (parts[k], -list(parts).index(k)))
    return LowerBound(value=parts[source], source=names.get(source, source), parts=parts,
                      seconds=time.perf_counter() - began, witness=witness)
