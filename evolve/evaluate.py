"""Scoring candidates, in this process or across a joblib pool.

Evaluation is a pure function of (problem, plan, fitness functions), so where it
runs never changes the result: that is what makes ``--seed`` reproducible for
any ``--jobs``. A fitness that raises marks only its candidate as failed.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from joblib import Parallel, cpu_count, delayed

from evolve.analysis import covered_criteria
from evolve.plan import Plan
from evolve.problem import Problem
from fitness.base import Context, Fitness


@dataclass(frozen=True)
class Evaluation:
    """The verdict on one plan: fitness values, feasibility, validator errors, or the failure."""

    values: dict[str, float] = field(default_factory=dict)
    feasible: bool = False
    errors: tuple[str, ...] = ()
    failed: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"values": self.values, "feasible": self.feasible}
        if self.errors:
            data["errors"] = list(self.errors)
        if self.failed:
            data["failed"] = self.failed
        return data


def evaluate_plan(problem: Problem, plan: Plan, fitnesses: Sequence[Fitness]) -> Evaluation:
    """Score one plan; any exception becomes a failed evaluation carrying the error."""
    context = Context(problem, plan)
    try:
        errors = context.errors
        feasible = not errors and len(covered_criteria(problem, plan, errors)) == len(problem.criteria)
        values = {f.name: f(problem, plan, context) for f in fitnesses}
    except Exception as exc:
        where = traceback.extract_tb(exc.__traceback__)[-1]
        return Evaluation(failed=f"{type(exc).__name__}: {exc} (at {where.filename}:{where.lineno})")
    return Evaluation(values=values, feasible=feasible, errors=tuple(str(e) for e in errors))


def evaluate_batch(problem: Problem, plans: Sequence[Plan], fitnesses: Sequence[Fitness]) -> list[Evaluation]:
    """The unit of work sent to a worker: many plans per call, so dispatch cost is amortised."""
    return [evaluate_plan(problem, plan, fitnesses) for plan in plans]


class Evaluator:
    """Evaluates lists of plans, keeping one joblib pool open for the whole run.

    Work is sent in one batch per worker. When the measured cost of a batch is
    below ``min_parallel_seconds`` the plans are scored in this process instead,
    since shipping them would cost more than it saves.
    """

    def __init__(self, problem: Problem, fitnesses: Sequence[Fitness], *, jobs: int | None = None,
                 backend: str = "loky", min_parallel_seconds: float = 0.02) -> None:
        self.problem = problem
        self.fitnesses = list(fitnesses)
        self.jobs = resolve_jobs(jobs)
        self.backend = backend
        self.min_parallel_seconds = min_parallel_seconds
        self.seconds_per_plan: float | None = None
        self.evaluations = 0
        self.parallel: Parallel | None = None

    def __enter__(self) -> Evaluator:
        if self.jobs > 1:
            self.parallel = Parallel(n_jobs=self.jobs, backend=self.backend)
            self.parallel.__enter__()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self.parallel is not None:
            self.parallel.__exit__(kind, exc, tb)
            self.parallel = None

    def evaluate(self, plans: Sequence[Plan]) -> list[Evaluation]:
        """Evaluations of ``plans``, in the same order."""
        if not plans:
            return []
        began = time.perf_counter()
        if self.should_parallelise(len(plans)):
            assert self.parallel is not None
            chunks = split(list(plans), self.jobs)
            results = self.parallel(
                delayed(evaluate_batch)(self.problem, chunk, self.fitnesses) for chunk in chunks
            )
            out = [ev for chunk in results for ev in chunk]
            per_plan = (time.perf_counter() - began) * self.jobs / len(plans)
        else:
            out = evaluate_batch(self.problem, plans, self.fitnesses)
            per_plan = (time.perf_counter() - began) / len(plans)
        self.seconds_per_plan = per_plan
        self.evaluations += len(plans)
        return out

    def should_parallelise(self, count: int) -> bool:
        if self.parallel is None or count < 2:
            return False
        if self.seconds_per_plan is None:
            return False  # measure once in-process before deciding
        return self.seconds_per_plan * count >= self.min_parallel_seconds


def resolve_jobs(jobs: int | None) -> int:
    """``None`` or 0 means every core; negative counts back from it, as in joblib."""
    cores = cpu_count()
    if not jobs:
        return cores
    if jobs < 0:
        return max(1, cores + 1 + jobs)
    return jobs


def split(items: list[Plan], parts: int) -> list[list[Plan]]:
    """``items`` cut into at most ``parts`` contiguous chunks of near-equal size."""
    parts = max(1, min(parts, len(items)))
    size, extra = divmod(len(items), parts)
    chunks, begin = [], 0
    for i in range(parts):
        end = begin + size + (1 if i < extra else 0)
        chunks.append(items[begin:end])
        begin = end
    return chunks
