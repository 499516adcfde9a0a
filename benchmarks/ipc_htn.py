"""The competition's HTN track: ``evolve run`` on every problem (or every k-th by size), each
plan verified, beside the competition's own results.

For each domain folder of DIR (the IPC 2020 total-order track's layout: a ``domain.hddl``, or a
``<problem>-domain.hddl`` beside each problem), the problems sorted by file size, every k-th
(``--every k``: the 1st, the (k+1)th, ...) or the N smallest (``--n N``). Each one is what a
user types, ``evolve run DOMAIN PROBLEM --jobs 1 --max-seconds T --generations 1000000``, in its
own process on one core, killed (SIGKILL) at T seconds of wall time if it has not ended: the
run is anytime, so its best plan so far is on disk (``best.ipc``, the competition's plan
format). T covers everything (starting Python, reading and grounding, the first plan, the
search over method choices), as the competition's limit did. Printed per problem: the seconds
to the first plan (when ``best.ipc`` first appeared), the final plan's length (actions), the
verdict of :mod:`evolve.problems.htn.hddl_verify` (written apart from the planner: it replays
the actions with PDDL semantics, checks the goal and every decomposition, and that the task
graph in ``best.json`` orders every two interfering steps), and the competition's results
(``results/`` beside DIR, see its ``SOURCE.md``): HyperTensioN's and Lilotane's fastest
seconds and the best length any entrant found.

Per domain: coverage of evolve, and of HyperTensioN and Lilotane counting only their runs
within the same T seconds, and the IPC 2023 quality score (best known length / evolve's
length, the best known including evolve's, so at most 1; 0 when unsolved), summed and as a
mean. The last lines check the issue's targets. ``--jobs N`` runs N problems side by side, each
pinned to a core of its own (the wall limit stays per problem; the machine should be idle
otherwise); ``--log FILE`` appends every result as a JSON line, and a later run with the same
log and time limit takes those rows instead of running them again, so a stopped benchmark
resumes. Usage::

    python benchmarks/ipc_htn.py ../shared/data/ipc2020-htn/total-order --every 3 --timeout 60 \
        --jobs 2 --log ipc60.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evolve.model.errors import EvolveError
from evolve.model.plan_file import load_plan
from evolve.problems.htn.hddl_plans import action_graph
from evolve.problems.htn.hddl_syntax import read_files
from evolve.problems.htn.hddl_verify import check_graph, verify

WARM_UP_SECONDS = 60.0
"""The warm-up run's limit (seconds): enough to compile every kernel on a loaded machine."""
RIVALS = ("HyperTensioN", "Lilotane")
"""The competition's winner and runner-up, whose coverage within the same seconds is printed."""


@dataclass
class Known:
    """One problem's results in the competition: each planner's fastest seconds, and the
    shortest plan any entrant found."""

    seconds: dict[str, float] = field(default_factory=dict)
    best: int | None = None


def competition(results: Path) -> dict[tuple[str, str], Known]:
    """(competition domain folder, problem file) -> its results, from ``ipc2020-instances.txt``
    and ``ipc2020-data.txt`` (see their ``SOURCE.md``); empty when the files are not there."""
    instances, data = results / "ipc2020-instances.txt", results / "ipc2020-data.txt"
    if not instances.exists() or not data.exists():
        return {}
    by_id: dict[int, tuple[str, str]] = {}  # the data file pads the ids with zeros
    for line in instances.read_text().splitlines():
        parts = line.split()
        if len(parts) >= 2 and "/problems/" in parts[1]:
            folder, name = parts[1].split("/problems/")
            by_id[int(parts[0])] = (folder.rsplit("/", 1)[-1], name)
    out: dict[tuple[str, str], Known] = {}
    for line in data.read_text().splitlines():
        parts = line.split()
        if len(parts) < 6 or not parts[1].isdigit() or int(parts[1]) not in by_id:
            continue
        planner, seconds, length = parts[0], float(parts[3]), int(parts[5])
        known = out.setdefault(by_id[int(parts[1])], Known())
        known.seconds[planner] = min(seconds, known.seconds.get(planner, seconds))
        known.best = length if known.best is None else min(known.best, length)
    return out


