"""Problem families and the one door for problem files, whatever their format (re-exported,
lazily, by :mod:`evolve.problems`).

Which algorithm searches a problem is asked of :data:`FAMILIES` in turn
(:func:`family_of`): an HTN domain's decompositions, a PSPLIB-like project's
activity lists, else plans of the catalog (:class:`PlanFamily`); a new family
joins with :func:`register_family`.

A YAML or JSON file is an agent-plan problem (:mod:`evolve.model.problem_file`), or an
HTN domain when it has an ``htn`` section (:mod:`evolve.problems.htn`); a
PSPLIB ``.sm`` or Patterson ``.rcp`` file is a scheduling instance read as a
fixed-structure problem (:mod:`evolve.problems.rcpsp`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from evolve.fitness.base import Fitness
from evolve.model.collector import collector_paused
from evolve.model.documents import read_document
from evolve.model.errors import InfeasibleProblem
from evolve.model.feasibility import unreachable_criteria
from evolve.model.plan import Plan
from evolve.model.problem import Problem
from evolve.model.problem_file import problem_from_dict
from evolve.problems.htn.algorithm import HtnFamily
from evolve.problems.htn.pihtn import from_pihtn, is_pihtn_document
from evolve.problems.htn.problem import htn_problem_from_dict
from evolve.problems.htn.reader import is_htn_document
from evolve.problems.rcpsp.algorithm import ActivityListFamily
from evolve.problems.rcpsp.operators import ACTIVITY_LIST
from evolve.problems.rcpsp.problem import RCPSP_FORMATS, load_rcpsp_problem
from evolve.search.algorithm import EventSink
from evolve.search.develop import Development
from evolve.search.family import BestSink, Family, Request, Workers
from evolve.search.loop import Proposer, Search
from evolve.search.operators import STRUCTURAL, OperatorSet, operator_name
from evolve.search.options import SearchOptions
from evolve.search.ranking import Ranking
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


class PlanFamily:
    """The :class:`~evolve.search.family.Family` of plans of a catalog, the one that claims
    every problem no other family does: the one loop (:class:`~evolve.search.loop.Search`)
    over plans, varied by the request's operators (default: :func:`default_operators`),
    developed and scored in the run's workers."""

    name = "plans"

    def claims(self, request: Request) -> bool:
        return True

    def resolve(self, request: Request) -> Request:
        if request.operators is not None:
            return request
        return replace(request, operators=default_operators(request.problem))

    def identity(self, request: Request) -> str:
        return operator_names(self.operators(request), request.proposer, request.proposer_share)

    def development(self, request: Request) -> Development | None:
        return Development.of(self.operators(request))

    def prepare(self, request: Request, fitnesses: Sequence[Fitness]) -> None:
        pass  # the scheduling kernels, which every family uses, are the run's to load

    def build(self, request: Request, workers: Workers, ranking: Ranking, options: SearchOptions,
              emit: EventSink, on_best: BestSink) -> Search:
        # the best plan is written at the run's end: a generation of plans ends within seconds
        return Search(request.problem, operators=self.operators(request), evaluator=workers,
                      ranking=ranking, options=options, on_event=emit, proposer=request.proposer,
                      proposer_share=request.proposer_share, seeds=request.seeds, developer=workers)

    @staticmethod
    def operators(request: Request) -> OperatorSet:
        return request.operators if request.operators is not None else default_operators(request.problem)


def operator_names(operators: OperatorSet, proposer: Proposer | None, share: float) -> str:
    """The operator mix as text, part of a checkpoint's identity."""
    parts = [f"{operator_name(fn)}:{w:g}" for fn, w in operators.mutations]
    parts += [f"{operator_name(fn)}:{w:g}" for fn, w in operators.crossovers]
    if operators.improve is not None:
        parts.append(f"improve:{operator_name(operators.improve)}")
    parts.append(f"crossover_rate:{operators.crossover_rate:g}")
    if proposer is not None:
        parts.append(f"{proposer.name}:{share:g}")
    return ",".join(parts)


FAMILIES: list[Family] = [HtnFamily(), ActivityListFamily()]
"""The families asked, in order, before the plans of a catalog (which claim the rest)."""


def register_family(family: Family) -> None:
    """Let ``family`` claim problems, asked before those already registered."""
    FAMILIES.insert(0, family)


def family_of(request: Request) -> Family:
    """The family that searches ``request``: the first of :data:`FAMILIES` to claim it, else
    the plans of a catalog."""
    return next((family for family in FAMILIES if family.claims(request)), PlanFamily())
