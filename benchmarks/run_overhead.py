"""What ``evolve run x.sm`` costs beyond the search itself, on a fixed-structure (RCPSP) problem.

Two cases on one PSPLIB instance (default ``j120/j12031_1.sm``), each timed in the same process,
interleaved, ``--repeat`` times (the median is printed):

* ``defaults``: the run at its default options (12 generations, no schedule cap) against the
  bare :class:`~evolve.problems.rcpsp.search.BiPopulationGA` stepped 12 times with no cap
  (the same search: the same makespan is checked);
* ``budget B``: the run with ``max_evaluations=B`` (and generations enough) against
  ``solve(inst, schedules=B)`` (the same search; the same makespan is checked);

each once with the default checkpoint interval and once with a checkpoint after every
generation (``checkpoint_seconds=0``, what every run did before the interval).

"run search" is the search time the run reports (``summary.json`` ``seconds``: the generations,
the scoring of each new best by the engine's evaluator, events and checkpoints between
generations); "run wall" is the whole ``run_search`` call (reading nothing: the problem is loaded
once; it includes writing problem.json, best.json and summary.json and the final checkpoint).
The kernels are loaded first, outside any clock. Usage::

    nice python benchmarks/run_overhead.py [--instance PATH] [--budget 5000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from evolve import SearchOptions, load_problem, run_search
from evolve.defaults import GENERATIONS, SEED
from evolve.problems.rcpsp.instance import load_instance, psplib_dir
from evolve.problems.rcpsp.search import BiPopulationGA, solve
from evolve.problems.rcpsp.warmup import warm_up


def bare_defaults(path: Path) -> tuple[float, int]:
    """The run's default search without the engine: the GA stepped GENERATIONS times."""
    t0 = time.perf_counter()
    ga = BiPopulationGA(load_instance(path), schedules=None, seed=SEED)
    for _ in range(GENERATIONS):
        if ga.done():
            break
        ga.step()
    res = ga.result(0.0)
    return time.perf_counter() - t0, res.makespan


def bare_budget(path: Path, budget: int) -> tuple[float, int]:
    t0 = time.perf_counter()
    res = solve(load_instance(path), schedules=budget, seed=SEED)
    return time.perf_counter() - t0, res.makespan


def in_run(path: Path, options: SearchOptions, folder: Path,
           checkpoint_seconds: float | None = None) -> tuple[float, float, int]:
    """(search seconds the run reports, wall seconds of the whole run_search call, makespan)."""
    problem = load_problem(path)
    t0 = time.perf_counter()
    out = run_search(problem, options=options, out_dir=folder, overwrite=True,
                     checkpoint_seconds=checkpoint_seconds)
    wall = time.perf_counter() - t0
    return float(out.summary["seconds"]), wall, int(out.summary["best"]["makespan"])


def measure(name: str, bare: Callable[[], tuple[float, int]], options: SearchOptions, folder: Path,
            repeat: int, checkpoint_seconds: float | None = None) -> None:
    bare_s: list[float] = []
    run_s: list[float] = []
    wall_s: list[float] = []
    for _ in range(repeat):
        seconds, ms_bare = bare()
        search, wall, ms_run = in_run(path_arg, options, folder, checkpoint_seconds)
        if ms_bare != ms_run:
            raise SystemExit(f"{name}: the run found makespan {ms_run}, the bare search {ms_bare}: "
                             "not the same search")
        bare_s.append(seconds)
        run_s.append(search)
        wall_s.append(wall)
    b, r, w = (statistics.median(x) for x in (bare_s, run_s, wall_s))
    size = (folder / "checkpoint.json").stat().st_size
    print(f"{name:>26}: bare {b:.3f} s | run search {r:.3f} s = {r / b:.2f}x | run wall {w:.3f} s = "
          f"{w / b:.2f}x | makespan {ms_run} | checkpoint {size / 1e6:.2f} MB (median of {repeat})")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--instance", type=Path, default=psplib_dir() / "j120" / "j12031_1.sm")
    ap.add_argument("--budget", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    path_arg: Path = args.instance
    warm_up()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "run"
        # one untimed run first: imports, the evaluator's first call
        in_run(path_arg, SearchOptions(jobs=1), folder)
        print(f"{path_arg.name}; seed {SEED}; one worker")
        budget = SearchOptions(jobs=1, generations=1_000_000, max_evaluations=args.budget)
        for label, every in (("", None), (", every gen.", 0.0)):
            measure("defaults" + label, lambda: bare_defaults(path_arg), SearchOptions(jobs=1), folder,
                    args.repeat, every)
            measure(f"budget {args.budget}{label}", lambda: bare_budget(path_arg, args.budget), budget,
                    folder, args.repeat, every)
