"""Side by side at equal wall time: evolve's search vs OR-Tools CP-SAT on PSPLIB.

Each instance gets the same wall-time budget and one worker (one CP-SAT
search worker; one process for evolve). Prints the average deviation from the
critical-path bound and the share at best known for both. Skips cleanly if
``ortools`` is not installed. Usage::

    python benchmarks/psplib_cpsat.py [--set j120] [--instances 60] [--seconds 1]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from evolve.problems.rcpsp.bench import instance_seed, spread_sample
from evolve.problems.rcpsp.check import schedule_violations
from evolve.problems.rcpsp.instance import RcpspInstance, load_best_known, load_instance, set_files
from evolve.problems.rcpsp.search import solve


def cpsat_makespan(inst: RcpspInstance, seconds: float) -> tuple[int, float]:
    """Best makespan CP-SAT finds within ``seconds`` (1 worker), and time used.

    Standard model: one interval per activity, precedence as linear
    constraints, one cumulative per resource.
    """
    from ortools.sat.python import cp_model

    horizon = inst.horizon
    m = cp_model.CpModel()
    start = [m.new_int_var(0, horizon, f"s{j}") for j in range(inst.n)]
    ivs = [m.new_fixed_size_interval_var(start[j], int(inst.durations[j]), f"i{j}") for j in range(inst.n)]
    for j in range(inst.n):
        for s in inst.successors(j):
            m.add(start[int(s)] >= start[j] + int(inst.durations[j]))
    for r in range(inst.num_resources):
        use = [(ivs[j], int(inst.demands[j, r])) for j in range(inst.n) if inst.demands[j, r] > 0]
        if use:
            m.add_cumulative([u[0] for u in use], [u[1] for u in use], int(inst.capacities[r]))
    mk = m.new_int_var(0, horizon, "makespan")
    for j in range(inst.n):
        m.add(mk >= start[j] + int(inst.durations[j]))
    m.minimize(mk)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = seconds
    solver.parameters.num_workers = 1
    t = time.perf_counter()
    status = solver.solve(m)
    used = time.perf_counter() - t
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return horizon, used
    return int(solver.value(mk)), used


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", default="j120")
    ap.add_argument("--instances", type=int, default=60)
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    try:
        import ortools  # noqa: F401
    except ImportError:
        print("ortools is not installed; skipping the CP-SAT comparison (pip install ortools)")
        return 0
    files: list[Path] = spread_sample(set_files(args.set), args.instances)
    if not files:
        print(f"no PSPLIB data for {args.set}; skipping")
        return 0
    best = load_best_known(args.set)
    rows: list[tuple[str, int, int, int, float, int, float]] = []
    for f in files:
        inst = load_instance(f)
        bk = best[inst.name]
        ev = solve(
            inst,
            seconds=args.seconds,
            seed=instance_seed(args.seed, inst.name),
            lower_bound=bk.lower_bound,
        )
        assert not schedule_violations(inst, ev.starts)
        cp, cp_t = cpsat_makespan(inst, args.seconds)
        rows.append((inst.name, bk.cpm_lb, bk.best_known, ev.makespan, ev.seconds, cp, cp_t))
    k = len(rows)
    ev_ms = [r[3] for r in rows]
    cp_ms = [r[5] for r in rows]

    def dev(ms: list[int]) -> float:
        return sum(100.0 * (m - r[1]) / r[1] for m, r in zip(ms, rows, strict=True)) / k

    def at_bk(ms: list[int]) -> float:
        return 100.0 * sum(m <= r[2] for m, r in zip(ms, rows, strict=True)) / k

    print(f"{args.set}, {k} instances evenly spread, {args.seconds} s per instance, 1 worker")
    print("| solver | avg dev % vs critical-path bound | at best known % | mean s/instance |")
    print("|---|---|---|---|")
    print(f"| evolve | {dev(ev_ms):.2f} | {at_bk(ev_ms):.1f} | {sum(r[4] for r in rows) / k:.3f} |")
    print(f"| CP-SAT | {dev(cp_ms):.2f} | {at_bk(cp_ms):.1f} | {sum(r[6] for r in rows) / k:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
