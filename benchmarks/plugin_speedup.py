"""Parallel speedup of the search loop on 2 workers, against the serial loop in the same run.

Two objectives of known cost (benchmarks/costly.py) are added to the built-in ones:
a cheap one (~50 us) and an expensive one (~10 ms). For each, the same search
(same seed, so the same candidates) runs serially in this process and then with
2 loky workers, isolated (every evaluation in a worker, the default for plugins)
and not isolated (cheap batches fall back to this process). The figures printed
are wall times and speedups; the runs must also give identical results.

    python benchmarks/plugin_speedup.py [--generations 15] [--cheap-generations 60] [--population 120]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from evolve import SearchOptions, load_problem, run_search  # noqa: E402
from fitness import resolve_all  # noqa: E402


def timed(
    problem_path: Path, objective: str, jobs: int, isolate: bool, args: argparse.Namespace
) -> tuple[float, str, int]:
    problem = load_problem(problem_path)
    fitnesses = resolve_all(["validity", "completeness", "makespan", f"costly:{objective}"])
    options = SearchOptions(
        population=args.population,
        keep=args.population // 3,
        generations=args.cheap_generations if objective == "cheap" else args.generations,
        seed=args.seed,
        jobs=jobs,
        isolate=isolate,
    )
    with tempfile.TemporaryDirectory() as out:
        began = time.perf_counter()
        outcome = run_search(problem, options=options, fitnesses=fitnesses, out_dir=out)
        seconds = time.perf_counter() - began
        events = (Path(out) / "events.jsonl").read_text()
    return seconds, events, outcome.result.evaluations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problem", type=Path, default=HERE.parent / "examples" / "refund.yaml")
    parser.add_argument("--generations", type=int, default=15, help="generations of the expensive case")
    parser.add_argument("--cheap-generations", type=int, default=60,
                        help="generations of the cheap case (more, so that it runs for seconds too)")
    parser.add_argument("--population", type=int, default=120)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    print(
        f"problem {args.problem.name}, population {args.population}, keep {args.population // 3}, "
        f"{args.cheap_generations} generations (cheap), {args.generations} (expensive)"
    )
    print(f"{'objective':<10} {'mode':<22} {'evals':>6} {'seconds':>8} {'evals/s':>8} {'speedup':>8}")
    for objective in ("cheap", "expensive"):
        serial, events, evals = timed(args.problem, objective, 1, False, args)
        print(
            f"{objective:<10} {'serial (in-process)':<22} {evals:>6} {serial:>8.2f} "
            f"{evals / serial:>8.0f} {1.0:>8.2f}"
        )
        for isolate in (True, False):
            seconds, other, n = timed(args.problem, objective, 2, isolate, args)
            mode = "2 workers, isolated" if isolate else "2 workers, adaptive"
            same = "" if other == events else "  RESULTS DIFFER"
            print(
                f"{objective:<10} {mode:<22} {n:>6} {seconds:>8.2f} {n / seconds:>8.0f} "
                f"{serial / seconds:>8.2f}{same}"
            )


if __name__ == "__main__":
    main()
