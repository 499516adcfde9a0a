"""The yardstick: evolve's plan search against an exact OR-Tools CP-SAT model, at equal wall time.

evolve searches plans (which tools to run, how to wire them, in what order) by evolution; it
gives no proof of how far from the best it stops. This script builds the same problem as an
exact constraint model, solves it with CP-SAT on one core for the same budgets, and compares
the makespans: CP-SAT's best (and its proven lower bound) says how good evolve's plans are.

Both solvers read the same JSON file, and *every* plan (CP-SAT's too) is checked by evolve's
own rules: ``validate`` must report nothing, every criterion must be produced, and the makespan
in the figures is always ``schedule(problem, plan).makespan`` (the reference scheduler), never
a solver's own claim. A plan that fails the check is printed as a failure.

The CP-SAT model (candidates: tools whose scope is granted and whose ``uses`` fit the
capacities; tools that can never run from the initial facts, and tools that serve no criterion,
are dropped first: neither changes the optimum, since an optimal plan never uses them):

* ``used[t]`` (bool) and an optional interval ``[start[t], start[t] + duration[t])`` present
  iff ``used[t]``. Each tool runs at most once: a second run of a tool makes the same facts no
  earlier, so it can never help.
* Facts: for each tool ``t`` and each input fact ``f`` that is not initial, the bools
  ``x[t,f,p]`` over the candidate producers ``p != t`` of ``f`` sum to ``used[t]`` (exactly one
  chosen producer when ``t`` runs); ``x[t,f,p] => used[p]`` and ``x[t,f,p] => start[t] >=
  end[p]``. An initial input is read as ``$f`` and needs nothing.
* Criteria: each criterion is initial or some producer of it is used (a bool-or).
* ``policy.write_requires_approval``: for each write tool ``w`` the bools ``a[w,q]`` over the
  approval tools ``q`` sum to ``used[w]``; ``a[w,q] => used[q]`` and ``start[w] >= end[q]``
  (a direct dependency edge; the validator accepts any upstream approval, and a transitive one
  gives exactly the same timing, so nothing is lost).
* ``limits.max_tasks``: ``sum(used) <= max_tasks``. ``limits.max_parallel``: a cumulative of
  demand 1 per interval with that capacity. One cumulative per resource, demand ``uses[r]``.
* Cycles: ``start[t] >= end[p]`` forbids every cycle that contains a tool of positive
  duration; a cycle among zero-duration tools is forbidden by an integer rank per zero-duration
  tool that must grow along their edges (never needed for generated problems: durations >= 5).
* Objective: ``makespan * BIG + sum(used)``, makespan first, then fewest tasks. ``BIG`` is
  the number of candidate tools + 1, which already exceeds any task count, so the order is
  lexicographic with far smaller coefficients than ``sum(durations) + 1`` would give (CP-SAT's
  bounds and LNS behave better with small objective coefficients). The lower bound on the
  makespan is ``floor(best_objective_bound / BIG)``.
* Durations are integers in generated problems; otherwise every duration is scaled by 1000 and
  rounded (resource amounts likewise, rounding demands up and capacities down so a CP-SAT
  schedule stays feasible for evolve's scheduler).

A CP-SAT solution becomes an evolve plan: one task per used tool, ids ``t1..tn`` in CP-SAT
start order (ties broken topologically), inputs ``$fact`` or ``$<producer>.<fact>``, deps = the
producers read plus the approval of a write, ``idempotency_key`` ``<tool>:<id>`` for writes,
and ``priority`` = the ids in start order. With that priority evolve's serial scheduler starts
every task no later than CP-SAT did (a list in start order of a feasible schedule decodes to a
schedule that is nowhere later), so the checked makespan is <= CP-SAT's.

evolve runs as a subprocess on one core (``--jobs 1``), for each budget and at its defaults
(wall time measured around the whole process, loading included). Problems come from evolve's
generator, sized by their number of distinct facts (initial plus all tool outputs), with
``limits.max_parallel`` set to 3 (the generator's resources kept: ``gpu`` has capacity 1).

Usage::

    python benchmarks/plan_vs_cpsat.py [--sizes 100 300 1000] [--seeds 0 1 2] [--seconds 10 60]
                                       [--quick] [--json]
"""

from __future__ import annotations

import argparse
import heapq
import importlib
import json
import math
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from evolve import Plan, Problem, Task, Tool, load_problem, plan_from_dict, schedule, validate
from evolve.model.bounds import LowerBound, candidate_tools, lower_bound

cp_model: Any
try:
    cp_model = importlib.import_module("ortools.sat.python.cp_model")
