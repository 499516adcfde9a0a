"""The lifted search alone (:mod:`evolve.problems.htn.lifted`, what ``evolve run`` tries before
grounding) on the competition's total-order track: which problems it solves within its work
budget, how long it takes, and, as the baseline measured in the same run, how long grounding the
same problem takes (what a first plan waits for without it).

For each domain folder of DIR, the problems by size, every k-th (``--every k``, as
``benchmarks/ipc_htn.py`` picks them). Per problem, in this process: the lifted search with
``--work`` bindings (default ``evolve.defaults.HDDL_LIFTED_WORK``), its plan checked by
:mod:`evolve.problems.htn.hddl_verify`; with ``--ground``, then the grounding of the same pair
(:func:`evolve.problems.htn.hddl.read_hddl`), for the ratio lifted seconds / grounding seconds
on the problems the lifted search solved. Per domain: solved of chosen and the median seconds;
then the totals. A plan the verifier refuses is printed as INVALID (and counted). Usage::

    python benchmarks/ipc_lifted.py ../shared/data/ipc2020-htn/total-order --every 3 --ground
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from ipc_htn import problems

from evolve import defaults
from evolve.problems.htn.hddl import read_hddl
from evolve.problems.htn.hddl_syntax import read_files
from evolve.problems.htn.hddl_verify import verify
from evolve.problems.htn.lifted import LiftedPlanner


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("track", type=Path)
    parser.add_argument("--every", type=int, default=3)
    parser.add_argument("--work", type=int, default=defaults.HDDL_LIFTED_WORK)
    parser.add_argument("--ground", action="store_true", help="also time grounding (the baseline)")
    args = parser.parse_args()
    solved = chosen = invalid = 0
    times: list[float] = []
    ratios: list[float] = []
    for folder in sorted(p for p in args.track.iterdir() if p.is_dir()):
        row: list[str] = []
        mine: list[float] = []
        picked = problems(folder, args.every, None)
        for domain_file, problem_file in picked:
            parsed = read_files(domain_file, problem_file)
            began = time.perf_counter()
            found = LiftedPlanner(*parsed).plan(args.work)
            seconds = time.perf_counter() - began
            chosen += 1
            if found is None:
                row.append(f"{problem_file.stem[:14]} -")
                continue
            if verify(*parsed, found.ipc).faults:
                invalid += 1
                row.append(f"{problem_file.stem[:14]} INVALID")
                continue
            solved += 1
            mine.append(seconds)
            text = f"{problem_file.stem[:14]} {len(found.actions)}/{seconds:.2f}s"
            if args.ground:
                began = time.perf_counter()
                read_hddl(domain_file, problem_file)
                grounding = time.perf_counter() - began
                ratios.append(seconds / max(grounding, 1e-3))
                text += f"/g{grounding:.2f}s"
            row.append(text)
        times += mine
        median = f"{statistics.median(mine):.2f} s" if mine else "-"
        print(f"{folder.name[:24]:<25}{len(mine):>3}/{len(picked):<3} median {median:>7}  " + "  ".join(row),
              flush=True)
    print(f"\nsolved {solved} of {chosen} within {args.work} bindings, invalid plans {invalid}; "
          f"median seconds {statistics.median(times) if times else float('nan'):.3f}")
    if ratios:
        print(f"lifted seconds / grounding seconds on the solved: median {statistics.median(ratios):.3f} "
              f"over {len(ratios)}")


if __name__ == "__main__":
    main()