def lookup(table: dict[tuple[str, str], Known], folder: str, name: str) -> Known | None:
    """The competition's results for our ``folder``/``name`` (our folder names may be longer:
    ``Freecell-Learned-ECAI-16`` for the competition's ``Freecell-Learned``)."""
    for (theirs, problem), known in table.items():
        if problem == name and (folder == theirs or folder.startswith(theirs + "-")):
            return known
    return None


def problems(folder: Path, every: int | None, n: int | None) -> list[tuple[Path, Path]]:
    """The folder's problems by size (then name): every ``every``-th, or the ``n`` smallest."""
    files = sorted((f for f in folder.glob("*.hddl") if not f.name.endswith("domain.hddl")),
                   key=lambda f: (f.stat().st_size, f.name))
    chosen = files[::every] if every else files[:n]
    out = []
    for f in chosen:
        own = f.with_name(f.stem + "-domain.hddl")
        out.append((own if own.exists() else folder / "domain.hddl", f))
    return out


def evolve_run(domain_file: Path, problem_file: Path, seconds: float, generations: int,
               out: Path) -> list[str]:
    """What a user types: ``evolve run`` on one core, ``seconds`` of search, into ``out``."""
    return [sys.executable, "-m", "evolve", "run", str(domain_file), str(problem_file), "--jobs", "1",
            "--max-seconds", f"{seconds:g}", "--generations", str(generations), "--out", str(out),
            "--force", "--no-report"]


def run(domain_file: Path, problem_file: Path, timeout: float, workdir: Path,
        core: int | None = None) -> dict[str, Any]:
    """``evolve run`` on one problem, killed at ``timeout`` seconds; its plan verified. ``core``
    pins the run to that processor, so that runs side by side (``--jobs``) have one core each."""
    out = workdir / f"{problem_file.parent.name}-{problem_file.stem}"
    command = [*evolve_run(domain_file, problem_file, timeout, 1_000_000, out), "--json"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}
    pin = None if core is None else (lambda: os.sched_setaffinity(0, {core}))
    errors = workdir / f"{out.name}.stderr"
    began = time.perf_counter()
    with errors.open("wb") as sink:
        child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=sink, env=env,
                                 start_new_session=True, preexec_fn=pin)
    first: float | None = None
    # os.wait4, not Popen.poll: the rusage of this child alone, with other runs side by side
    pid, status, usage = os.wait4(child.pid, os.WNOHANG)
    while pid == 0 and time.perf_counter() - began < timeout:
        if first is None and (out / "best.ipc").exists():
            first = time.perf_counter() - began
        time.sleep(0.02)
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)
    killed = pid == 0
    if killed:
        os.killpg(child.pid, signal.SIGKILL)
        pid, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - began
    cpu = usage.ru_utime + usage.ru_stime
    stderr = errors.read_text(errors="replace")
    row: dict[str, Any] = {"seconds": seconds, "cpu": cpu, "killed": killed, "exit": child.returncode,
                           "first": first, "valid": None, "length": None, "why": ""}
    if not (out / "best.ipc").exists():
        lines = [line for line in stderr.splitlines() if line.strip()]
        row["why"] = ("timeout" if killed else lines[-1] if lines else f"exit {child.returncode}")[:100]
        return row
    if first is None:  # written between the last look and the end
        first = row["first"] = seconds
    text = (out / "best.ipc").read_text()
    verdict = verify(*read_files(domain_file, problem_file), text)
    faults = list(verdict.faults)
    note = ""
    if not (out / "best.json").exists():
        # the lifted search's plan, written before grounding, which did not end in time
        note = "no best.json (grounding unfinished)"
    else:
        try:
            actions, deps = action_graph(load_plan(out / "best.json"))
            if len(actions) == len(verdict.actions):  # the same plan (a kill between the two writes)
                faults += check_graph(verdict, actions, deps)
        except (EvolveError, OSError, ValueError, KeyError, TypeError) as exc:
            faults.append(f"best.json unreadable: {exc}")
    row.update(valid=not faults, length=len(verdict.actions), why=("; ".join(faults) or note)[:100])
    return row