except ImportError:  # reported by main(); the helpers below need it only when called
    cp_model = None

QUICK_SIZES = (40, 100)
QUICK_SEEDS = (0,)
QUICK_SECONDS = (2.0, 10.0)
MAX_PARALLEL = 3
"""The parallel limit every benchmark problem gets: tight enough that scheduling matters."""


# -- problems ---------------------------------------------------------------------------------


def _generator() -> Callable[..., dict[str, Any]]:
    """evolve's problem generator, wherever the package currently keeps it (it is being moved)."""
    try:
        from evolve.generate import generate_document  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        from evolve.problems.synthetic import generate_document  # type: ignore[no-redef,unused-ignore]
    return generate_document  # type: ignore[no-any-return,unused-ignore]


def count_facts(doc: Mapping[str, Any]) -> int:
    """Distinct facts of a problem document: the initial ones and every tool output."""
    facts = set(doc.get("initial", ()))
    for tool in doc["tools"].values():
        facts.update(tool.get("outputs", ()))
    return len(facts)


def document_for(facts: int, seed: int) -> dict[str, Any]:
    """A generated document whose fact count is closest to ``facts``, post-processed.

    The generator is sized by tools, not facts, and the ratio is only roughly constant, so
    search: the smallest tools count reaching ``facts`` (binary search; the count grows with
    tools nearly monotonically), then the closest of its neighbours.
    """
    generate = _generator()
    cache: dict[int, dict[str, Any]] = {}

    def doc_at(tools: int) -> dict[str, Any]:
        if tools not in cache:
            cache[tools] = generate(tools, seed)
        return cache[tools]

    lo, hi = 4, max(8, 4 * facts)
    while lo < hi:
        mid = (lo + hi) // 2
        if count_facts(doc_at(mid)) >= facts:
            hi = mid
        else:
            lo = mid + 1
    best = min(range(max(4, lo - 3), lo + 4), key=lambda n: (abs(count_facts(doc_at(n)) - facts), n))
    doc: dict[str, Any] = json.loads(json.dumps(doc_at(best)))
    doc.setdefault("limits", {})["max_parallel"] = MAX_PARALLEL
    return doc


# -- checking any plan ------------------------------------------------------------------------


@dataclass
class Check:
    """evolve's verdict on a plan: errors (empty when it passes) and its reference makespan."""

    ok: bool
    errors: list[str]
    makespan: float | None
    tasks: int


def check_plan(problem: Problem, plan: Plan) -> Check:
    """Validate ``plan``, require every criterion, and schedule it with evolve's scheduler.

    The same check for both solvers, so neither is trusted on its own word.
    """
    errors = [str(e) for e in validate(problem, plan)]
    made = set(problem.initial)
    for task in plan.tasks:
        tool = problem.tools.get(task.tool)
        if tool is not None:
            made.update(task.outputs or tool.outputs)
    missing = [c for c in problem.criteria if c not in made]
    if missing:
        errors.append(f"criteria not produced: {', '.join(missing)}")
    try:
        sched = schedule(problem, plan)
    except ValueError as exc:
        return Check(ok=False, errors=[*errors, f"schedule failed: {exc}"], makespan=None, tasks=len(plan))
    if sched.unscheduled:
        errors.append(f"unscheduled tasks: {', '.join(sched.unscheduled)}")
    return Check(ok=not errors, errors=errors, makespan=float(sched.makespan), tasks=len(plan))


# -- the CP-SAT model -------------------------------------------------------------------------


def _scale(values: Iterable[float]) -> int:
    """1 when every value is an integer, else 1000 (the model needs integers)."""
    return 1 if all(float(v).is_integer() for v in values) else 1000


@dataclass
class CpsatRun:
    """One CP-SAT solve: its status, its own makespan and bound (problem units), the plan."""

    status: str
    seconds: float
    makespan: float | None = None
    bound: float | None = None
    plan: Plan | None = None
    candidates: int = 0
    check: Check | None = None

    def record(self) -> dict[str, Any]:
        return {"status": self.status, "seconds": round(self.seconds, 3), "cpsat_makespan": self.makespan,
                "bound": self.bound, "candidates": self.candidates,
                "check": asdict(self.check) if self.check is not None else None}


