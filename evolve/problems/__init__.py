"""Problem families and the one door for problem files, whatever their format.

A YAML or JSON file is an agent-plan problem (:mod:`evolve.model.files`); a
PSPLIB ``.sm`` or Patterson ``.rcp`` file is a scheduling instance read as a
fixed-structure problem (:mod:`evolve.problems.rcpsp`).
"""

from __future__ import annotations

from pathlib import Path

from evolve.model.files import read_problem
from evolve.model.plan import Plan
from evolve.model.problem import Problem
from evolve.problems.rcpsp.operators import ACTIVITY_LIST
from evolve.problems.rcpsp.problem import RCPSP_FORMATS, load_rcpsp_problem
from evolve.search.operators import STRUCTURAL, OperatorSet


def load_problem(path: str | Path) -> Problem:
    """Read a problem file: YAML or JSON, or a PSPLIB ``.sm`` / Patterson ``.rcp`` instance."""
    if Path(path).suffix in RCPSP_FORMATS:
        return load_rcpsp_problem(path)
    return read_problem(path)


def is_fixed_structure(problem: Problem) -> bool:
    """Whether only the priority can change: a template holds the tasks and no criteria ask for more."""
    return isinstance(problem.template, Plan) and not problem.criteria


def default_operators(problem: Problem) -> OperatorSet:
    """Activity-list operators for fixed task sets (e.g. PSPLIB instances), structural ones otherwise."""
    return ACTIVITY_LIST if is_fixed_structure(problem) else STRUCTURAL


__all__ = ["default_operators", "is_fixed_structure", "load_problem"]
