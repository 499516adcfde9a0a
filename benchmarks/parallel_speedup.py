"""Do workers pay for themselves? `evolve run` at --jobs 1 against --jobs 2, in the same run.

For generated problems of about 300, 1,000 and 3,000 facts (the generator of
``plan_vs_cpsat.py``: layered facts, several producers per fact, decoy tools,
ungranted scopes, ``max_parallel`` and capacity-limited resources), the default
search (population 6, best 3 survive, 12 generations) runs as a user runs it:
``evolve run P --seed S --jobs J``, each in a fresh process, so starting the
workers is part of the figure. Printed per problem: the search seconds (from
``summary.json``: the loop, pool start included) and the wall seconds of the
command, for one job, two loky workers and a Dask ``LocalCluster`` of two
workers (whose start, before the search, shows in the wall time only); the
speedup of each against one job; and whether the events and the best plan are
byte-identical to the one-job run (they must be). The median over ``--repeat``
runs is printed; the configurations take turns (one run of each, then again), so that a
machine whose speed drifts during the benchmark slows them alike.

Last, the ceiling of this machine for such work: the annealing kernel alone (most of a
child's development on these problems, no Python around it, GIL released) on four greedy
choices of the largest problem, one after the other and then in two threads. What threads
cannot beat is that figure, less the search's own serial Python. And what a generation's three
children cost when all three run at once on the two cores: three annealings in three threads
against one after the other (2x if the two cores were shared evenly, 1.5x if one thread kept a
core and the other two shared the second, which the operating system's scheduler tends to do),
and how much more CPU they take than one at a time (threads that share a core evict each
other's caches).

What runs side by side is each child's development: the tool-choice climb, the
priority search and the evaluation of what they made (see
``evolve/search/develop.py``). At ``--jobs 2`` on loky it runs in two threads of
the search's process (the kernels release the GIL); on Dask in the cluster's two
worker processes, while the search's own process develops a share too.

    python benchmarks/parallel_speedup.py [--facts 300,1000,3000] [--seed 1] [--repeat 3] [--no-dask]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from plan_vs_cpsat import count_facts, document_for  # noqa: E402


def run_once(problem: Path, seed: int, jobs: int, backend: str) -> tuple[float, float, str, str]:
    """(search seconds, wall seconds, events digest, best plan digest) of one `evolve run`."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        command = [sys.executable, "-m", "evolve", "run", str(problem), "--seed", str(seed),
                   "--jobs", str(jobs), "--backend", backend, "--out", str(out)]
        began = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True)
        wall = time.perf_counter() - began
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
        summary = json.loads((out / "summary.json").read_text())
        events = hashlib.sha256((out / "events.jsonl").read_bytes()).hexdigest()
        best = json.loads((out / "best.json").read_text())
        best.pop("schedule", None)
        plan = hashlib.sha256(json.dumps(best, sort_keys=True).encode()).hexdigest()
    return float(summary["seconds"]), wall, events, plan