def fmt(value: Any, spec: str = "") -> str:
    return "-" if value is None else format(value, spec)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dir", type=Path)
    parser.add_argument("--every", type=int, default=None, help="Every k-th problem by size.")
    parser.add_argument("--n", type=int, default=None, help="The N smallest problems (default 3).")
    parser.add_argument("--timeout", type=float, default=60.0, help="Wall seconds per problem.")
    parser.add_argument("--domains", nargs="*", default=None, help="Only these domain folders.")
    parser.add_argument("--results", type=Path, default=None,
                        help="The competition's results folder (default: DIR/../results).")
    parser.add_argument("--jobs", type=int, default=1,
                        help="Problems run side by side, each pinned to its own core (default 1).")
    parser.add_argument("--log", type=Path, default=None,
                        help="A JSON-lines file every result is appended to; problems already in "
                             "it (same timeout) are not run again, so a stopped benchmark resumes.")
    args = parser.parse_args()
    if args.every is None and args.n is None:
        args.n = 3
    table = competition(args.results or args.dir.parent / "results")
    folders = sorted(p for p in args.dir.iterdir() if p.is_dir() and (args.domains is None
                                                                       or p.name in args.domains))
    limit = args.timeout
    done = logged(args.log, limit)
    print(f"{limit:g} s wall per problem, one core each, {args.jobs} side by side (cpu s: the run's "
          f"processor seconds, less than the wall's on a loaded machine); results: "
          f"{'the competition (IPC 2020)' if table else 'none found'}"
          + (f"; {len(done)} taken from {args.log}" if done else ""))
    print(f"{'domain':<24}{'problem':<26}{'first s':>8}{'cpu s':>7}{'len':>6}{'valid':>6}{'best':>6}"
          f"{'score':>6}{'HyperT s':>9}{'Lilot s':>8}  note")
    todo = [(folder, d, p) for folder in folders for d, p in problems(folder, args.every, args.n)]
    cores = sorted(os.sched_getaffinity(0))
    free = list(cores[:args.jobs]) if args.jobs > 1 else []
    lock = threading.Lock()

    def one(item: tuple[Path, Path, Path], work: Path) -> dict[str, Any]:
        folder, domain_file, problem_file = item
        if (folder.name, problem_file.name) in done:
            row = done[folder.name, problem_file.name]
        else:
            with lock:
                core = free.pop() if free else None
            try:
                row = run(domain_file, problem_file, limit, work, core)
            finally:
                if core is not None:
                    with lock:
                        free.append(core)
            row.update(domain=folder.name, problem=problem_file.name, timeout=limit)
            if args.log:
                with lock, args.log.open("a") as log:
                    log.write(json.dumps(row) + "\n")
        known = lookup(table, folder.name, problem_file.name)
        best = known.best if known else None
        if row["length"] is not None and row["valid"]:
            top = row["length"] if best is None else min(best, row["length"])
            row["score"] = top / row["length"] if row["length"] else 1.0
        else:
            row["score"] = 0.0
        row.update(best=best, rivals={r: (known.seconds.get(r) if known else None) for r in RIVALS})
        valid = {True: "y", False: "N", None: "-"}[row["valid"]]
        with lock:
            print(f"{folder.name[:23]:<24}{problem_file.name[:25]:<26}{fmt(row['first'], '.2f'):>8}"
                  f"{row['cpu']:>7.1f}{fmt(row['length']):>6}{valid:>6}{fmt(best):>6}{row['score']:>6.2f}"
                  f"{fmt(row['rivals']['HyperTensioN'], '.2f'):>9}"
                  f"{fmt(row['rivals']['Lilotane'], '.2f'):>8}"
                  f"  {row['why']}", flush=True)
        return row

    with tempfile.TemporaryDirectory(prefix="ipc_htn_") as work, \
            ThreadPoolExecutor(max(1, args.jobs)) as pool:
        if todo and len(done) < len(todo):
            warm_up(todo[0][1], todo[0][2], Path(work))
        rows = list(pool.map(lambda item: one(item, Path(work)), todo))
    summarize(rows, limit)


