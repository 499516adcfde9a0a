"""Problem families and the one door for problem files, whatever their format.

A YAML or JSON file is an agent-plan problem (:mod:`evolve.model.files`), or an
HTN domain when it has an ``htn`` section (:mod:`evolve.problems.htn`); a
PSPLIB ``.sm`` or Patterson ``.rcp`` file is a scheduling instance read as a
fixed-structure problem (:mod:`evolve.problems.rcpsp`).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from evolve.model.collector import collector_paused
from evolve.model.errors import InfeasibleProblem
from evolve.model.feasibility import unreachable_criteria
from evolve.model.files import problem_from_dict, read_document
from evolve.model.plan import Plan
from evolve.model.problem import Problem
from evolve.problems.htn.pihtn import from_pihtn, is_pihtn_document
from evolve.problems.htn.problem import htn_problem_from_dict
from evolve.problems.htn.reader import is_htn_document
from evolve.problems.rcpsp.operators import ACTIVITY_LIST
from evolve.problems.rcpsp.problem import RCPSP_FORMATS, load_rcpsp_problem
from evolve.search.operators import STRUCTURAL, OperatorSet
from evolve.search.toolchoice import KICK_WEIGHT, ToolChoice


def load_problem(path: str | Path) -> Problem:
    """Read a problem file: YAML or JSON (an HTN domain in evolve's form or pi-htn's), or a
    PSPLIB ``.sm`` / Patterson ``.rcp`` instance.

    A catalog problem whose criteria no plan can reach is refused here
    (:class:`~evolve.model.errors.InfeasibleProblem`, naming each and why), not
    after a search that could only fail."""
    # read with the cyclic collector held back: see evolve.model.collector
    with collector_paused():
        if Path(path).suffix in RCPSP_FORMATS:
            return load_rcpsp_problem(path)
        doc = read_document(path)
        if is_pihtn_document(doc):
            doc = from_pihtn(doc, str(path))
        if is_htn_document(doc):
            return htn_problem_from_dict(doc, str(path))
        problem = problem_from_dict(doc, str(path))
        unreachable = unreachable_criteria(problem)
        if unreachable:
            raise InfeasibleProblem(f"{path}: no plan can meet the criteria: {'; '.join(unreachable)}")
        return problem


def is_fixed_structure(problem: Problem) -> bool:
    """Whether only the priority can change: a template holds the tasks and no criteria ask for more."""
    return isinstance(problem.template, Plan) and not problem.criteria


def default_operators(problem: Problem) -> OperatorSet:
    """Activity-list operators for fixed task sets (e.g. PSPLIB instances); for plans built from
    the catalog, the structural operators plus the tool-choice search (greedy initial plans, a
    kick in producer space, every child hill-climbed on the compiled kernel); structural ones
    alone for problems with a template."""
    if is_fixed_structure(problem):
        return ACTIVITY_LIST
    if not ToolChoice.applies_to(problem):
        return STRUCTURAL
    choice = ToolChoice(problem)
    return replace(STRUCTURAL, mutations=(*STRUCTURAL.mutations, (choice.kick, KICK_WEIGHT)),
                   initial=choice.greedy_initial, improve=choice.improve, warm=choice.warm,
                   kind=choice.kind)


__all__ = ["default_operators", "is_fixed_structure", "load_problem"]
