"""The fitness contract: what every objective, built-in or plugin, looks like to the engine.

A fitness function is a plain module-level function ``fn(problem, plan, context)
-> float`` marked with :func:`fitness`. The decorator only attaches metadata and
returns the function itself, so the function pickles by reference and reaches
workers of every joblib backend as the resolved callable.
"""

from __future__ import annotations

import math
import numbers
import re
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Literal, Protocol

from evolve.model.errors import EvolveError
from evolve.model.plan import Plan
from evolve.model.problem import Problem
from evolve.model.validate import PlanError, validate
from evolve.scheduling import Schedule, schedule

Direction = Literal["min", "max"]


class Context:
    """What the engine computes once per candidate and every fitness function may reuse.

    Both members are computed lazily, on first use, so objectives that need no
    schedule do not pay for one. One context is shared by every objective scored
    on a plan, so a fitness function must treat it, like the problem and the
    plan, as read-only (:func:`evolve.fitness.testing.check_fitness` checks this).
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
        """Run the function and check its answer, so a broken plugin is named, not guessed at.

        Any exception the function raises comes back as a :class:`FitnessError`
        that names the objective, where it came from and the line that failed:
        the evaluator turns it into one failed candidate, and a person reading
        that failure should not have to guess which plugin it was.
        """
        try:
            value = self.fn(problem, plan, context)
        except FitnessError:
            raise
        except Exception as exc:
            where = traceback.extract_tb(exc.__traceback__)[-1]
            raise FitnessError(
                f"{self.label} raised {type(exc).__name__}: {exc} "
                f"(at {where.filename}:{where.lineno})"
            ) from exc
        return self.check(value)

    @property
    def label(self) -> str:
        """How errors name this objective: its name and, for a plugin, where it was found."""
        if self.source == "builtin":
            return f"fitness {self.name!r}"
        return f"fitness {self.name!r} ({self.source})"

    def check(self, value: object) -> float:
        """``value`` as a float, or a :class:`FitnessError` saying what is wrong with it.

        Any real number is accepted (``numpy.int64`` included, ``bool`` not: a
        bool is almost always a forgotten comparison, not a score).
        """
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise FitnessError(f"{self.label} returned {type(value).__name__}, not a number")
        number = float(value)
        if not math.isfinite(number):
            raise FitnessError(f"{self.label} returned {number}, not a finite number")
        spec = self.spec
        if (spec.low is not None and number < spec.low) or (spec.high is not None and number > spec.high):
            raise FitnessError(
                f"{self.label} returned {number:g}, outside its declared range "
                f"[{spec.low}, {spec.high}]"
            )
        return number


class FitnessError(EvolveError):
    """A fitness function misbehaved (wrong type, not finite, out of range, failed to load)."""


NAME = re.compile(r"[A-Za-z_][\w.\-]*")
"""What a fitness name may look like: it is a JSON key, a CLI word and never a ``module:function``."""


def fitness(name: str | None = None, *, direction: Direction, low: float | None = None,
            high: float | None = None) -> Callable[[FitnessFn], FitnessFn]:
    """Mark ``fn`` as a fitness function. The function is returned unchanged (it still pickles).

    ``low`` and ``high`` declare the range of the values it returns (either may
    be left open); the engine rejects a value outside it, so a plugin that drifts
    out of its own contract fails loudly instead of skewing a weighted sum.
    """
    if direction not in ("min", "max"):
        raise ValueError(f"direction must be 'min' or 'max', got {direction!r}")
    for bound in (low, high):
        if bound is not None and not math.isfinite(bound):
            raise ValueError(f"range bounds must be finite numbers or None, got {bound!r}")
    if low is not None and high is not None and low > high:
        raise ValueError(f"empty range: low={low} is above high={high}")
    if name is not None and not NAME.fullmatch(name):
        raise ValueError(f"fitness name {name!r} must be a word (letters, digits, _ . -)")

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
