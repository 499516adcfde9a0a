"""The energy arguments of :mod:`evolve.model.bounds`: the relaxation over which tools a plan
uses, its rows generated lazily, and the LP and integral models that solve it.

:mod:`evolve.model.bounds` says why each row holds for every minimal plan (the ``energy``,
``work-mip`` and ``energy-mip`` arguments of its docstring) and computes the heads and tails
these rows read; this module builds the model from them (:func:`energy_model`), adds the
window rows and supply cuts a solution violates (:func:`separate`, :func:`separate_cuts`) and
solves it (:func:`solve_lp`, :func:`solve_mip`, :func:`solve_work`). Apart because the model
and its solvers are one job (scipy's HiGHS), the arguments about plans another.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from scipy.sparse import csr_matrix

from evolve.model.problem import Problem, Tool
from evolve.model.sparse_rows import SparseRows

if TYPE_CHECKING:
    from scipy.optimize import OptimizeResult

# scipy.optimize takes about 0.65 s to import: it is loaded by the functions that solve a
# bound, not by every command that imports this module (evolve pending, validate, ...).

SLOTS = "max_parallel"
"""The name the ``max_parallel`` slots go by among the resources of an energy argument."""

THRESHOLDS = 12
"""Head and tail cut-offs per resource (each way): up to this many squared window rows each."""


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
    rows: SparseRows = field(default_factory=SparseRows)
    labels: list[str] = field(default_factory=list)

    def row(self, entries: Iterable[tuple[int, float]], ub: float, label: str = "cover") -> None:
        self.rows.add(entries, upper=ub)
        self.labels.append(label)

    @property
    def upper(self) -> list[float]:
        """The right-hand sides ``b``."""
        return self.rows.upper

    def matrix(self) -> csr_matrix:
        return self.rows.matrix(self.n + 1)

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
    from scipy.optimize import linprog

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


def proven(res: OptimizeResult, fallback: float) -> float:
    """What a HiGHS MIP result proves about its minimum: the dual bound, not the objective,
    which at "optimal" may still sit up to the relative gap tolerance (1e-4) above it.
    ``fallback`` when HiGHS proved nothing."""
    dual = getattr(res, "mip_dual_bound", None)
    if dual is not None and math.isfinite(dual):
        return float(dual)
    gap = getattr(res, "mip_gap", None)
    if res.status == 0 and res.fun is not None and gap == 0:
        return float(res.fun)
    return fallback


def solve_mip(model: EnergyModel, seconds: float) -> tuple[float, str, list[int]]:
    """The integral model's optimum (rows generated at each integral solution), or its proven
    dual bound when the time limit stops it; the label of the binding row; and the tools of
    the best integral solution found (empty when none was)."""
    if not model.feasible:
        return math.inf, "cover", []
    from scipy.optimize import Bounds, LinearConstraint, milp

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
            value, label = max(value, proven(res, value)), binding(model, x)
            if not separate(model, x):
                break
            continue
        dual = proven(res, value)
        if dual > value:
            value, label = dual, "energy-mip"
        break
    return value, label, chosen


def solve_work(model: EnergyModel, resource: str, seconds: float) -> tuple[float, list[int]]:
    """The least work on ``resource`` (over its capacity) of any integral covering: the
    energy argument alone, without ``M``'s other rows, which HiGHS proves far faster than the
    whole model. Its optimum, or its dual bound at the time limit; the tools of its best
    solution."""
    if not model.feasible:
        return math.inf, []
    from scipy.optimize import Bounds, LinearConstraint, milp

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
    return proven(res, 0.0), chosen
