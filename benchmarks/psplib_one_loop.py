"""Would the PSPLIB bi-population GA lose anything by running as a representation of the one loop?

The one loop (:class:`evolve.search.loop.Search`) already searches activity lists whenever a
PSPLIB instance is given operators: :data:`~evolve.problems.rcpsp.operators.ACTIVITY_LIST`
(one- and two-point crossover, a shift mutation, random lists first) is that representation.
This runs it and the specialised :class:`~evolve.problems.rcpsp.algorithm.ActivityListGA` on the
same instances, seed and evaluation budget (for the one loop an evaluation is a plan scored,
i.e. one schedule; for the bi-population GA a generated schedule, as the literature counts),
and prints the makespans, their mean gap to the best known and the wall time.

    python benchmarks/psplib_one_loop.py --instances 10 --budget 5000
"""

from __future__ import annotations

import argparse
import csv
import tempfile
import time

from evolve import SearchOptions, load_problem, run_search
from evolve.problems.rcpsp.instance import psplib_dir
from evolve.problems.rcpsp.operators import ACTIVITY_LIST


def best_known() -> dict[str, int]:
    with (psplib_dir() / "best_known_j30.csv").open() as stream:
        rows = list(csv.DictReader(stream))
    return {r["instance"]: int(r["best_known"]) for r in rows}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--instances", type=int, default=10)
    parser.add_argument("--budget", type=int, default=5000)
    parser.add_argument("--population", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--names", nargs="*", help="j30 instances (default: j30X_1, every fourth X)")
    args = parser.parse_args()
    known = best_known()
    names = args.names or [f"j30{p}_1" for p in range(1, 49, 4)][: args.instances]
    rows = []
    for name in names:
        problem = load_problem(psplib_dir() / "j30" / f"{name}.sm")
        got: dict[str, tuple[float, float, int]] = {}
        for label, operators in (("bpga", None), ("one-loop", ACTIVITY_LIST)):
            sizes = {} if operators is None else {"population": args.population, "keep": args.population // 2}
            # the one loop scores each distinct plan once: a converged population makes copies that
            # cost no evaluation, so a generation bound (each a full brood) ends it too
            generations = args.budget if operators is None else 2 * args.budget // (args.population // 2)
            options = SearchOptions(seed=args.seed, jobs=1, generations=generations,
                                    max_evaluations=args.budget, **sizes)
            began = time.perf_counter()
            with tempfile.TemporaryDirectory() as out:
                outcome = run_search(problem, options=options, out_dir=out, operators=operators)
            got[label] = (outcome.result.best.evaluation.values["makespan"], time.perf_counter() - began,
                          outcome.summary["evaluations"])
        rows.append((name, known.get(name), got))
        print(name, known.get(name), {k: (v[0], round(v[1], 1), v[2]) for k, v in got.items()}, flush=True)
    for label in ("bpga", "one-loop"):
        gaps = [100 * (g[label][0] - k) / k for _, k, g in rows if k]
        optimal = sum(1 for _, k, g in rows if k and g[label][0] <= k)
        print(f"{label}: mean gap to best known {sum(gaps) / len(gaps):.2f}%, at best known "
              f"{optimal}/{len(rows)}, seconds {sum(g[label][1] for _, _, g in rows):.1f}, "
              f"evaluations {sum(g[label][2] for _, _, g in rows)}")


if __name__ == "__main__":
    main()
