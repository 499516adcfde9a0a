"""PSPLIB benchmark: run the search on a set and print the literature's table.

The literature reports, per set and schedule budget, the average percentage
deviation of the makespan from the optimum (j30, where all optima are known)
or from the critical-path lower bound (j60, j90, j120), and the share of
instances solved to the best known value. This module produces exactly those
figures, so they can be set beside published tables.
"""

from __future__ import annotations

import json
import os
import time
import zlib
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed

from evolve.problems.rcpsp.instance import (
    PSPLIB_SETS,
    BestKnown,
    load_best_known,
    load_instance,
    psplib_dir,
    set_files,
)
from evolve.problems.rcpsp.search import solve


@dataclass(frozen=True)
class InstanceRecord:
    """Result on one instance (one row of the JSON output)."""

    instance: str
    makespan: int
    starts: list[int]
    finishes: list[int]
    schedules: int
    seconds: float
    best_known: int
    is_optimal: bool
    lower_bound: int
    cpm_lb: int


@dataclass(frozen=True)
class BenchSummary:
    """The literature's table row for one run."""

    set_name: str
    instances: int
    schedules: int | None
    seconds_budget: float | None
    deviation_pct: float  #: vs optimum (j30) or critical-path bound (others)
    deviation_basis: str
    deviation_best_known_pct: float  #: vs best known, for every set
    at_best_known_pct: float
    mean_seconds: float
    mean_schedules: float
    wall_seconds: float


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


def _run_one(
    path: Path, bk: BestKnown, schedules: int | None, seconds: float | None, seed: int
) -> InstanceRecord:
    inst = load_instance(path)
    res = solve(
        inst,
        schedules=schedules,
        seconds=seconds,
        seed=instance_seed(seed, inst.name),
        lower_bound=bk.lower_bound,
    )
    return InstanceRecord(
        instance=inst.name,
        makespan=res.makespan,
        starts=[int(x) for x in res.starts],
        finishes=[int(x) for x in res.starts + inst.durations],
        schedules=res.schedules_used,
        seconds=round(res.seconds, 6),
        best_known=bk.best_known,
        is_optimal=bk.is_optimal,
        lower_bound=bk.lower_bound,
        cpm_lb=bk.cpm_lb,
    )


def run_psplib_benchmark(
    set_name: str,
    *,
    schedules: int | None = 1000,
    seconds: float | None = None,
    instances: int | None = None,
    jobs: int = 1,
    seed: int = 0,
    json_path: str | os.PathLike[str] | None = None,
    data_dir: str | os.PathLike[str] | None = None,
) -> tuple[list[InstanceRecord], BenchSummary]:
    """Solve a PSPLIB set (or ``instances`` evenly spread ones) and summarise.

    Raises ``FileNotFoundError`` when the data is missing and ``ValueError``
    for an unknown set, both with a one-line message.
    """
    if set_name not in PSPLIB_SETS:
        raise ValueError(f"unknown PSPLIB set {set_name!r}; choose one of {', '.join(PSPLIB_SETS)}")
    base = Path(data_dir) if data_dir is not None else psplib_dir()
    files = set_files(set_name, base)
    table_path = base / "best_known_detail.csv"
    if not files or not table_path.exists():
        raise FileNotFoundError(f"PSPLIB data for {set_name} not found in {base} (set EVOLVE_PSPLIB_DIR)")
    best = load_best_known(table_path)
    files = spread_sample(files, instances)
    t0 = time.perf_counter()
    records: list[InstanceRecord] = Parallel(n_jobs=jobs)(
        delayed(_run_one)(f, best[f.stem], schedules, seconds, seed) for f in files
    )
    wall = time.perf_counter() - t0
    if json_path is not None:
        Path(json_path).write_text(json.dumps([asdict(r) for r in records], indent=1))
    return records, summarise(set_name, records, schedules, seconds, wall)


def summarise(
    set_name: str,
    records: list[InstanceRecord],
    schedules: int | None,
    seconds: float | None,
    wall: float = 0.0,
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
        deviation_pct=sum(devs) / k,
        deviation_basis="optimum" if exact else "critical-path bound",
        deviation_best_known_pct=sum(devs_bk) / k,
        at_best_known_pct=100.0 * sum(r.makespan <= r.best_known for r in records) / k,
        mean_seconds=sum(r.seconds for r in records) / k,
        mean_schedules=sum(r.schedules for r in records) / k,
        wall_seconds=wall,
    )


def format_table(rows: list[BenchSummary]) -> str:
    """The literature's table as Markdown, one line per run."""
    head = (
        "| set | instances | schedules | s/instance budget | avg dev % | vs | "
        "dev % vs best known | at best known % | mean s/instance | mean schedules |\n"
        "|---|---|---|---|---|---|---|---|---|---|"
    )
    lines = [head]
    for s in rows:
        lines.append(
            f"| {s.set_name} | {s.instances} | {s.schedules if s.schedules else '-'} | "
            f"{s.seconds_budget if s.seconds_budget else '-'} | {s.deviation_pct:.2f} | "
            f"{s.deviation_basis} | {s.deviation_best_known_pct:.2f} | "
            f"{s.at_best_known_pct:.1f} | {s.mean_seconds:.3f} | {s.mean_schedules:.0f} |"
        )
    return "\n".join(lines)