def solve_cpsat(problem: Problem, seconds: float, *, seed: int = 0) -> CpsatRun:
    """Build the exact model (module docstring), solve it on one worker within ``seconds``."""
    if cp_model is None:
        raise RuntimeError("ortools is not installed")
    began = time.perf_counter()
    tools = candidate_tools(problem)
    names = [t.name for t in tools]
    by_name = {t.name: t for t in tools}
    scale = _scale(t.duration for t in tools)
    dur = {t.name: round(t.duration * scale) for t in tools}
    horizon = max(1, sum(dur.values()))
    big = len(tools) + 1
    initial = set(problem.initial)

    m = cp_model.CpModel()
    used = {n: m.new_bool_var(f"used[{n}]") for n in names}
    earliest, ready_at = earliest_starts(problem, tools, dur)
    start = {n: m.new_int_var(min(earliest[n], horizon - dur[n]), horizon - dur[n], f"start[{n}]")
             for n in names}
    interval = {n: m.new_optional_interval_var(start[n], dur[n], start[n] + dur[n], used[n], f"iv[{n}]")
                for n in names}
    floor = max((ready_at.get(c, horizon) for c in problem.criteria if c not in initial), default=0)
    makespan = m.new_int_var(min(floor, horizon), horizon, "makespan")
    for n in names:
        m.add(makespan >= start[n] + dur[n]).only_enforce_if(used[n])

    zero = [n for n in names if dur[n] == 0]
    rank = {n: m.new_int_var(0, len(zero), f"rank[{n}]") for n in zero}

    def precede(before: str, after: str, lit: Any) -> None:
        m.add_implication(lit, used[before])
        m.add(start[after] >= start[before] + dur[before]).only_enforce_if(lit)
        if before in rank and after in rank:
            m.add(rank[after] >= rank[before] + 1).only_enforce_if(lit)

    producers: dict[str, list[str]] = {}
    for tool in tools:
        for fact in tool.outputs:
            producers.setdefault(fact, []).append(tool.name)
    reads: dict[tuple[str, str], dict[str, Any]] = {}
    for tool in tools:
        for fact in dict.fromkeys(tool.inputs):
            if fact in initial:
                continue
            choice = {p: m.new_bool_var(f"x[{tool.name},{fact},{p}]")
                      for p in producers.get(fact, []) if p != tool.name}
            if choice:
                m.add(sum(choice.values()) == used[tool.name])
            else:
                m.add(used[tool.name] == 0)
            for p, lit in choice.items():
                precede(p, tool.name, lit)
            reads[tool.name, fact] = choice
    approvals: dict[str, dict[str, Any]] = {}
    if problem.policy.write_requires_approval:
        approvers = [t.name for t in tools if t.risk == "approval"]
        for tool in tools:
            if tool.risk != "write":
                continue
            choice = {q: m.new_bool_var(f"a[{tool.name},{q}]") for q in approvers}
            if choice:
                m.add(sum(choice.values()) == used[tool.name])
            else:
                m.add(used[tool.name] == 0)
            for q, lit in choice.items():
                precede(q, tool.name, lit)
            approvals[tool.name] = choice
    for criterion in problem.criteria:
        if criterion not in initial:
            m.add_bool_or([used[p] for p in producers.get(criterion, [])])
    if problem.limits.max_tasks is not None:
        m.add(sum(used.values()) <= problem.limits.max_tasks)
    if problem.limits.max_parallel is not None and names:
        m.add_cumulative([interval[n] for n in names], [1] * len(names), problem.limits.max_parallel)
    for resource, capacity in problem.resources.items():
        holders = [t for t in tools if t.uses.get(resource, 0) > 0]
        if not holders:
            continue
        rscale = _scale([capacity, *(t.uses[resource] for t in holders)])
        m.add_cumulative([interval[t.name] for t in holders],
                         [math.ceil(t.uses[resource] * rscale) for t in holders],
                         math.floor(capacity * rscale))
    # Redundant energy cuts: the work run must fit under the makespan times each capacity.
    if problem.limits.max_parallel is not None:
        m.add(makespan * problem.limits.max_parallel >= sum(dur[n] * used[n] for n in names))
    m.minimize(makespan * big + sum(used.values()))

    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(0.01, seconds - (time.perf_counter() - began))
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = seed
    status = solver.solve(m)
    run = CpsatRun(status=solver.status_name(status), seconds=0.0, candidates=len(tools))
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        chosen = [n for n in names if solver.boolean_value(used[n])]
        starts = {n: int(solver.value(start[n])) for n in chosen}
        edges: dict[str, dict[str, str]] = {n: {} for n in chosen}
        for (reader, fact), choice in reads.items():
            if reader in edges:
                edges[reader][fact] = next(p for p, lit in choice.items() if solver.boolean_value(lit))
        approval_of = {w: next(q for q, lit in choice.items() if solver.boolean_value(lit))
                       for w, choice in approvals.items() if w in edges}
        run.plan = solution_plan(problem, by_name, starts, dur, edges, approval_of)
        run.makespan = max((starts[n] + dur[n] for n in chosen), default=0) / scale
        run.bound = math.floor(solver.best_objective_bound / big) / scale
    elif status == cp_model.INFEASIBLE:
        run.bound = math.inf
    run.seconds = time.perf_counter() - began
    return run