def warm_up(domain_file: Path, problem_file: Path, work: Path) -> None:
    """One untimed run before the timed ones, so that numba's on-disk cache of evolve's kernels
    is built (a checkout's first run compiles them, about 20 s, which would be charged to
    whichever problems ran first); the competition's planners were compiled ahead of time too."""
    began = time.perf_counter()
    done = subprocess.run(evolve_run(domain_file, problem_file, 1, 1, work / "warm-up"),
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          timeout=WARM_UP_SECONDS, check=False)
    print(f"warm-up (untimed, not counted): {problem_file.name}, exit {done.returncode}, "
          f"{time.perf_counter() - began:.1f} s", flush=True)


def logged(log: Path | None, limit: float) -> dict[tuple[str, str], dict[str, Any]]:
    """The rows of an earlier run's ``--log`` at the same time limit, by (domain, problem)."""
    if log is None or not log.exists():
        return {}
    rows = (json.loads(line) for line in log.read_text().splitlines() if line.strip())
    return {(r["domain"], r["problem"]): r for r in rows if r.get("timeout") == limit}


def summarize(rows: list[dict[str, Any]], limit: float) -> None:
    """Coverage and quality per domain, then the issue's targets."""
    def solved(r: dict[str, Any]) -> bool:
        return bool(r["valid"])

    def rival(r: dict[str, Any], name: str) -> bool:
        seconds = r["rivals"][name]
        return seconds is not None and seconds <= limit

    print(f"\n{'domain':<26}{'problems':>9}{'evolve':>7}{'HyperT':>7}{'Lilot':>7}{'quality':>9}{'mean':>6}")
    for name in dict.fromkeys(r["domain"] for r in rows):
        mine = [r for r in rows if r["domain"] == name]
        quality = sum(r["score"] for r in mine)
        scored = [r["score"] for r in mine if solved(r)]
        print(f"{name[:25]:<26}{len(mine):>9}{sum(map(solved, mine)):>7}"
              f"{sum(rival(r, 'HyperTensioN') for r in mine):>7}{sum(rival(r, 'Lilotane') for r in mine):>7}"
              f"{quality:>9.2f}{fmt(statistics.mean(scored) if scored else None, '.2f'):>6}")
    ours = [r for r in rows if solved(r)]
    hyper = sum(rival(r, "HyperTensioN") for r in rows)
    lilo = sum(rival(r, "Lilotane") for r in rows)
    invalid = [r for r in rows if r["valid"] is False]
    scores = [r["score"] for r in ours]
    shorter = [r for r in ours if r["best"] is not None and r["length"] < r["best"]]
    both = [(r["first"], r["rivals"]["HyperTensioN"]) for r in ours if rival(r, "HyperTensioN")]
    ratio = statistics.median(a / max(b, 0.01) for a, b in both) if both else None
    print(f"\nproblems {len(rows)}  solved: evolve {len(ours)}, HyperTensioN {hyper}, Lilotane {lilo} "
          f"(theirs: their competition runs within {limit:g} s)  invalid plans {len(invalid)}")
    mean = statistics.mean(scores) if scores else None
    print(f"quality (IPC 2023 score) over evolve's solved: mean {fmt(mean, '.3f')}"
          f", shorter than the best known on {len(shorter)}; total score {sum(r['score'] for r in rows):.2f}")
    print(f"seconds to the first plan where HyperTensioN also solved: median ratio evolve/HyperTensioN "
          f"{fmt(ratio, '.1f')} over {len(both)}")
    print("targets: invalid plans 0 " + ("met" if not invalid else "MISSED")
          + f"; solved >= HyperTensioN {'met' if len(ours) >= hyper else 'MISSED'}"
          + f"; solved > Lilotane {'met' if len(ours) > lilo else 'MISSED'}"
          + f"; mean quality >= 0.97 {'met' if mean is not None and mean >= 0.97 else 'MISSED'}"
          + f"; shorter than best known on >= 1 {'met' if shorter else 'MISSED'}"
          + "; median time within 3x of HyperTensioN "
          + ("met" if ratio is not None and ratio <= 3 else "MISSED"))


if __name__ == "__main__":
    main()
