"""Scoring one plan: every objective on one shared context, every failure caught.

Evaluation is a pure function of (problem, plan, fitness functions), so where it
runs never changes the result. An exception, ``sys.exit`` or a hang past the
time limit in a fitness function ends in a failed :class:`Evaluation` that
carries the error, never in a lost run.
"""

from __future__ import annotations

import signal
import threading
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, ClassVar

from evolve.fitness.base import Fitness
from evolve.fitness.compiled import CompiledContext, covered_count
from evolve.model.plan import Plan
from evolve.model.problem import Problem


@dataclass(frozen=True)
class Evaluation:
    """The verdict on one plan: fitness values, feasibility, validator errors, or the failure."""

    CHECKPOINT_IMMUTABLE: ClassVar[bool] = True
    """Never changed once made (nor its values), as :attr:`Candidate.CHECKPOINT_IMMUTABLE`."""

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


class EvaluationTimeout(BaseException):
    """Raised inside an evaluation that ran past its time limit.

    A ``BaseException`` so that a fitness function's own ``except Exception``
    cannot swallow it.
    """


@contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Interrupt the code inside after ``seconds`` with :class:`EvaluationTimeout`.

    Uses ``SIGALRM``, which stops the evaluation itself rather than abandoning a
    thread that runs on; it needs the main thread of a process, which is where
    joblib's process workers (and the in-process path) run evaluations.
    """
    if seconds is None or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: FrameType | None) -> None:
        raise EvaluationTimeout(f"timed out after {seconds:g}s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def evaluate_plan(problem: Problem, plan: Plan, fitnesses: Sequence[Fitness],
                  timeout: float | None = None) -> Evaluation:
    """Score one plan; any exception, ``sys.exit`` or timeout becomes a failed evaluation."""
    context = CompiledContext(problem, plan)
    try:
        with time_limit(timeout):
            errors = context.errors  # the validator runs only for a plan with errors (see the context)
            feasible = (not errors and covered_count(problem, plan, context) == len(problem.criteria)
                        and not problem.goal_unmet(plan))
            values = {f.name: f(problem, plan, context) for f in fitnesses}
    except EvaluationTimeout as exc:
        return Evaluation(failed=f"EvaluationTimeout: {exc}")
    except (Exception, SystemExit) as exc:
        frames = traceback.extract_tb(exc.__traceback__)
        where = f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""
        return Evaluation(failed=f"{type(exc).__name__}: {exc}{where}")
    return Evaluation(values=values, feasible=feasible, errors=tuple(str(e) for e in errors))