def earliest_starts(problem: Problem, tools: Sequence[Tool],
                    dur: Mapping[str, int]) -> tuple[dict[str, int], dict[str, int]]:
    """Static lower bounds: each tool's earliest start and each fact's earliest availability.

    Resources ignored, the fastest producer of every fact assumed: a fixed point of
    ``start[t] >= max(ready[f] for f in inputs)`` and ``ready[f] = min(start[p] + dur[p])``.
    Valid for every feasible plan, so tightening the domains with them changes no solution;
    it gives CP-SAT the critical-path bound it would otherwise have to discover.
    """
    ready = {f: 0 for f in problem.initial}
    start: dict[str, int] = {}
    approvals = [t for t in tools if t.risk == "approval"]
    policy = problem.policy.write_requires_approval
    changed = True
    while changed:
        changed = False
        approved = min((start[q.name] + dur[q.name] for q in approvals if q.name in start), default=None)
        for tool in tools:
            if any(f not in ready for f in tool.inputs):
                continue
            if tool.risk == "write" and policy and approved is None:
                continue
            at = max((ready[f] for f in tool.inputs), default=0)
            if tool.risk == "write" and policy and approved is not None:
                at = max(at, approved)
            if start.get(tool.name, at + 1) > at:
                start[tool.name] = at
                changed = True
                for fact in tool.outputs:
                    if ready.get(fact, at + dur[tool.name] + 1) > at + dur[tool.name]:
                        ready[fact] = at + dur[tool.name]
    return start, ready


def solution_plan(problem: Problem, tools: Mapping[str, Tool], starts: Mapping[str, int],
                  dur: Mapping[str, int], edges: Mapping[str, Mapping[str, str]],
                  approval_of: Mapping[str, str]) -> Plan:
    """The evolve plan of a CP-SAT solution (tools ``starts`` keys, reads ``edges``).

    Ids follow CP-SAT's start order, and the priority is that order made topological (ties
    between zero-duration tasks), so evolve's scheduler replays the solution.
    """
    deps = {n: sorted({*edges[n].values(), *([approval_of[n]] if n in approval_of else [])}) for n in starts}
    waiting = {n: len(deps[n]) for n in starts}
    readers: dict[str, list[str]] = {n: [] for n in starts}
    for n, ups in deps.items():
        for up in ups:
            readers[up].append(n)
    ready = [(starts[n], starts[n] + dur[n], n) for n in starts if waiting[n] == 0]
    heapq.heapify(ready)
    order: list[str] = []
    while ready:
        _, _, n = heapq.heappop(ready)
        order.append(n)
        for r in readers[n]:
            waiting[r] -= 1
            if waiting[r] == 0:
                heapq.heappush(ready, (starts[r], starts[r] + dur[r], r))
    ids = {n: f"t{i}" for i, n in enumerate(order, 1)}
    tasks = []
    for n in order:
        tool = tools[n]
        inputs = {f: (f"${ids[edges[n][f]]}.{f}" if f in edges[n] else f"${f}") for f in tool.inputs}
        tasks.append(Task(id=ids[n], tool=n, deps=tuple(ids[d] for d in deps[n]), inputs=inputs,
                          idempotency_key=f"{n}:{ids[n]}" if tool.risk == "write" else None))
    return Plan(tasks=tuple(tasks), priority=tuple(ids[n] for n in order))


# -- evolve -----------------------------------------------------------------------------------


@dataclass
class EvolveRun:
    """One ``evolve run`` subprocess: its wall time, its summary's figures and the checked plan."""

    wall: float
    error: str | None = None
    evaluations: int | None = None
    seconds: float | None = None
    plans_per_second: float | None = None
    reported_makespan: float | None = None
    check: Check | None = None

    def record(self) -> dict[str, Any]:
        data = asdict(self)
        data["wall"] = round(self.wall, 3)
        return data


def evolve_command() -> list[str]:
    """The ``evolve`` executable, or this interpreter running the CLI module when it is not on PATH."""
    exe = shutil.which("evolve")
    return [exe] if exe else [sys.executable, "-m", "evolve.cli"]


