"""A/B of search settings on a fixed PSPLIB sample, all variants in the same session.

Each variant is a set of :class:`~evolve.problems.rcpsp.search.GaParams` overrides;
``base`` is the current default. Every variant runs the same instances, budgets and
seeds, one after the other in this process (``--jobs 1``), so the figures are
comparable; the printed delta is against ``base`` (negative is better). Usage::

    nice -n 19 python benchmarks/psplib_ab.py --set j120 --every 4 --schedules 1000,5000 \\
        --seeds 0,1,2 two_point=crossover:two_point pool1=mate_pool:1
"""

from __future__ import annotations

import argparse
import time
from dataclasses import fields, replace
from typing import Any

from evolve.problems.rcpsp.bench import ordinal, run_psplib_grid
from evolve.problems.rcpsp.search import Crossover, GaParams


def variant(spec: str) -> tuple[str, GaParams]:
    """``name=field:value,field:value`` -> (name, params with those fields set)."""
    name, _, body = spec.partition("=")
    kinds = {f.name: f.type for f in fields(GaParams)}
    p = GaParams()
    for item in filter(None, body.split(",")):
        key, _, raw = item.partition(":")
        if key not in kinds:
            raise SystemExit(f"unknown GaParams field {key!r}")
        kind = str(kinds[key])
        value: Any = (Crossover[raw.upper()] if key == "crossover" else raw == "True" if "bool" in kind
                      else float(raw) if "float" in kind else int(raw) if raw != "None" else None)
        p = replace(p, **{key: value})
    return name, p


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--set", default="j120")
    ap.add_argument("--every", type=int, default=4)
    ap.add_argument("--offset", type=int, default=0)
    ap.add_argument("--schedules", default="1000,5000")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (2 halves the wall time)")
    ap.add_argument("--no-base", action="store_true",
                    help="skip the default (deltas then against the first variant)")
    ap.add_argument("variants", nargs="*")
    args = ap.parse_args()
    budgets = [int(b) for b in args.schedules.split(",")]
    seeds = [int(s) for s in args.seeds.split(",")]
    base: dict[int, float] = {}
    print(f"{args.set}, every {ordinal(args.every)} instance from #{args.offset}, seeds {args.seeds}, "
          f"budgets {args.schedules}")
    runs = [*map(variant, args.variants)]
    if not args.no_base:
        runs.insert(0, ("base", GaParams()))
    for name, params in runs:
        t0 = time.perf_counter()
        res = run_psplib_grid([args.set], budgets=budgets, seeds=seeds, every=args.every,
                              offset=args.offset, params=params, jobs=args.jobs)
        cells = []
        for row in res.rows:
            assert row.schedules is not None
            base.setdefault(row.schedules, row.deviation_pct)
            delta = row.deviation_pct - base[row.schedules]
            cells.append(f"{row.schedules}: {row.deviation_pct:.3f} ({delta:+.3f}"
                         f", seeds {' '.join(f'{d:.2f}' for d in row.per_seed_pct)})")
        print(f"{name:>14} | {' | '.join(cells)} | {time.perf_counter() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    main()
