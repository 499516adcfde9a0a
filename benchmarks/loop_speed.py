"""Evaluations per second of the search loop: a small and a large problem, serial and parallel.

Measures the whole loop (breeding, hashing, ranking, evaluating), not evaluation
alone, because that is what a user waits for: a pool that makes evaluation faster
but the loop slower would be a regression this script must show. Both settings of
a problem run in the same process, one after the other, so the ratio compares like
with like on the same machine load.

    python benchmarks/loop_speed.py                 # refund.yaml and a generated 200-tool problem
    python benchmarks/loop_speed.py --generations 40 --population 400 --workers 2

Each setting runs the same generations from the same seed, so both do the same work; the
settings alternate and the best of ``--repeats`` runs is kept, as this machine is noisy.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from evolve.fitness.builtin import DEFAULT_OBJECTIVES
from evolve.fitness.registry import resolve_all
from evolve.model.problem import Problem
from evolve.problems import load_problem
from evolve.problems.synthetic import generate_problem
from evolve.run.evaluator import Evaluator, split
from evolve.search.chaining import construct
from evolve.search.loop import Search
from evolve.search.operators import STRUCTURAL
from evolve.search.options import SearchOptions
from evolve.search.ranking import Ranking

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Measure:
    """One case: how many distinct plans were scored in how long."""

    evaluations: int
    generations: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.evaluations / self.seconds if self.seconds > 0 else 0.0


def measure(problem: Problem, *, jobs: int, population: int, keep: int, generations: int,
            seed: int) -> Measure:
    """Run the real loop for ``generations`` and time it.

    The pool is started and warmed up (imports, the problem read once per worker)
    before the clock starts: a run pays that once, and a few-second benchmark
    would otherwise mostly measure process start-up. Same seed, same generations:
    both settings do exactly the same work, so their times compare directly.
    """
    fitnesses = resolve_all(DEFAULT_OBJECTIVES)
    options = SearchOptions(population=population, keep=keep, generations=generations, seed=seed, jobs=jobs)
    with Evaluator(problem, fitnesses, jobs=jobs) as evaluator:
        if jobs > 1:
            rng = np.random.default_rng(seed)
            evaluator.run_chunks(split([construct(problem, rng) for _ in range(20 * jobs)], jobs))
        search = Search(
            problem, operators=STRUCTURAL, evaluator=evaluator, ranking=Ranking.of(fitnesses), options=options
        )
        began = time.perf_counter()
        result = search.run()
        elapsed = time.perf_counter() - began
    return Measure(evaluations=result.evaluations, generations=search.generation, seconds=elapsed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--generations", type=int, default=25, help="generations of each case")
    parser.add_argument("--repeats", type=int, default=2, help="alternating runs of each setting; best kept")
    parser.add_argument("--population", type=int, default=300)
    parser.add_argument("--keep", type=int, default=60)
    parser.add_argument("--workers", type=int, default=2, help="jobs of the parallel case")
    parser.add_argument("--large-tools", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    problems = [
        ("small", load_problem(ROOT / "examples" / "refund.yaml")),
        ("large", generate_problem(args.large_tools, seed=1)),
    ]
    print(
        f"loop speed: population {args.population}, keep {args.keep}, {args.generations} generations, "
        f"best of {args.repeats} alternating runs, objectives {', '.join(DEFAULT_OBJECTIVES)}"
    )
    print(
        f"{'case':<6} {'problem':<18} {'tools':>5} {'jobs':>4} {'gens':>5} {'evals':>7} "
        f"{'seconds':>8} {'evals/s':>9}"
    )
    for label, problem in problems:
        best: dict[int, Measure] = {}
        for _ in range(args.repeats):
            for jobs in (1, args.workers):
                m = measure(problem, jobs=jobs, population=args.population, keep=args.keep,
                            generations=args.generations, seed=args.seed)
                if jobs not in best or m.seconds < best[jobs].seconds:
                    best[jobs] = m
        for jobs, m in best.items():
            print(
                f"{label:<6} {problem.name[:18]:<18} {len(problem.tools):>5} {jobs:>4} "
                f"{m.generations:>5} {m.evaluations:>7} {m.seconds:>8.2f} {m.rate:>9.1f}"
            )
        ratio = best[1].seconds / best[args.workers].seconds
        print(f"{label:<6} speedup {args.workers} workers / serial: {ratio:.2f}x")


if __name__ == "__main__":
    main()