def read_best(path: Path) -> Plan:
    """``best.json`` as a plan; its ``schedule`` key is dropped if the reader ever refuses it."""
    data = json.loads(path.read_text(encoding="utf-8"))
    try:
        return plan_from_dict(data, str(path))
    except Exception:
        return plan_from_dict({k: v for k, v in data.items() if k != "schedule"}, str(path))


def run_evolve(problem: Problem, path: Path, out: Path, seed: int, seconds: float | None) -> EvolveRun:
    """Run evolve on one core, with a wall-time budget (``None``: its defaults), and check its plan."""
    cmd = [*evolve_command(), "run", str(path), "--jobs", "1", "--no-report", "--out", str(out),
           "--seed", str(seed)]
    if seconds is not None:
        cmd += ["--max-seconds", f"{seconds:g}", "--generations", "1000000"]
    began = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    run = EvolveRun(wall=time.perf_counter() - began)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        run.error = f"exit {proc.returncode}: {' | '.join(tail)}"
        return run
    try:
        summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
        plan = read_best(out / "best.json")
    except Exception as exc:  # a run folder we cannot read is a failed run, reported as such
        run.error = f"unreadable run folder: {exc}"
        return run
    run.evaluations = int(summary["evaluations"])
    run.seconds = float(summary["seconds"])
    run.plans_per_second = run.evaluations / run.seconds if run.seconds > 0 else None
    run.reported_makespan = summary.get("best", {}).get("makespan")
    run.check = check_plan(problem, plan)
    return run


# -- the benchmark ----------------------------------------------------------------------------


@dataclass
class Case:
    """Everything measured on one (size, seed) problem."""

    size: int
    seed: int
    facts: int
    tools: int
    cpsat: dict[str, CpsatRun] = field(default_factory=dict)
    evolve: dict[str, EvolveRun] = field(default_factory=dict)
    bound: LowerBound | None = None
    witness: CpsatRun | None = None
    """The integral energy model's tool set, scheduled by CP-SAT and checked by evolve: a plan
    that shows how close to the bound a plan can get (not a solver of the benchmark)."""

    def record(self) -> dict[str, Any]:
        return {"size": self.size, "seed": self.seed, "facts": self.facts, "tools": self.tools,
                "cpsat": {k: v.record() for k, v in self.cpsat.items()},
                "evolve": {k: v.record() for k, v in self.evolve.items()},
                "bound": None if self.bound is None else {
                    "value": self.bound.value, "source": self.bound.source, "parts": dict(self.bound.parts),
                    "seconds": round(self.bound.seconds, 3), "witness_tools": len(self.bound.witness)},
                "witness": None if self.witness is None else self.witness.record()}

    def best_bound(self) -> tuple[float | None, str]:
        """The larger of evolve.model.bounds' bound and CP-SAT's proven ones, and whose it is."""
        options: list[tuple[float, str]] = []
        if self.bound is not None and math.isfinite(self.bound.value):
            options.append((self.bound.value, self.bound.source))  # first: ties name the cheaper one
        options += [(r.bound, f"cpsat@{k}") for k, r in self.cpsat.items()
                    if r.bound is not None and math.isfinite(r.bound)]
        if not options:
            return None, "-"
        value, source = max(options, key=lambda o: o[0])
        return value, source


def budget_key(seconds: float) -> str:
    return f"{seconds:g}s"


def measure(size: int, seed: int, budgets: Sequence[float], work: Path, bound_seconds: float = 30.0,
            witness_seconds: float = 10.0) -> Case:
    """Generate, write and load one problem; solve it with CP-SAT and evolve for every budget;
    compute evolve.model.bounds' lower bound (its integral model for ``bound_seconds``) and
    schedule that model's tool set with CP-SAT for ``witness_seconds`` (0: no witness)."""
    doc = document_for(size, seed)
    path = work / f"facts{size}-seed{seed}.json"
    path.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    problem = load_problem(path)
    case = Case(size=size, seed=seed, facts=count_facts(doc), tools=len(doc["tools"]))
    progress(f"size {size} seed {seed}: lower bound")
    case.bound = lower_bound(problem, mip_seconds=bound_seconds, path_seconds=bound_seconds)
    if case.bound.witness and witness_seconds > 0:
        progress(f"size {size} seed {seed}: witness")
        case.witness = witness_run(problem, case.bound, witness_seconds, seed)
    for seconds in budgets:
        key = budget_key(seconds)
        progress(f"size {size} seed {seed}: CP-SAT {key}")
        run = solve_cpsat(problem, seconds, seed=seed)
        if run.plan is not None:
            run.check = check_plan(problem, run.plan)
        case.cpsat[key] = run
        progress(f"size {size} seed {seed}: evolve {key}")
        case.evolve[key] = run_evolve(problem, path, work / f"run-{size}-{seed}-{key}", seed, seconds)
    progress(f"size {size} seed {seed}: evolve defaults")
    case.evolve["defaults"] = run_evolve(problem, path, work / f"run-{size}-{seed}-defaults", seed, None)
    return case


