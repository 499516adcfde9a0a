"""PSPLIB benchmark: run the search on sets, budgets and seeds and print the literature's table.

The literature reports, per set and schedule budget, the average percentage
deviation of the makespan from the optimum (j30, where all optima are known)
or from the critical-path lower bound (j60, j90, j120), and the share of
instances solved to the best known value. This module produces exactly those
figures for several budgets and seeds at once (the mean over seeds, with its
spread), so they can be set beside published tables.

The protocol is the literature's and is kept honest here: every SGS decode and
every justification pass is one schedule (the search counts them, the record
says how many were used), the search stops early only at a lower bound it
computes itself (:func:`~evolve.problems.rcpsp.instance.lower_bound`: critical
path or resource energy), never at a value of the answer table, which is read
only to score the result. Each worker loads the numba kernels before it starts
any clock (:func:`~evolve.problems.rcpsp.warmup.warm_up`).
"""

from __future__ import annotations

import json
import os
import statistics
import time
import zlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from joblib import Parallel, delayed

from evolve import defaults
from evolve.model.errors import UsageError
from evolve.problems.rcpsp.check import schedule_violations
from evolve.problems.rcpsp.instance import (
    PSPLIB_SETS,
    BestKnown,
    RcpspInstance,
    load_best_known,
    load_instance,
    lower_bound,
    psplib_dir,
    set_files,
)
from evolve.problems.rcpsp.search import GaParams, solve
from evolve.problems.rcpsp.warmup import warm_up

#: Best published schedule-limited GA results (Debels & Vanhoucke 2007, as tabled by
#: Kolisch & Hartmann): average % over the optimum (j30) or the critical-path bound.
PUBLISHED: dict[tuple[str, int], float] = {
    ("j30", 1000): 0.12, ("j30", 5000): 0.04, ("j30", 50000): 0.02,
    ("j60", 1000): 11.45, ("j60", 5000): 10.95, ("j60", 50000): 10.68,
    ("j120", 1000): 33.55, ("j120", 5000): 32.18, ("j120", 50000): 30.69,
}
PUBLISHED_SOURCE = "Debels & Vanhoucke 2007"

STOP_RULE = "max(critical path, resource energy), computed by the search per instance"
COUNT_RULE = "every SGS decode and every justification pass is one schedule"


@dataclass(frozen=True)
class InstanceRecord:
    """Result on one instance for one budget and seed (one row of the JSON output)."""

    instance: str
    set_name: str
    budget: int | None  #: the schedule budget (None: time budget only)
    seed: int  #: the run seed (the instance's own seed is derived from it)
    makespan: int
    starts: list[int]
    finishes: list[int]
    schedules: int  #: schedules generated, the final decode included
    seconds: float  #: search time, kernel loading excluded
    stop_bound: int  #: the bound the search computed and could stop at
    best_known: int
    is_optimal: bool
    lower_bound: int
    cpm_lb: int


@dataclass(frozen=True)
class BenchSummary:
    """The literature's table row for one set, budget and seed."""

    set_name: str
    instances: int
    schedules: int | None
    seconds_budget: float | None
    seed: int
    deviation_pct: float  #: vs optimum (j30) or critical-path bound (others)
    deviation_basis: str
    deviation_best_known_pct: float  #: vs best known, for every set
    at_best_known_pct: float
    mean_seconds: float
    mean_schedules: float
    wall_seconds: float


@dataclass(frozen=True)
class GridRow:
    """One set and budget over several seeds: the mean of the per-seed figures and their spread."""

    set_name: str
    instances: int
    sample: str  #: which instances ("all", "every 4th", "30 evenly spread")
    schedules: int | None
    seconds_budget: float | None
    seeds: tuple[int, ...]
    per_seed_pct: tuple[float, ...]  #: average deviation of each seed, in ``seeds`` order
    deviation_pct: float  #: mean over seeds
    sd_pct: float  #: sample standard deviation over seeds (0 for one seed)
    min_pct: float
    max_pct: float
    deviation_basis: str
    deviation_best_known_pct: float
    at_best_known_pct: float
    mean_seconds: float
    mean_schedules: float
    published_pct: float | None  #: the best published figure for this set and budget, if any


