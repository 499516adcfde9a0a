"""An HDDL problem's first plan before it is grounded: the lifted search's, checked by the verifier.

``evolve run DOMAIN.hddl PROBLEM.hddl`` asks this before it grounds (a third of a second to
many seconds on the competition's problems) or loads the engine (a second of imports): a plan
found here is on disk, in the competition's format, as soon as it is found. It is used only once
:mod:`~evolve.problems.htn.hddl_verify`, which shares nothing with the search that made it,
accepts it; the grounded search then starts from the same plan (its ``steps``, the ground
actions' names as the grounder spells them).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evolve import defaults
from evolve.problems.htn.hddl import ground_name
from evolve.problems.htn.hddl_syntax import read_files
from evolve.problems.htn.hddl_verify import verify
from evolve.problems.htn.lifted import LiftedPlanner


@dataclass(frozen=True)
class FirstPlan:
    """A verified plan: its ground actions (the grounder's names) and the competition's format."""

    steps: tuple[str, ...]
    ipc: str
    work: int


def first_plan(domain_file: str | Path, problem_file: str | Path,
               work: int = defaults.HDDL_LIFTED_WORK) -> FirstPlan | None:
    """The lifted search's plan within ``work`` bindings, if it finds one and the verifier
    accepts it; else ``None`` (grounding will say what a malformed file lacks)."""
    domain, problem = read_files(domain_file, problem_file)
    try:
        found = LiftedPlanner(domain, problem).plan(work)
    except RecursionError:  # a formula nested past Python's stack: the grounder's to refuse
        return None
    if found is None or not verify(domain, problem, found.ipc).valid:
        return None
    return FirstPlan(tuple(ground_name(a.name, a.args) for a in found.actions), found.ipc, found.work)
