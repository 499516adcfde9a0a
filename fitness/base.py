"""The fitness contract: what every objective, built-in or plugin, looks like to the engine.

A fitness function is a plain module-level function ``fn(problem, plan, context)
-> float`` marked with :func:`fitness`. The decorator only attaches metadata and
returns the function itself, so the function pickles by reference and reaches
workers of every joblib backend as the resolved callable.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Literal, Protocol

from evolve.plan import Plan
from evolve.problem import Problem
from evolve.schedule import Schedule, schedule
from evolve.validate import PlanError, validate

Direction = Literal["min", "max"]


class Context:
    """What the engine computes once per candidate and every fitness function may reuse.

    Both members are computed lazily, on first use, so objectives that need no
    schedule do not pay for one.
    """

    def __init__(self, problem: Problem, plan: Plan) -> None:
        self.problem = problem
        self.plan = plan

    @cached_property
    def errors(self) -> list[PlanError]:
        return validate(self.problem, self.plan)

    @cached_property
    def schedule(self) -> Schedule:
        return schedule(self.problem, self.plan)


FitnessFn = Callable[[Problem, Plan, Context], float]


class Marked(Protocol):
    __fitness__: FitnessSpec

    def __call__(self, problem: Problem, plan: Plan, context: Context) -> float: ...


@dataclass(frozen=True)
class FitnessSpec:
    """A fitness function's metadata: its name, which way is better and its range, if known."""

    name: str
    direction: Direction
    low: float | None = None
    high: float | None = None
    description: str = ""


@dataclass(frozen=True)
class Fitness:
    """A resolved objective: the callable plus its spec and where it was found."""

    fn: FitnessFn
    spec: FitnessSpec
    source: str = "builtin"

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def direction(self) -> Direction:
        return self.spec.direction

    def __call__(self, problem: Problem, plan: Plan, context: Context) -> float:
        """Run the function and check its answer, so a broken plugin is named, not guessed at."""
        value = self.fn(problem, plan, context)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise FitnessError(f"fitness {self.name!r} returned {type(value).__name__}, not a number")
        value = float(value)
        if not math.isfinite(value):
            raise FitnessError(f"fitness {self.name!r} returned {value}, not a finite number")
        spec = self.spec
        if (spec.low is not None and value < spec.low) or (spec.high is not None and value > spec.high):
            raise FitnessError(
                f"fitness {self.name!r} returned {value:g}, outside its declared range "
                f"[{spec.low}, {spec.high}]"
            )
        return value


class FitnessError(Exception):
    """A fitness function misbehaved (wrong type, not finite, out of range, failed to load)."""


def fitness(name: str | None = None, *, direction: Direction, low: float | None = None,
            high: float | None = None) -> Callable[[FitnessFn], FitnessFn]:
    """Mark ``fn`` as a fitness function. The function is returned unchanged (it still pickles)."""
    if direction not in ("min", "max"):
        raise ValueError(f"direction must be 'min' or 'max', got {direction!r}")

    def mark(fn: FitnessFn) -> FitnessFn:
        doc = (fn.__doc__ or "").strip().splitlines()
        spec = FitnessSpec(name or fn.__name__, direction, low, high, doc[0] if doc else "")
        fn.__fitness__ = spec  # type: ignore[attr-defined]
        return fn

    return mark


def as_fitness(fn: Callable[..., float], source: str = "builtin") -> Fitness:
    """Wrap a marked function; an unmarked one is an error, since its direction is unknown."""
    spec = getattr(fn, "__fitness__", None)
    if not isinstance(spec, FitnessSpec):
        name = getattr(fn, "__qualname__", repr(fn))
        raise FitnessError(f"{name} is not marked with @fitness(direction=...)")
    return Fitness(fn=fn, spec=spec, source=source)