@dataclass(frozen=True)
class GridResult:
    """Everything one benchmark run produced."""

    rows: list[GridRow]
    runs: list[BenchSummary]
    records: list[InstanceRecord]
    wall_seconds: float
    params: GaParams  #: the search settings every run used

    def to_json(self) -> dict[str, Any]:
        return {
            "protocol": {"counting": COUNT_RULE, "early_stop": STOP_RULE,
                         "published": PUBLISHED_SOURCE, "seconds": "search only, kernels loaded first"},
            "wall_seconds": self.wall_seconds,
            "params": {**asdict(self.params), "crossover": self.params.crossover.name.lower()},
            "rows": [asdict(r) for r in self.rows],
            "runs": [asdict(r) for r in self.runs],
            "records": [asdict(r) for r in self.records],
        }


def instance_seed(seed: int, name: str) -> int:
    """Per-instance seed from the run seed and the instance name, so a result
    does not depend on which worker ran it or on the sample drawn."""
    return (seed * 1_000_003 + zlib.crc32(name.encode())) & 0x7FFF_FFFF_FFFF_FFFF


def spread_sample(items: list[Path], count: int | None) -> list[Path]:
    """``count`` items evenly spread over the list (all when None or too many)."""
    if count is None or count >= len(items):
        return list(items)
    if count <= 0:
        return []
    idx = np.linspace(0, len(items) - 1, count).round().astype(int)
    return [items[i] for i in sorted(set(idx.tolist()))]


def pick(items: list[Path], instances: int | None, every: int | None,
         offset: int = 0) -> tuple[list[Path], str]:
    """The sample (``instances`` evenly spread, or every ``every``-th from number ``offset``)
    and its name."""
    if every is not None and every > 1:
        return items[offset::every], f"every {ordinal(every)}" + (f" from #{offset}" if offset else "")
    chosen = spread_sample(items, instances)
    return chosen, "all" if len(chosen) == len(items) else f"{len(chosen)} evenly spread"


def ordinal(k: int) -> str:
    """``2`` -> ``2nd``, ``4`` -> ``4th``, ``11`` -> ``11th``."""
    suffix = "th" if 10 <= k % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
    return f"{k}{suffix}"


class InfeasibleSchedule(ValueError):
    """The search returned a schedule the independent check rejects: the benchmark stops."""


def audit_schedule(inst: RcpspInstance, starts: npt.ArrayLike, makespan: int) -> None:
    """Re-check a schedule before its makespan is counted.

    The figures average the search's own makespans; this check is the
    independent numpy one of :mod:`evolve.problems.rcpsp.check`, and the
    makespan must be the schedule's last finish, so a decoder bug cannot
    improve the table.
    """
    problems = schedule_violations(inst, starts)
    finish = int((np.asarray(starts, dtype=np.int64) + inst.durations).max(initial=0))
    if not problems and finish != makespan:
        problems = [f"reported makespan {makespan} but the last activity ends at {finish}"]
    if problems:
        raise InfeasibleSchedule(f"{inst.name}: infeasible schedule: " + "; ".join(problems[:3]))


def _run_one(path: Path, set_name: str, bk: BestKnown, schedules: int | None, seconds: float | None,
             seed: int, params: GaParams | None) -> InstanceRecord:
    warm_up()  # once per process, before the clock of solve() starts
    inst = load_instance(path)
    bound = lower_bound(inst)
    res = solve(inst, schedules=schedules, seconds=seconds, seed=instance_seed(seed, inst.name),
                lower_bound=bound, params=params)
    audit_schedule(inst, res.starts, res.makespan)
    return InstanceRecord(
        instance=inst.name, set_name=set_name, budget=schedules, seed=seed, makespan=res.makespan,
        starts=[int(x) for x in res.starts], finishes=[int(x) for x in res.starts + inst.durations],
        schedules=res.schedules_used, seconds=round(res.seconds, 6), stop_bound=bound,
        best_known=bk.best_known, is_optimal=bk.is_optimal, lower_bound=bk.lower_bound, cpm_lb=bk.cpm_lb,
    )


