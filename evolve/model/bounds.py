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
  The covering rows are strengthened by *supply cuts*
  (:func:`~evolve.model.energy_bound.separate_cuts`): for a set ``S`` of facts a plan needs
  one of, some used tool makes a fact of ``S`` and reads none. The model and its solvers are
  :mod:`evolve.model.energy_bound`'s.
* ``work-mip (<resource>)``: the least work on the busiest resource over its capacity, with
  ``used`` integral (HiGHS branch and bound within a time limit; its proven dual bound when it
  stops early). On the generated benchmark problems the ``max_parallel`` slots are the
  bottleneck and evolve's schedules pack them almost perfectly, so this is the argument that
  counts; without ``M``'s other rows HiGHS proves it far faster than the whole model.
* ``energy-mip``: the whole model with ``used`` integral, in the time that is left.
* ``path-mip``: the whole model plus the paths through the producers a plan picks, not the
  fastest ones (:mod:`evolve.model.path_bound` says why it holds): what closes the gap when the
  least-work tool set cannot pack because its own chain is long.

Tails: in a minimal plan a task's end is followed by at least the duration and tail of some
task that reads one of its facts (or, for an approval, of some write), unless it makes a
criterion (tail 0): a shortest path backwards from the criterion makers.

The arguments are independent; :func:`lower_bound` returns the largest and names it.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from evolve.model.energy_bound import THRESHOLDS, energy_model, solve_lp, solve_mip, solve_work
from evolve.model.path_bound import HORIZON, solve_path
from evolve.model.problem import Problem, Tool


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


WORK_SHARE = 0.7
"""The share of ``mip_seconds`` the busiest resource's least-work model gets; the rest goes to
the whole integral model."""


def lower_bound(problem: Problem, *, mip_seconds: float | None = None, path_seconds: float | None = None,
                thresholds: int = THRESHOLDS) -> LowerBound:
    """The best of the arguments of the module docstring for ``problem`` (its template ignored:
    a template only adds tasks, so a bound without it still holds).

    ``mip_seconds``: also solve the integral energy model for at most that long (``None``:
    the LP only, which takes a fraction of a second at 1,000 facts). ``path_seconds``: then
    also solve the chosen-path model (:mod:`evolve.model.path_bound`) for at most that long,
    with the horizon :data:`~evolve.model.path_bound.HORIZON` times the best bound so far.
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
    if path_seconds is not None and math.isfinite(max(parts.values())):
        # (an infinite bound already says no plan exists, and would be no horizon for big-M rows)
        horizon = HORIZON * max(parts.values())
        parts["path-mip"], why = solve_path(problem, tools, model, head, tail, ready, horizon, path_seconds)
        names["path-mip"] = f"path-mip ({why})"
    source = max(parts, key=lambda k: (parts[k], -list(parts).index(k)))
    return LowerBound(value=parts[source], source=names.get(source, source), parts=parts,
                      seconds=time.perf_counter() - began, witness=witness)
