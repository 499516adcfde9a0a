"""The competition's HTN problems: every domain's N smallest, converted, planned and verified.

For each domain folder of DIR (the IPC 2020 total-order track's layout: a
``domain.hddl``, or a ``<problem>-domain.hddl`` beside each problem), its N
smallest problem files (by size) run in a child process each, under a time
limit: the HDDL pair is read and grounded, the planner's first plan found, its
task graph built and scheduled (what ``evolve run DOMAIN PROBLEM`` does before
the evolutionary search, the garbage collector tuned as it tunes it), and the
plan checked by :mod:`hddl_verify`, which replays it with PDDL semantics, checks
the goal, the decomposition of the initial task network and that interfering
steps are ordered in the task graph.
With ``--run``, ``evolve run DOMAIN PROBLEM`` itself runs too (``--generations``
of the search over method choices; its seconds and exit status are printed, its
plan is not verified here).

Columns: seconds end to end (loading included) and plan length (actions) next
to the competition's best plan length where it is known (the source is
printed; ``-`` where no figure is known here), makespan (unit durations,
steps that do not interfere in parallel). Seconds leave out what a process pays
once, before any problem: the interpreter, the imports and loading the compiled
scheduling kernels (about 1 s here), done in the parent before the children
fork. The summary prints the targets:
zero invalid plans, >= 90 % solved, median under 2 s, each under 20 s. Usage::

    python benchmarks/ipc_htn.py ../shared/data/ipc2020-htn/total-order [--n 3] [--timeout 60]
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import time
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from evolve.cli.htn import hddl_document
from evolve.cli.main import cli
from evolve.model.collector import settle_for_one_search
from evolve.model.errors import EvolveError
from evolve.model.plan import Plan, Task
from evolve.model.problem import Problem, Tool
from evolve.problems.htn import Decomposition, Planner, htn_problem_from_dict
from evolve.problems.htn.hddl_plans import action_graph, ipc_plan
from evolve.problems.htn.hddl_syntax import read_files
from evolve.problems.htn.hddl_verify import check_graph, verify
from evolve.problems.htn.heuristic import warm_up
from evolve.problems.htn.problem import to_plan
from evolve.scheduling import schedule

BEST_KNOWN = {("Blocksworld-GTOHP", "p02.hddl"): (35, "issue 26 (the competition's plans)")}
"""The competition's best plan lengths this benchmark knows, with where each comes from."""


def problems(folder: Path, n: int) -> list[tuple[Path, Path]]:
    files = [f for f in folder.glob("*.hddl") if not f.name.endswith("domain.hddl")]
    out = []
    for f in sorted(files, key=lambda f: (f.stat().st_size, f.name))[:n]:
        own = f.with_name(f.stem + "-domain.hddl")
        out.append((own if own.exists() else folder / "domain.hddl", f))
    return out


def measure(domain_file: Path, problem_file: Path, run: bool, generations: int) -> dict[str, Any]:
    """One problem, end to end (in a child process)."""
    row: dict[str, Any] = {"converted": False, "solved": False, "valid": None, "why": ""}
    began = time.perf_counter()
    try:
        problem = htn_problem_from_dict(hddl_document(str(domain_file), str(problem_file), None, None),
                                        str(problem_file))
    except EvolveError as exc:
        row.update(why=str(exc).split(": ", 1)[-1][:90], seconds=time.perf_counter() - began)
        return row
    row.update(converted=True, ground=time.perf_counter() - began,
               operators=len(problem.htn().operators), methods=len(problem.htn().methods))
    settle_for_one_search()  # as `evolve run` does once its problem is read
    outcome = Planner(problem.htn()).plan()
    if not isinstance(outcome, Decomposition):
        row.update(why=str(outcome)[:90], seconds=time.perf_counter() - began, nodes=outcome.nodes)
        return row
    plan = to_plan(problem.htn(), outcome)
    makespan = schedule(problem, plan).makespan
    row.update(solved=True, seconds=time.perf_counter() - began, nodes=outcome.nodes,
               length=len(outcome.steps) - 1, makespan=makespan)
    verdict = verify(*read_files(domain_file, problem_file), ipc_plan(problem.htn(), outcome))
    faults = verdict.faults + check_graph(verdict, *action_graph(plan))
    row.update(valid=not faults, why="; ".join(faults)[:90])
    if run:
        row.update(run_command(domain_file, problem_file, generations))
    return row


def run_command(domain_file: Path, problem_file: Path, generations: int) -> dict[str, Any]:
    """``evolve run DOMAIN PROBLEM`` as a user types it; its seconds and exit status."""
    began = time.perf_counter()
    out = Path(f"/tmp/ipc_htn_run_{problem_file.parent.name}_{problem_file.stem}")
    result = CliRunner().invoke(cli, ["run", str(domain_file), str(problem_file), "--generations",
                                      str(generations), "--jobs", "1", "--out", str(out), "--force",
                                      "--no-report", "--json"])
    return {"run_seconds": time.perf_counter() - began, "run_exit": result.exit_code}