def run_psplib_grid(
    sets: Sequence[str],
    *,
    budgets: Sequence[int | None] = (defaults.BENCH_SCHEDULES,),
    seeds: Sequence[int] = (defaults.SEED,),
    seconds: float | None = None,
    instances: int | None = None,
    every: int | None = None,
    offset: int = 0,
    jobs: int = defaults.BENCH_JOBS,
    data_dir: str | os.PathLike[str] | None = None,
    params: GaParams | None = None,
) -> GridResult:
    """Solve each set (or a sample of it) once per budget and seed, and summarise.

    A budget of ``None`` means only ``seconds`` limits the search. All runs go
    to one pool of ``jobs`` workers; every worker loads the kernels once before
    it times anything. Raises ``FileNotFoundError`` when the data is missing and
    ``ValueError`` for an unknown set or an empty budget, with one-line messages.
    """
    for s in sets:
        if s not in PSPLIB_SETS:
            raise UsageError(f"unknown PSPLIB set {s!r}; choose one of {', '.join(PSPLIB_SETS)}")
    if any(b is None for b in budgets) and seconds is None:
        raise UsageError("a run without a schedule budget needs a time budget")
    base = Path(data_dir) if data_dir is not None else psplib_dir()
    table_path = base / "best_known_detail.csv"
    plan: list[tuple[str, list[Path], str]] = []
    for s in sets:
        files = set_files(s, base)
        if not files or not table_path.exists():
            raise FileNotFoundError(f"PSPLIB data for {s} not found in {base} (set EVOLVE_PSPLIB_DIR)")
        chosen, sample = pick(files, instances, every, offset)
        plan.append((s, chosen, sample))
    best = load_best_known(table_path)
    tasks = [(s, f, b, seed) for s, chosen, _ in plan for b in budgets for seed in seeds for f in chosen]
    t0 = time.perf_counter()
    records: list[InstanceRecord] = Parallel(n_jobs=jobs)(
        delayed(_run_one)(f, s, best[f.stem], b, seconds, seed, params) for s, f, b, seed in tasks
    )
    wall = time.perf_counter() - t0
    runs: list[BenchSummary] = []
    rows: list[GridRow] = []
    for s, _, sample in plan:
        for b in budgets:
            per_seed = []
            for seed in seeds:
                mine = [r for r in records if r.set_name == s and r.budget == b and r.seed == seed]
                per_seed.append(summarise(s, mine, b, seconds, seed=seed))
            runs.extend(per_seed)
            rows.append(combine(per_seed, sample))
    return GridResult(rows, runs, records, wall, params or GaParams())


def run_psplib_benchmark(
    set_name: str,
    *,
    schedules: int | None = defaults.BENCH_SCHEDULES,
    seconds: float | None = None,
    instances: int | None = None,
    jobs: int = defaults.BENCH_JOBS,
    seed: int = defaults.SEED,
    json_path: str | os.PathLike[str] | None = None,
    data_dir: str | os.PathLike[str] | None = None,
) -> tuple[list[InstanceRecord], BenchSummary]:
    """One set, one budget, one seed (see :func:`run_psplib_grid`); ``json_path``
    receives the per-instance records as a JSON list."""
    result = run_psplib_grid([set_name], budgets=[schedules], seeds=[seed], seconds=seconds,
                             instances=instances, jobs=jobs, data_dir=data_dir)
    if json_path is not None:
        Path(json_path).write_text(json.dumps([asdict(r) for r in result.records], indent=1))
    return result.records, result.runs[0]


def summarise(
    set_name: str,
    records: list[InstanceRecord],
    schedules: int | None,
    seconds: float | None,
    wall: float = 0.0,
    seed: int = defaults.SEED,
) -> BenchSummary:
    """Average deviations and the share at best known for a set of records."""
    exact = set_name == "j30"
    devs, devs_bk = [], []
    for r in records:
        ref = r.best_known if exact else r.cpm_lb
        devs.append(100.0 * (r.makespan - ref) / ref)
        devs_bk.append(100.0 * (r.makespan - r.best_known) / r.best_known)
    k = max(1, len(records))
    return BenchSummary(
        set_name=set_name,
        instances=len(records),
        schedules=schedules,
        seconds_budget=seconds,
        seed=seed,
        deviation_pct=sum(devs) / k,
        deviation_basis="optimum" if exact else "critical-path bound",
        deviation_best_known_pct=sum(devs_bk) / k,
        at_best_known_pct=100.0 * sum(r.makespan <= r.best_known for r in records) / k,
        mean_seconds=sum(r.seconds for r in records) / k,
        mean_schedules=sum(r.schedules for r in records) / k,
        wall_seconds=wall,
    )