def witness_run(problem: Problem, bound: LowerBound, seconds: float, seed: int) -> CpsatRun:
    """CP-SAT on ``problem`` cut down to the bound's witness tools, its plan checked by evolve."""
    keep = set(bound.witness)
    run = solve_cpsat(replace(problem, tools={n: t for n, t in problem.tools.items() if n in keep}),
                      seconds, seed=seed)
    if run.plan is not None:
        run.check = check_plan(problem, run.plan)
    return run


def gap(makespan: float | None, bound: float | None) -> float | None:
    """``makespan / bound - 1`` in per cent."""
    return 100.0 * (makespan / bound - 1.0) if makespan is not None and bound else None


def progress(message: str) -> None:
    print(f"  {message}", file=sys.stderr, flush=True)


def ok_makespan(run: CpsatRun | EvolveRun | None) -> float | None:
    """The checked makespan of a run, or ``None`` when it has no plan or its plan fails the check."""
    if run is None or run.check is None or not run.check.ok:
        return None
    return run.check.makespan


def mean(values: Iterable[float | None]) -> float | None:
    got = [v for v in values if v is not None]
    return statistics.fmean(got) if got else None


def geomean(values: Iterable[float | None]) -> float | None:
    got = [v for v in values if v is not None and v > 0]
    return statistics.geometric_mean(got) if got else None


def ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b is not None and b > 0 else None


def summarise(cases: Sequence[Case], budgets: Sequence[float]) -> dict[str, Any]:
    """Per-size figures: means over seeds, geometric means for ratios, failures listed."""
    short, long = budget_key(budgets[0]), budget_key(budgets[-1])
    cp_best = {id(c): min((m for m in (ok_makespan(r) for r in c.cpsat.values()) if m is not None),
                          default=None) for c in cases}
    best_tasks: dict[int, int | None] = {}
    for c in cases:
        fine = [r.check for r in c.cpsat.values() if r.check is not None and r.check.ok]
        best = min(fine, key=lambda k: (k.makespan or 0.0, k.tasks), default=None)
        best_tasks[id(c)] = best.tasks if best is not None else None
    sizes: list[dict[str, Any]] = []
    for size in dict.fromkeys(c.size for c in cases):
        group = [c for c in cases if c.size == size]
        row: dict[str, Any] = {
            "size": size, "seeds": [c.seed for c in group],
            "facts": mean(c.facts for c in group), "tools": mean(c.tools for c in group),
            "cpsat_tasks": mean(best_tasks[id(c)] for c in group),
            "cpsat": {}, "evolve": {},
        }
        for b in budgets:
            key = budget_key(b)
            runs = [c.cpsat[key] for c in group]
            row["cpsat"][key] = {
                "makespan": mean(ok_makespan(r) for r in runs),
                "status": {s: sum(r.status == s for r in runs) for s in sorted({r.status for r in runs})},
                "bound": mean(r.bound for r in runs if r.bound is not None and math.isfinite(r.bound)),
                "seconds": mean(r.seconds for r in runs),
            }
        for key in [*(budget_key(b) for b in budgets), "defaults"]:
            eruns = [c.evolve[key] for c in group]
            row["evolve"][key] = {
                "makespan": mean(ok_makespan(r) for r in eruns),
                "wall": mean(r.wall for r in eruns),
                "plans_per_second": mean(r.plans_per_second for r in eruns),
                "evaluations": mean(r.evaluations for r in eruns),
            }
        row["ratios"] = {
            f"evolve{short}/cpsat{long}": geomean(
                ratio(ok_makespan(c.evolve[short]), ok_makespan(c.cpsat[long])) for c in group),
            f"evolve{long}/cpsat{long}": geomean(
                ratio(ok_makespan(c.evolve[long]), ok_makespan(c.cpsat[long])) for c in group),
            "defaults/cpsat_best": geomean(
                ratio(ok_makespan(c.evolve["defaults"]), cp_best[id(c)]) for c in group),
        }
        sizes.append(row)
    failures = []
    for c in cases:
        labelled: list[tuple[str, CpsatRun | EvolveRun]] = [
            *((f"cpsat {k}", r) for k, r in c.cpsat.items()),
            *((f"evolve {k}", r) for k, r in c.evolve.items()),
        ]
        for label, r in labelled:
            if r.check is not None and r.check.ok:
                continue
            if isinstance(r, EvolveRun) and r.error:
                why = r.error
            elif r.check is not None:
                why = "; ".join(r.check.errors[:3]) + (f" (+{len(r.check.errors) - 3} more)"
                                                       if len(r.check.errors) > 3 else "")
            else:
                why = f"no plan (status {getattr(r, 'status', '?')})"
            failures.append({"size": c.size, "seed": c.seed, "run": label, "why": why})
    odd = [{"size": c.size, "seed": c.seed, "run": f"evolve {k}", "reported": r.reported_makespan,
            "checked": r.check.makespan}
           for c in cases for k, r in c.evolve.items()
           if r.check is not None and r.reported_makespan is not None and r.check.makespan is not None
           and abs(r.reported_makespan - r.check.makespan) > 1e-6]
    # A checked plan below CP-SAT's proven lower bound would mean the model is not exact.
    below = []
    for c in cases:
        bound, _ = c.best_bound()
        checked: list[tuple[str, CpsatRun | EvolveRun]] = [
            *((f"cpsat {k}", x) for k, x in c.cpsat.items()),
            *((f"evolve {k}", x) for k, x in c.evolve.items()),
            *([("witness", c.witness)] if c.witness is not None else []),
        ]
        for label, r in checked:
            made = ok_makespan(r)
            if bound is not None and made is not None and made < bound - 1e-6:
                below.append({"size": c.size, "seed": c.seed, "run": label, "makespan": made, "bound": bound})
    short_key = budget_key(budgets[0])
    gaps = []
    for c in cases:
        value, source = c.best_bound()
        made = ok_makespan(c.evolve.get(short_key))
        witness = ok_makespan(c.witness)
        gaps.append({"size": c.size, "seed": c.seed, "facts": c.facts, "evolve": made,
                     "bound": value, "source": source,
                     "cpsat_bound": max((r.bound for r in c.cpsat.values()
                                         if r.bound is not None and math.isfinite(r.bound)), default=None),
                     "lp": c.bound.parts.get("energy") if c.bound is not None else None,
                     "bound_seconds": c.bound.seconds if c.bound is not None else None,
                     "gap": gap(made, value), "witness": witness, "witness_gap": gap(witness, value),
                     "evolve_over_witness": gap(made, witness)})
    return {"sizes": sizes, "failures": failures, "makespan_mismatches": odd, "below_bound": below,
            "gaps": gaps}


