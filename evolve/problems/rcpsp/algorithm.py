"""The bi-population activity-list GA as an algorithm of the engine.

``evolve run x.sm`` and any integer RCPSP (see :func:`is_integer_rcpsp`) get the
strongest search there is for them, :class:`~evolve.problems.rcpsp.search.BiPopulationGA`
(the one ``evolve bench psplib`` measures), driven by the same loop, budgets,
checkpoints, events and report as the plan GA. What it counts as an evaluation
is a generated schedule (every SGS decode and justification pass, as the
literature counts them), so ``--max-evaluations 5000`` here is exactly
``solve(inst, schedules=5000)``; it stops by itself at its own lower bound (critical path or
resource energy).

Each generation emits one ``candidate`` event when the best schedule improved:
the new best plan, scored by the run's evaluator (so its fitness values are the
engine's, not the GA's own claim), its parent the previous best.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from evolve.fitness.base import Fitness
from evolve.fitness.evaluation import Evaluation
from evolve.model.patch import diff_plans
from evolve.model.plan import Plan, plan_hash
from evolve.model.problem import Problem
from evolve.problems.rcpsp.operators import with_list
from evolve.problems.rcpsp.problem import instance_of, is_integer_rcpsp
from evolve.problems.rcpsp.search import BiPopulationGA
from evolve.search.algorithm import Candidate, EventSink, SearchResult, generation_end
from evolve.search.develop import Development
from evolve.search.family import BestSink, Request, Workers
from evolve.search.loop import Evaluator
from evolve.search.options import SearchOptions
from evolve.search.ranking import Ranking

OPERATOR = "bpga"
"""How events name the candidates this algorithm makes."""


class ActivityListGA:
    """The engine's :class:`~evolve.search.algorithm.Algorithm` over activity lists."""

    def __init__(self, problem: Problem, *, evaluator: Evaluator, ranking: Ranking,
                 options: SearchOptions, on_event: EventSink | None = None) -> None:
        self.problem = problem
        self.evaluator = evaluator
        self.ranking = ranking
        self.options = options
        self.emit: EventSink = on_event or (lambda event: None)
        self.generation = -1
        self.evaluations = 0
        self.seconds = 0.0
        self.stale = 0
        self.ga: BiPopulationGA | None = None
        self.best: Candidate | None = None
        self.best_ms = -1
        self.serial = 0
        self.history: list[dict[str, Any]] = []

    def core(self) -> BiPopulationGA:
        if self.ga is None:
            raise RuntimeError("the algorithm has not started")
        return self.ga

    def start(self) -> None:
        self.generation = 0
        self.emit({"event": "generation_start", "generation": 0})
        self.ga = BiPopulationGA(instance_of(self.problem), schedules=self.options.max_evaluations,
                                 seed=self.options.seed)
        self.end_generation()

    def step(self) -> None:
        self.generation += 1
        self.emit({"event": "generation_start", "generation": self.generation})
        self.core().step()
        self.end_generation()

    def end_generation(self) -> None:
        ga = self.core()
        # the final decode of the result is one more schedule, counted as solve() counts it
        self.evaluations = ga.used + 1
        self.stale = ga.stale
        if ga.best_ms != self.best_ms:
            self.best_ms = ga.best_ms
            self.best = self.candidate(with_list(self.problem, ga.best_l))
        stats = generation_end(self.generation, [self.current()], self.evaluations, self.ranking)
        self.history.append(stats)
        self.emit(stats)

    def candidate(self, plan: Plan) -> Candidate:
        """Score ``plan`` with the run's evaluator and announce it as this generation's best."""
        evaluation: Evaluation = self.evaluator.evaluate([plan])[0]
        parent = self.best
        made = Candidate(id=f"c{self.serial}", plan=plan, hash=plan_hash(plan), generation=self.generation,
                         evaluation=evaluation, parents=(parent.id,) if parent is not None else (),
                         operator=OPERATOR,
                         patch=diff_plans(parent.plan if parent is not None else Plan(), plan))
        self.serial += 1
        self.emit(made.event(cached=False))
        return made

    def current(self) -> Candidate:
        if self.best is None:
            raise RuntimeError("the algorithm has not started")
        return self.best

    def best_values(self) -> Mapping[str, float]:
        return self.current().evaluation.values

    def best_feasible(self) -> bool:
        return self.current().evaluation.feasible

    def at_bound(self) -> str | None:
        ga = self.core()
        if ga.best_ms <= ga.lb:
            return f"makespan {ga.best_ms} is the lower bound (critical path or resource energy)"
        return None  # an exhausted schedule budget is --max-evaluations' to report

    def state(self) -> dict[str, Any]:
        """A snapshot (see :meth:`~evolve.search.algorithm.Algorithm.state`): the GA's arrays
        and generator copied (:meth:`BiPopulationGA.snapshot_state`), the history too."""
        ga = self.ga.snapshot_state() if self.ga is not None else None
        return {"generation": self.generation, "evaluations": self.evaluations, "seconds": self.seconds,
                "stale": self.stale, "ga": ga, "best": self.best, "best_ms": self.best_ms,
                "serial": self.serial, "history": list(self.history)}

    def restore(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            setattr(self, name, value)

    def result(self, reason: str) -> SearchResult:
        """The GA's final decode (start-sorted best list) as the result, scored."""
        final = self.core().result(self.seconds)
        best = self.current()
        plan = with_list(self.problem, final.activity_list)
        if plan_hash(plan) != best.hash:
            best = replace(best, plan=plan, hash=plan_hash(plan),
                           evaluation=self.evaluator.evaluate([plan])[0])
        return SearchResult([best], self.evaluations, 0, self.history, reason,
                            int(best.evaluation.failed is not None))

    def summary(self) -> dict[str, Any]:
        return {}


class ActivityListFamily:
    """The :class:`~evolve.search.family.Family` of integer RCPSP problems searched by
    :class:`ActivityListGA`: any :func:`is_integer_rcpsp` problem whose caller asks for no
    operators, proposer or seed plans (those are the plan search's)."""

    name = "activity-list"

    def claims(self, request: Request) -> bool:
        return (request.operators is None and request.proposer is None and not request.seeds
                and is_integer_rcpsp(request.problem))

    def resolve(self, request: Request) -> Request:
        return request

    def identity(self, request: Request) -> str:
        return OPERATOR

    def development(self, request: Request) -> Development | None:
        return None

    def prepare(self, request: Request, fitnesses: Sequence[Fitness]) -> None:
        pass  # the bi-population GA's kernels are the scheduling ones, which the run loads

    def build(self, request: Request, workers: Workers, ranking: Ranking, options: SearchOptions,
              emit: EventSink, on_best: BestSink) -> ActivityListGA:
        # its best is written at the run's end (its budget is evaluations, checked as it goes)
        return ActivityListGA(request.problem, evaluator=workers, ranking=ranking, options=options,
                              on_event=emit)