def combine(runs: list[BenchSummary], sample: str) -> GridRow:
    """The seeds of one set and budget as one row: means, spread, the published figure."""
    first = runs[0]
    dev = [r.deviation_pct for r in runs]
    return GridRow(
        set_name=first.set_name, instances=first.instances, sample=sample, schedules=first.schedules,
        seconds_budget=first.seconds_budget, seeds=tuple(r.seed for r in runs), per_seed_pct=tuple(dev),
        deviation_pct=statistics.fmean(dev), sd_pct=statistics.stdev(dev) if len(dev) > 1 else 0.0,
        min_pct=min(dev), max_pct=max(dev), deviation_basis=first.deviation_basis,
        deviation_best_known_pct=statistics.fmean(r.deviation_best_known_pct for r in runs),
        at_best_known_pct=statistics.fmean(r.at_best_known_pct for r in runs),
        mean_seconds=statistics.fmean(r.mean_seconds for r in runs),
        mean_schedules=statistics.fmean(r.mean_schedules for r in runs),
        published_pct=PUBLISHED.get((first.set_name, first.schedules)) if first.schedules else None,
    )


def format_table(rows: list[BenchSummary]) -> str:
    """The literature's table as Markdown, one line per run (one set, budget, seed)."""
    head = (
        "| set | instances | schedules | s/instance budget | seed | avg dev % | vs | "
        "dev % vs best known | at best known % | mean s/instance | mean schedules |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|"
    )
    lines = [head]
    for s in rows:
        lines.append(
            f"| {s.set_name} | {s.instances} | {s.schedules if s.schedules else '-'} | "
            f"{s.seconds_budget if s.seconds_budget else '-'} | {s.seed} | {s.deviation_pct:.2f} | "
            f"{s.deviation_basis} | {s.deviation_best_known_pct:.2f} | "
            f"{s.at_best_known_pct:.1f} | {s.mean_seconds:.3f} | {s.mean_schedules:.0f} |"
        )
    return "\n".join(lines)


def format_grid(rows: list[GridRow]) -> str:
    """The grid as Markdown: one line per set and budget, the mean over the seeds with its
    spread and the seeds themselves, beside the best published figure."""
    head = (
        f"| set | instances | sample | schedules | s/instance budget | seeds | avg dev % (mean) | sd | "
        f"min | max | per seed | vs | published ({PUBLISHED_SOURCE}) | dev % vs best known | "
        "at best known % | mean s/instance | mean schedules |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    )
    lines = [head]
    for r in rows:
        pub = "-" if r.published_pct is None else f"{r.published_pct:.2f}"
        lines.append(
            f"| {r.set_name} | {r.instances} | {r.sample} | {r.schedules if r.schedules else '-'} | "
            f"{r.seconds_budget if r.seconds_budget else '-'} | {','.join(map(str, r.seeds))} | "
            f"{r.deviation_pct:.2f} | {r.sd_pct:.2f} | {r.min_pct:.2f} | {r.max_pct:.2f} | "
            f"{' / '.join(f'{d:.2f}' for d in r.per_seed_pct)} | {r.deviation_basis} | {pub} | "
            f"{r.deviation_best_known_pct:.2f} | {r.at_best_known_pct:.1f} | {r.mean_seconds:.3f} | "
            f"{r.mean_schedules:.0f} |"
        )
    return "\n".join(lines)


def format_matrix(rows: list[GridRow]) -> str:
    """The issue's table: one line per set, one column per schedule budget, each cell the
    mean over the seeds with its standard deviation, then the published figures."""
    budgets: list[int | None] = []
    for r in rows:
        if r.schedules not in budgets:
            budgets.append(r.schedules)
    names = ", ".join(f"{b:,}" if b else "time" for b in budgets)
    head = (f"| set | instances | seeds | {' | '.join(f'{b:,}' if b else 'time' for b in budgets)} | "
            f"published ({names}) |\n|{'---|' * (len(budgets) + 4)}")
    lines = [head]
    for name in dict.fromkeys(r.set_name for r in rows):
        mine = {r.schedules: r for r in rows if r.set_name == name}
        first = next(iter(mine.values()))
        cells = [f"{mine[b].deviation_pct:.2f} ± {mine[b].sd_pct:.2f}" if b in mine else "-" for b in budgets]
        pub = [f"{mine[b].published_pct:.2f}" if b in mine and mine[b].published_pct is not None else "-"
               for b in budgets]
        lines.append(f"| {name} | {first.instances} ({first.sample}) | {','.join(map(str, first.seeds))} | "
                     f"{' | '.join(cells)} | {' / '.join(pub)} |")
    return "\n".join(lines)
