"""How evolve scales with the problem: generated problems of 100 to 10,000 facts, every stage timed.

For each size a problem is generated (``evolve generate``'s generator: layered facts, several
producers per fact, decoy tools, tools whose scope the run does not grant, ``max_parallel`` and
a capacity-1 ``gpu`` resource) and saved as YAML, as ``evolve generate --out`` writes it. Then,
in a fresh Python process per size (so each size's peak memory is its own):

* ``load``: :func:`evolve.load_problem` of the YAML file (parse, strict reading, reachability);
* ``compile``: :func:`~evolve.model.compiled.compile_problem` and the tool-choice tables;
* ``greedy``: the greedy earliest-finish producer choice, decoded to a :class:`Plan`;
* ``score/s x tasks``: decodes and schedules per second of the compiled kernel the local search
  spends its time in (one decode + serial schedule of the greedy choice), times its tasks:
  flat across sizes when one schedule costs time linear in the plan's size;

and, in another fresh process, the default ``evolve run FILE --seed 1`` (all cores, report
written), timed on the wall (and in CPU seconds, its workers included: steadier than the wall
on a shared machine) and read back from its ``summary.json``: the search seconds, the
best plan's tasks, plans scored per search second (each child carries its local search of up to
1,650 schedules) and that rate times the tasks. Peak RSS is the largest process's (``wait4``).
Numba's kernels are compiled into its cache by a warm-up run first, outside any clock. Usage::

    python benchmarks/scale.py                            # 100 300 1000 3000 10000 facts (~3 min)
    python benchmarks/scale.py --facts 3000 --no-run      # the stages only
    python benchmarks/scale.py --facts 3000 --jobs 1      # the run on one core
    python benchmarks/scale.py --profile 3000             # cProfile of load..greedy and the run
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

FACTS_PER_TOOL = 0.51
"""About how many facts the generator makes per tool (the count printed is exact)."""


def stage_times(path: Path) -> dict[str, Any]:
    """The stages of one problem file in this process (run in a child: see :func:`main`)."""
    import resource

    import numpy as np

    from evolve import load_problem
    from evolve.model.compiled import compile_problem
    from evolve.search import toolchoice_kernels as k
    from evolve.search.toolchoice import ToolChoice, kernel_tables

    began = time.perf_counter()
    problem = load_problem(path)
    loaded = time.perf_counter()
    compiled = compile_problem(problem)
    tables = kernel_tables(compiled)
    compiled_at = time.perf_counter()
    search = ToolChoice(problem)  # compiles again: the greedy is timed on its own below
    seeded_from = time.perf_counter()
    plan = search.plan_of(search.greedy("earliest_finish"))
    seeded = time.perf_counter()
    assert plan is not None
    facts = len(compiled.facts)
    nt = len(compiled.tools)
    scratch = [np.empty(nt, dtype=np.int64) for _ in range(3)]
    choice = search.greedy("earliest_finish")
    k.score(tables, choice, *scratch)
    rounds, t0 = 0, time.perf_counter()
    while rounds < 20 or time.perf_counter() - t0 < 1.0:
        k.score(tables, choice, *scratch)
        rounds += 1
    per_score = (time.perf_counter() - t0) / rounds
    return {
        "facts": facts, "tools": nt, "load": loaded - began, "compile": compiled_at - loaded,
        "greedy": seeded - seeded_from, "greedy_tasks": len(plan.tasks),
        "scores_per_s": 1.0 / per_score,
        "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def run_default(path: Path, seed: int, out: Path, profile: Path | None = None,
                jobs: int | None = None) -> dict[str, Any]:
    """``evolve run path --seed seed`` in a child process: wall seconds, peak RSS, its summary."""
    cmd = [sys.executable, *(["-m", "cProfile", "-o", str(profile)] if profile else []),
           "-m", "evolve", "run", str(path), "--seed", str(seed), "--out", str(out), "--force",
           *(["--jobs", str(jobs)] if jobs is not None else [])]
    began = time.perf_counter()
    child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - began
    child.returncode = os.waitstatus_to_exitcode(status)
    err = child.stderr.read().decode() if child.stderr else ""
    if child.returncode != 0:
        raise SystemExit(f"evolve run {path} failed ({child.returncode}): {err[-2000:]}")
    summary = json.loads((out / "summary.json").read_text())
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss_mb": usage.ru_maxrss / 1024,
            "search": summary["seconds"],
            "tasks": summary["best"]["tasks"], "evaluations": summary["evaluations"],
            "makespan": summary["best"]["makespan"], "jobs": summary["options"]["jobs"]}


def child(args: list[str], profile: Path | None = None) -> dict[str, Any]:
    """This script's ``--stages`` mode in a fresh interpreter; its JSON answer."""
    pre = ["-m", "cProfile", "-o", str(profile)] if profile else []
    out = subprocess.run([sys.executable, *pre, __file__, *args], check=True, capture_output=True,
                         text=True)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def write_problem(facts: int, seed: int, folder: Path) -> Path:
    from evolve.problems.synthetic import generate_document, save_document

    path = folder / f"facts{facts}-seed{seed}.yaml"
    if not path.exists():
        save_document(generate_document(max(4, round(facts / FACTS_PER_TOOL)), seed), path)
    return path