def fmt(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}f}"


def status_text(counts: Mapping[str, int]) -> str:
    short = {"OPTIMAL": "opt", "FEASIBLE": "feas", "INFEASIBLE": "infeas", "UNKNOWN": "unk"}
    return " ".join(f"{n}{short.get(s, s.lower())}" for s, n in counts.items())


def table(summary: Mapping[str, Any], seeds: Sequence[int], budgets: Sequence[float]) -> str:
    """The figures as two readable tables (CP-SAT, then evolve and the ratios)."""
    short, long = budget_key(budgets[0]), budget_key(budgets[-1])
    lines = [f"plan_vs_cpsat: seeds {' '.join(map(str, seeds))}; sizes (target facts) "
             f"{' '.join(str(r['size']) for r in summary['sizes'])}; budgets {short} and {long}; "
             f"one core each (CP-SAT num_workers=1, evolve --jobs 1); max_parallel={MAX_PARALLEL}",
             "makespans from evolve's reference scheduler; means over seeds, ratios geometric means", ""]
    head = f"{'facts':>6} {'tools':>6} {'tasks':>5}"
    for key in (short, long):
        head += f" | {'cpsat@' + key:>11} {'status':>8} {'bound':>8}"
    lines += [head, "-" * len(head)]
    for r in summary["sizes"]:
        line = f"{fmt(r['facts']):>6} {fmt(r['tools']):>6} {fmt(r['cpsat_tasks'], 1):>5}"
        for key in (short, long):
            cp = r["cpsat"][key]
            line += f" | {fmt(cp['makespan']):>11} {status_text(cp['status']):>8} {fmt(cp['bound']):>8}"
        lines.append(line)
    lines.append("")
    r1, r2, r3 = f"e{short}/c{long}", f"e{long}/c{long}", "def/cbest"
    head = (f"{'facts':>6} | {'evo@' + short:>9} {'plans/s':>8} | {'evo@' + long:>9} {'plans/s':>8} | "
            f"{'evo@def':>8} {'wall s':>6} | {r1:>9} {r2:>9} {r3:>9}")
    lines += [head, "-" * len(head)]
    for r in summary["sizes"]:
        ev, ra = r["evolve"], list(r["ratios"].values())
        lines.append(
            f"{fmt(r['facts']):>6} | "
            f"{fmt(ev[short]['makespan']):>9} {fmt(ev[short]['plans_per_second']):>8} | "
            f"{fmt(ev[long]['makespan']):>9} {fmt(ev[long]['plans_per_second']):>8} | "
            f"{fmt(ev['defaults']['makespan']):>8} {fmt(ev['defaults']['wall'], 1):>6} | "
            f"{fmt(ra[0], 3):>9} {fmt(ra[1], 3):>9} {fmt(ra[2], 3):>9}")
    lines += ["", f"gap to bound of evolve@{short} (makespan / best bound - 1); best bound = the larger of "
              "evolve.model.bounds (LP, integral energy model) and CP-SAT's; witness = the integral "
              "model's tool set scheduled by CP-SAT", ""]
    head = (f"{'facts':>6} {'seed':>4} | {'evo@' + short:>9} {'bound':>8} {'gap %':>6} "
            f"{'best bound by':<26} | {'cpsat bd':>8} {'LP':>8} {'bd s':>5} | "
            f"{'witness':>8} {'w gap%':>6} {'evo/w %':>7}")
    lines += [head, "-" * len(head)]
    for g in summary["gaps"]:
        lines.append(f"{g['facts']:>6} {g['seed']:>4} | {fmt(g['evolve']):>9} {fmt(g['bound']):>8} "
                     f"{fmt(g['gap'], 2):>6} {g['source']:<26} | {fmt(g['cpsat_bound']):>8} "
                     f"{fmt(g['lp']):>8} {fmt(g['bound_seconds'], 1):>5} | {fmt(g['witness']):>8} "
                     f"{fmt(g['witness_gap'], 2):>6} {fmt(g['evolve_over_witness'], 2):>7}")
    if summary["failures"]:
        lines += ["", "FAILED (excluded from means and ratios):"]
        lines += [f"  size {f['size']} seed {f['seed']} {f['run']}: {f['why']}" for f in summary["failures"]]
    if summary["makespan_mismatches"]:
        lines += ["", "evolve's summary.json makespan differs from the reference schedule:"]
        lines += [f"  size {m['size']} seed {m['seed']} {m['run']}: reported {m['reported']}, "
                  f"checked {m['checked']}" for m in summary["makespan_mismatches"]]
    if summary["below_bound"]:
        lines += ["", "BELOW A LOWER BOUND (the CP-SAT model is not exact, or evolve.model.bounds is wrong):"]
        lines += [f"  size {b['size']} seed {b['seed']} {b['run']}: {b['makespan']} < {b['bound']}"
                  for b in summary["below_bound"]]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 300, 1000],
                    help="target fact counts of the generated problems")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--seconds", type=float, nargs=2, default=[10.0, 60.0], metavar=("SHORT", "LONG"),
                    help="the two wall-time budgets, for both solvers")
    ap.add_argument("--quick", action="store_true",
                    help=f"smoke run: sizes {QUICK_SIZES}, seeds {QUICK_SEEDS}, seconds {QUICK_SECONDS}")
    ap.add_argument("--bound-seconds", type=float, default=30.0,
                    help="time for evolve.model.bounds' integral energy model per problem")
    ap.add_argument("--witness-seconds", type=float, default=10.0,
                    help="CP-SAT time to schedule the integral model's tool set (0: skip)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON instead of tables")
    args = ap.parse_args(argv)
    if cp_model is None:
        print("plan_vs_cpsat: OR-Tools is not installed (pip install ortools); nothing to compare.")
        return 0
    sizes, seeds, budgets = list(args.sizes), list(args.seeds), sorted(args.seconds)
    if args.quick:
        sizes, seeds, budgets = list(QUICK_SIZES), list(QUICK_SEEDS), list(QUICK_SECONDS)
    cases: list[Case] = []
    with tempfile.TemporaryDirectory(prefix="plan_vs_cpsat-") as tmp:
        for size in sizes:
            for seed in seeds:
                cases.append(measure(size, seed, budgets, Path(tmp), args.bound_seconds,
                                     args.witness_seconds))
    summary = summarise(cases, budgets)
    if args.json:
        print(json.dumps({"seeds": seeds, "sizes": sizes, "budgets": budgets, **summary,
                          "cases": [c.record() for c in cases]}, indent=2, default=str))
    else:
        print(table(summary, seeds, budgets))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
