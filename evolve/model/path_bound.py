"""The ``path-mip`` argument of :mod:`evolve.model.bounds`: the energy model plus the paths of
the tools a plan *chooses*.

The energy rows charge each used tool its static head and tail (computed with the fastest
producer of every fact), so a tool set whose work packs but whose own producers form a long
chain looks as good as its work. On 300-fact generated problems that is the whole gap: the
least-work set (work over the slots 4162) has a 4730 chain, and every schedule evolve finds of
any set stops at 4288. This model adds, for a minimal plan (module docstring of
:mod:`evolve.model.bounds`) whose makespan is at most a horizon ``H``:

* ``end[t]`` for every tool, at least its head plus its duration; a used tool's end plus its
  tail is at most ``M``;
* ``avail[f]`` for every non-initial fact a tool reads or a criterion names, and binaries
  ``pick[f, p]`` (``p`` a maker of ``f``, at most one picked, only a used one): ``avail[f] >=
  end[p]`` for the picked maker. Take the read maker of ``f`` that ends first (for a
  criterion nobody reads, any maker): every reader reads a maker that ends no sooner, so it
  starts at ``avail[f]`` or later; and a reader is never that first maker itself (it ends
  after the maker it reads). Hence ``sum(pick[f, p] for p != r) >= used[r]`` and ``end[r] -
  duration[r] >= avail[f]`` for every used reader ``r``;
* ``M >= avail[c]`` for every criterion.

Every time of such a plan is at most ``H``, so ``H`` is a valid big-M for the rows that switch
off with ``used`` or ``pick``; tools whose head, duration and tail exceed ``H`` are out. The
plan is then a solution, so the model's optimum (or HiGHS's proven dual bound at the time
limit) is at most its makespan. A plan longer than ``H`` is longer than ``H``: whatever ``H``
is, every plan's makespan is at least ``min(optimum, H)``, and that is the value returned
(``H`` itself when no plan fits under it). Approval waits are left out (a relaxation).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from evolve.model.energy_bound import EnergyModel, proven
from evolve.model.problem import Problem, Tool
from evolve.model.sparse_rows import SparseRows

HORIZON = 1.25
"""The horizon ``H`` as a multiple of the best other bound: loose enough that ``min(optimum,
H)`` is the optimum on the generated problems, tight enough that the big-M rows still cut."""


def solve_path(problem: Problem, tools: Sequence[Tool], energy: EnergyModel, head: Mapping[str, float],
               tail: Mapping[str, float], ready: Mapping[str, float], horizon: float,
               seconds: float) -> tuple[float, str]:
    """``min(the model's optimum or dual bound, horizon)`` and how it ended (``optimal``,
    ``time limit``, ``horizon``), for the tools and the energy model of
    :func:`evolve.model.bounds.lower_bound` (its rows so far are kept: every one holds for a
    minimal plan)."""
    if not energy.feasible:
        return math.inf, "cover"
    n = len(tools)
    big = float(horizon)
    initial = problem.initial_set()
    out = {i for i, t in enumerate(tools)
           if not head[t.name] + t.duration + tail[t.name] <= big or energy.bounds[i][1] <= 0.0}
    makers: dict[str, list[int]] = {}
    readers: dict[str, list[int]] = {}
    for i, tool in enumerate(tools):
        if i in out:
            continue
        for fact in dict.fromkeys(tool.outputs):
            if fact not in initial:
                makers.setdefault(fact, []).append(i)
        for fact in dict.fromkeys(tool.inputs):
            if fact not in initial:
                readers.setdefault(fact, []).append(i)
    goals = [c for c in dict.fromkeys(problem.criteria) if c not in initial]
    facts = list(dict.fromkeys([*readers, *goals]))
    # columns: used[0..n-1], M, end[0..n-1], avail[facts], pick[(fact, maker)]
    end0 = n + 1
    avail = {f: end0 + n + k for k, f in enumerate(facts)}
    pick: dict[tuple[str, int], int] = {}
    for f in facts:
        for p in makers.get(f, ()):
            pick[(f, p)] = end0 + n + len(facts) + len(pick)
    width = end0 + n + len(facts) + len(pick)

    rows = SparseRows()
    for f in facts:
        ps = makers.get(f, [])
        if ps:
            rows.add([(pick[(f, p)], 1.0) for p in ps], -math.inf, 1.0)
        for p in ps:
            rows.add([(pick[(f, p)], 1.0), (p, -1.0)], -math.inf, 0.0)
            rows.add([(avail[f], 1.0), (end0 + p, -1.0), (pick[(f, p)], -big)], -big, math.inf)
        for r in readers.get(f, ()):
            rows.add([*((pick[(f, p)], 1.0) for p in ps if p != r), (r, -1.0)], 0.0, math.inf)
            rows.add([(end0 + r, 1.0), (avail[f], -1.0), (r, -big)], tools[r].duration - big, math.inf)
    for c in goals:
        rows.add([(pick[(c, p)], 1.0) for p in makers.get(c, ())], 1.0, math.inf)
        rows.add([(n, 1.0), (avail[c], -1.0)], 0.0, math.inf)
    for i, tool in enumerate(tools):
        if i not in out and tail[tool.name] > 0:
            rows.add([(n, 1.0), (end0 + i, -1.0), (i, -big)], tail[tool.name] - big, math.inf)

    lower = np.zeros(width)
    upper = np.ones(width)
    for i, tool in enumerate(tools):
        lower[i], upper[i] = energy.bounds[i]
        lower[end0 + i] = head[tool.name] + tool.duration
        upper[end0 + i] = max(big, lower[end0 + i])
        if i in out:
            upper[i] = 0.0
    lower[n], upper[n] = energy.bounds[n][0], big
    for f, col in avail.items():
        lower[col] = ready.get(f, 0.0) if math.isfinite(ready.get(f, 0.0)) else 0.0
        upper[col] = max(big, lower[col])
    if lower[n] > upper[n]:
        return big, "horizon"
    from scipy.optimize import Bounds, LinearConstraint, milp  # loaded here: see energy_bound

    integrality = np.zeros(width)
    integrality[:n] = 1
    integrality[end0 + n + len(facts):] = 1
    both = energy.rows.then(rows)
    cost = np.zeros(width)
    cost[n] = 1.0
    res = milp(cost, integrality=integrality, bounds=Bounds(lower, upper),
               constraints=[LinearConstraint(both.matrix(width), np.array(both.lower), np.array(both.upper))],
               options={"time_limit": max(0.01, seconds), "disp": False})
    if res.status == 2:
        return big, "horizon"
    value = min(proven(res, float(energy.bounds[n][0])), big)
    return value, "horizon" if value >= big else "optimal" if res.status == 0 else "time limit"