def kernel_ceiling(problem: Path, seed: int, count: int = 4, repeat: int = 5
                   ) -> tuple[float, float, float, float]:
    """On greedy choices of ``problem`` (the kernel compiled before any clock): the seconds of
    ``count`` work annealings one after the other and in two threads; then what a generation's
    three children cost on two cores when all three run at once: the first three annealings in
    three threads against one after the other, as the median ratio over ``repeat`` tries, and
    their summed thread CPU seconds against their CPU one at a time (mean ratio)."""
    from evolve.model.problem_file import read_problem
    from evolve.search.toolchoice import ToolChoice

    choice = ToolChoice(read_problem(problem))

    def anneal(index: int) -> float:
        rng = np.random.default_rng([seed, index])
        cpu = time.thread_time()
        choice.anneal(choice.greedy("least_work", rng, 0.3), rng)
        return time.thread_time() - cpu

    choice.anneal(choice.greedy("least_work"), np.random.default_rng(seed), evals=10)
    began = time.perf_counter()
    for index in range(count):
        anneal(index)
    serial = time.perf_counter() - began
    with ThreadPoolExecutor(2) as threads:
        began = time.perf_counter()
        list(threads.map(anneal, range(count)))
        paired = time.perf_counter() - began
    speedups, inflation = [], []
    for _ in range(repeat):  # each try against the same three one at a time just before it
        began = time.perf_counter()
        alone = [anneal(index) for index in range(3)]
        one_by_one = time.perf_counter() - began
        with ThreadPoolExecutor(3) as threads:
            began = time.perf_counter()
            cpu = sum(threads.map(anneal, range(3)))
            speedups.append(one_by_one / (time.perf_counter() - began))
            inflation.append(cpu / sum(alone))
    return serial, paired, statistics.median(speedups), statistics.mean(inflation)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", default="300,1000,3000", help="problem sizes, comma-separated")
    parser.add_argument("--seed", type=int, default=1, help="the generator's and the search's seed")
    parser.add_argument("--repeat", type=int, default=3, help="runs per configuration (median printed)")
    parser.add_argument("--no-dask", action="store_true", help="skip the Dask LocalCluster runs")
    args = parser.parse_args()
    configs = [(1, "loky"), (2, "loky")]
    if not args.no_dask:
        try:
            import dask.distributed  # noqa: F401
            configs.append((2, "dask"))
        except ImportError:
            print("dask is not installed: its runs are skipped (pip install 'evolve[dask]')")
    with tempfile.TemporaryDirectory() as tmp:
        warm = Path(tmp) / "warm.yaml"
        warm.write_text(yaml.safe_dump(document_for(100, args.seed), sort_keys=False))
        run_once(warm, args.seed, 1, "loky")  # the kernels are compiled and cached before any clock
        print(f"evolve run P --seed {args.seed} (defaults), median of {args.repeat}; "
              f"speedup = one job's search seconds / this configuration's")
        print(f"{'facts':>6} {'tools':>6} {'config':<10} {'search s':>9} {'wall s':>7} "
              f"{'speedup':>8} {'wall x':>7}  identical")
        for facts in (int(f) for f in args.facts.split(",")):
            doc = document_for(facts, args.seed)
            path = Path(tmp) / f"facts{facts}.yaml"
            path.write_text(yaml.safe_dump(doc, sort_keys=False))
            base: tuple[float, float, str, str] | None = None
            rounds = [[run_once(path, args.seed, jobs, backend) for jobs, backend in configs]
                      for _ in range(args.repeat)]
            for index, (jobs, backend) in enumerate(configs):
                runs = [measured[index] for measured in rounds]
                search = statistics.median(r[0] for r in runs)
                wall = statistics.median(r[1] for r in runs)
                digests = {(r[2], r[3]) for r in runs}
                if base is None:
                    base = (search, wall, runs[0][2], runs[0][3])
                same = "yes" if digests == {(base[2], base[3])} else "NO: RESULTS DIFFER"
                label = f"{jobs} {backend}"
                print(f"{count_facts(doc):>6} {len(doc['tools']):>6} {label:<10} {search:>9.2f} "
                      f"{wall:>7.2f} {base[0] / search:>7.2f}x {base[1] / wall:>6.2f}x  {same}",
                      flush=True)
        largest = max(int(f) for f in args.facts.split(","))
        serial, threaded, three, cpu = kernel_ceiling(Path(tmp) / f"facts{largest}.yaml", args.seed)
        print(f"ceiling ({largest} facts): the annealing kernel alone, 4 runs, one after the other "
              f"{serial:.2f} s, in two threads {threaded:.2f} s: {serial / threaded:.2f}x")
        print(f"three at once ({largest} facts): 3 runs in three threads, {three:.2f}x of one after "
              f"the other (2x if the cores were shared evenly, 1.5x if one thread kept a core), "
              f"their CPU {cpu - 1:+.0%} against one at a time")


if __name__ == "__main__":
    main()
