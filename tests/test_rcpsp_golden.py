"""Golden figures of the RCPSP search: fixed instances, seeds, budgets and settings give exactly
the makespans, schedule counts and schedules stored in ``tests/data/rcpsp_golden.json``.

This replaces the old ``LEGACY`` settings (which kept the switches of lost experiments alive so
old figures could be reproduced): any change to the random stream or to what the search does
shows here as a changed figure. A change that is meant to change results rewrites the file, in
the same commit, with::

    PYTHONPATH=. python tests/test_rcpsp_golden.py --write

and says in its message what moved (the PSPLIB tables are then re-measured; see
docs/psplib-seeds.md). The cases run in about two seconds.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from evolve.problems.rcpsp.instance import load_instance, psplib_dir
from evolve.problems.rcpsp.search import Crossover, GaParams, solve

DATA = psplib_dir()
GOLDEN = Path(__file__).resolve().parent / "data" / "rcpsp_golden.json"

#: Named settings: the defaults and the live alternatives, so every kernel branch is pinned.
SETTINGS: dict[str, GaParams] = {
    "default": GaParams(),
    "two-point, plain tournament, no recycling": GaParams(crossover=Crossover.TWO_POINT, mate_pool=1,
                                                          recycle=0.0),
    "frequent restarts, half near the elite, polishing": GaParams(restart_after=2, restart_near=0.5,
                                                                  polish_slack=5),
}
#: (instance, schedules, seed, settings) of every stored figure.
CASES: list[tuple[str, int, int, str]] = [
    *[(name, 1000, seed, "default") for name in ("j301_1", "j3010_3", "j6011_2", "j1201_1", "j12031_1")
      for seed in (0, 1)],
    ("j1201_1", 5000, 0, "default"),
    ("j6011_2", 1000, 0, "two-point, plain tournament, no recycling"),
    ("j1201_1", 1000, 0, "two-point, plain tournament, no recycling"),
    ("j3010_3", 1000, 0, "frequent restarts, half near the elite, polishing"),
    ("j1201_1", 1000, 0, "frequent restarts, half near the elite, polishing"),
]


def path_of(name: str) -> Path:
    folder = "j120" if name.startswith("j120") else name[:3]
    return DATA / folder / f"{name}.sm"


def figures(name: str, schedules: int, seed: int, settings: str) -> dict[str, Any]:
    """What one case stores: the makespan, the schedules used and a digest of the start times."""
    res = solve(load_instance(path_of(name)), schedules=schedules, seed=seed, params=SETTINGS[settings])
    return {"instance": name, "schedules": schedules, "seed": seed, "settings": settings,
            "makespan": res.makespan, "schedules_used": res.schedules_used,
            "starts_sha256": hashlib.sha256(res.starts.astype("<i8").tobytes()).hexdigest()[:16]}


def stored() -> dict[tuple[str, int, int, str], dict[str, Any]]:
    rows = json.loads(GOLDEN.read_text())
    return {(r["instance"], r["schedules"], r["seed"], r["settings"]): r for r in rows}


@pytest.mark.skipif(not (DATA / "j120").is_dir(), reason="PSPLIB data not found")
def test_every_case_has_a_stored_figure() -> None:
    assert sorted(stored()) == sorted(CASES)


@pytest.mark.skipif(not (DATA / "j120").is_dir(), reason="PSPLIB data not found")
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}-s{c[2]}-{c[3].split(',')[0]}")
def test_search_reproduces_its_golden_figures(case: tuple[str, int, int, str]) -> None:
    assert figures(*case) == stored()[case]


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        raise SystemExit("usage: python tests/test_rcpsp_golden.py --write")
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text(json.dumps([figures(*c) for c in CASES], indent=1) + "\n")
    print(f"wrote {len(CASES)} cases to {GOLDEN}")