def child(queue: Any, domain_file: Path, problem_file: Path, run: bool, generations: int) -> None:
    try:
        queue.put(measure(domain_file, problem_file, run, generations))
    except Exception as exc:  # a bug: reported in the row, the benchmark goes on
        queue.put({"converted": False, "solved": False, "valid": None,
                   "why": f"crash {type(exc).__name__}: {exc}"[:90]})


def timed(domain_file: Path, problem_file: Path, timeout: float, run: bool,
          generations: int) -> dict[str, Any]:
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    process = context.Process(target=child, args=(queue, domain_file, problem_file, run, generations))
    began = time.perf_counter()
    process.start()
    try:
        row: dict[str, Any] = queue.get(timeout=timeout)
    except Exception:
        row = {"converted": False, "solved": False, "valid": None, "why": f"timeout {timeout:g} s"}
    process.join(1)
    if process.is_alive():
        process.kill()
        process.join()
    row.setdefault("seconds", time.perf_counter() - began)
    return row


def fmt(value: Any, spec: str = "") -> str:
    return "-" if value is None else format(value, spec)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dir", type=Path)
    parser.add_argument("--n", type=int, default=3, help="Smallest problems per domain.")
    parser.add_argument("--timeout", type=float, default=60.0, help="Seconds per problem.")
    parser.add_argument("--domains", nargs="*", default=None, help="Only these domain folders.")
    parser.add_argument("--run", action="store_true", help="Also time `evolve run DOMAIN PROBLEM`.")
    parser.add_argument("--generations", type=int, default=2, help="Generations of --run.")
    args = parser.parse_args()
    folders = sorted(p for p in args.dir.iterdir() if p.is_dir() and (args.domains is None
                                                                       or p.name in args.domains))
    schedule(Problem(tools={"t": Tool("t", 1.0)}), Plan(tasks=(Task(id="t1", tool="t"),)))  # kernels
    warm_up()
    rows = []
    print(f"{'domain':<26}{'problem':<26}{'conv':>5}{'solved':>7}{'valid':>6}{'sec':>7}{'len':>5}"
          f"{'best':>5}{'span':>6}{'nodes':>8}{'run s':>7}  note")
    for folder in folders:
        for domain_file, problem_file in problems(folder, args.n):
            row = timed(domain_file, problem_file, args.timeout, args.run, args.generations)
            best = BEST_KNOWN.get((folder.name, problem_file.name))
            row.update(domain=folder.name, problem=problem_file.name, best=best)
            rows.append(row)
            note = row["why"] or (f"best from {best[1]}" if best else "")
            valid = {True: "y", False: "N", None: "-"}[row["valid"]]
            print(f"{folder.name[:25]:<26}{problem_file.name[:25]:<26}{'y' if row['converted'] else 'n':>5}"
                  f"{'y' if row['solved'] else 'n':>7}{valid:>6}"
                  f"{row['seconds']:>7.2f}{fmt(row.get('length')):>5}{fmt(best and best[0]):>5}"
                  f"{fmt(row.get('makespan'), 'g'):>6}{fmt(row.get('nodes')):>8}"
                  f"{fmt(row.get('run_seconds'), '.2f'):>7}  {note}", flush=True)
    solved = [r for r in rows if r["solved"]]
    invalid = [r for r in rows if r["valid"] is False]
    seconds = [r["seconds"] for r in rows]
    worst = max(seconds) if seconds else 0.0
    median = statistics.median(seconds) if seconds else 0.0
    share = len(solved) / len(rows) if rows else 0.0
    print(f"\nproblems {len(rows)}  converted {sum(r['converted'] for r in rows)}  solved {len(solved)} "
          f"({100 * share:.0f} %)  invalid plans {len(invalid)}")
    print(f"seconds end to end: median {median:.2f}  max {worst:.2f}  (unsolved count at their time)")
    known = [r for r in solved if r["best"]]
    print(f"plan length vs the competition's best: {sum(r['length'] <= r['best'][0] for r in known)} of "
          f"{len(known)} known no longer")
    print("targets: invalid plans 0 " + ("met" if not invalid else "MISSED") +
          f"; solved >= 90 % {'met' if share >= 0.9 else 'MISSED'}"
          f"; median < 2 s {'met' if median < 2 else 'MISSED'}"
          f"; each < 20 s {'met' if worst < 20 else 'MISSED'}")
    if args.run:
        runs = [r for r in rows if "run_seconds" in r]
        print(f"evolve run: {sum(r['run_exit'] == 0 for r in runs)} of {len(runs)} exit 0, median "
              f"{statistics.median([r['run_seconds'] for r in runs]) if runs else 0:.2f} s")


if __name__ == "__main__":
    main()