def show_profile(path: Path, title: str) -> None:
    import pstats

    print(f"--- {title} (cumulative, top 30) ---")
    pstats.Stats(str(path)).sort_stats("cumulative").print_stats(30)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--facts", type=int, nargs="*", default=[100, 300, 1000, 3000, 10000])
    ap.add_argument("--seed", type=int, default=0, help="the generator's seed")
    ap.add_argument("--run-seed", type=int, default=1, help="evolve run --seed")
    ap.add_argument("--no-run", action="store_true", help="time the stages only")
    ap.add_argument("--jobs", type=int, default=None, help="evolve run --jobs (default: its own)")
    ap.add_argument("--profile", type=int, default=None, metavar="FACTS",
                    help="cProfile the stages and the run at this size instead")
    ap.add_argument("--dir", type=Path, default=None, help="keep the problems here (default: temp)")
    ap.add_argument("--stages", type=Path, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.stages is not None:
        print(json.dumps(stage_times(args.stages)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.dir or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        warm = write_problem(100, args.seed, folder)
        child(["--stages", str(warm)])  # numba's cache filled, outside any clock
        run_default(warm, args.run_seed, Path(tmp) / "warm")
        if args.profile is not None:
            path = write_problem(args.profile, args.seed, folder)
            child(["--stages", str(path)], profile=Path(tmp) / "stages.prof")
            show_profile(Path(tmp) / "stages.prof", f"stages, {args.profile} facts")
            run_default(path, args.run_seed, Path(tmp) / "run", profile=Path(tmp) / "run.prof",
                        jobs=args.jobs)
            show_profile(Path(tmp) / "run.prof", f"evolve run, {args.profile} facts")
            return
        jobs = f" --jobs {args.jobs}" if args.jobs is not None else ""
        print(f"generator seed {args.seed}, evolve run --seed {args.run_seed}{jobs}, "
              f"{os.cpu_count()} cores; seconds on the wall of this machine")
        head = (f"{'facts':>6} {'tools':>6} {'load s':>7} {'compile s':>9} {'greedy s':>8} "
                f"{'score/s x tasks':>15} {'stages MB':>9}")
        if not args.no_run:
            head += (f" | {'run search s':>12} {'run wall s':>10} {'run CPU s':>9} {'run MB':>7} "
                     f"{'tasks':>6} {'plans/s':>8} {'plans/s x tasks':>15}")
        print(head)
        for facts in args.facts:
            path = write_problem(facts, args.seed, folder)
            st = child(["--stages", str(path)])
            line = (f"{st['facts']:>6} {st['tools']:>6} {st['load']:>7.2f} {st['compile']:>9.3f} "
                    f"{st['greedy']:>8.3f} {st['scores_per_s'] * st['greedy_tasks']:>15,.0f} "
                    f"{st['rss_mb']:>9.0f}")
            if not args.no_run:
                run = run_default(path, args.run_seed, Path(tmp) / f"run{facts}", jobs=args.jobs)
                rate = run["evaluations"] / run["search"]
                line += (f" | {run['search']:>12.2f} {run['wall']:>10.2f} {run['cpu']:>9.2f} "
                         f"{run['rss_mb']:>7.0f} {run['tasks']:>6} {rate:>8.2f} "
                         f"{rate * run['tasks']:>15,.0f}")
            print(line, flush=True)


if __name__ == "__main__":
    main()
