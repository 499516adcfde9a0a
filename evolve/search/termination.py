"""When a search stops: generations, evaluations, wall time, a target value, a bound, patience,
or a request from outside (Ctrl-C).

Terminations are checked at generation boundaries, so a run always ends on a whole
generation with a checkpoint to match.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # annotations only: the ranking's module loads the objectives' kernels
    from evolve.search.ranking import Ranking


class Progress(Protocol):
    """What the termination rules read from a running search."""

    generation: int
    evaluations: int
    seconds: float
    stale: int
    ranking: Ranking
    """How candidates compare: a target reads each objective's direction from it."""

    def best_values(self) -> Mapping[str, float]: ...
    def best_feasible(self) -> bool: ...
    def at_bound(self) -> str | None: ...


class Termination(Protocol):
    """What :func:`evolve.search.algorithm.minimize` asks after every generation."""

    def reason(self, run: Progress) -> str | None:
        """Why the run should stop now, or ``None`` to go on."""
        ...


@dataclass(frozen=True)
class Budget:
    """Every limit of a run; ``None`` (or an empty target) means that limit is off."""

    generations: int
    max_evaluations: int | None = None
    max_seconds: float | None = None
    target: Mapping[str, float] = field(default_factory=dict)
    patience: int | None = None

    def reason(self, run: Progress) -> str | None:
        """Why the run should stop now, or ``None`` to go on."""
        if run.generation >= self.generations:
            return f"generations: {self.generations} done"
        if self.max_evaluations is not None and run.evaluations >= self.max_evaluations:
            return f"max-evaluations: {run.evaluations} >= {self.max_evaluations}"
        if self.max_seconds is not None and run.seconds >= self.max_seconds:
            return f"max-seconds: {run.seconds:.1f}s >= {self.max_seconds:g}s"
        if self.target and run.best_feasible() and all(
            reached(run.best_values().get(name), goal, run.ranking.direction(name))
            for name, goal in self.target.items()
        ):
            shown = ", ".join(f"{k}={v:g}" for k, v in self.target.items())
            return f"target: {shown} reached"
        bound = run.at_bound()
        if bound is not None:
            return f"bound: {bound}"
        if self.patience is not None and run.stale >= self.patience:
            return f"patience: no improvement in {run.stale} generations"
        return None


def reached(value: float | None, goal: float, direction: str) -> bool:
    if value is None:
        return False
    return value <= goal if direction == "min" else value >= goal


@dataclass(frozen=True)
class Interruptible:
    """``budget``, or sooner once ``requested`` gives a reason: a stop asked for from outside
    the search (a first Ctrl-C) ends the run at a generation's end like a budget, with that
    generation checkpointed and the result written, so the same command resumes it and ends as
    if it had never stopped (a budget is not part of a checkpoint's identity)."""

    budget: Termination
    requested: Callable[[], str | None]

    def reason(self, run: Progress) -> str | None:
        return self.budget.reason(run) or self.requested()
