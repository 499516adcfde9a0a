"""Ordering candidates: which objectives count, in which order or with which weights.

By default a failed evaluation ranks last and a feasible plan (valid and
complete) ranks above every infeasible one; among equals the objectives decide,
lexicographically in the order given, or by a weighted sum when weights are set.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from evolve.fitness.base import Direction, Fitness
from evolve.fitness.evaluation import Evaluation
from evolve.model.errors import UsageError


@dataclass(frozen=True)
class Ranking:
    """How evaluations are compared. Lower :meth:`key` is better."""

    objectives: tuple[str, ...]
    directions: tuple[Direction, ...]
    weights: tuple[float, ...] | None = None
    feasible_first: bool = True
    descriptions: tuple[str, ...] = field(default=(), compare=False)
    """One line per objective saying what it measures (for people and prompts; not compared)."""

    @classmethod
    def of(cls, fitnesses: Sequence[Fitness], weights: Sequence[float] | None = None,
           feasible_first: bool = True) -> Ranking:
        if weights is not None and len(weights) != len(fitnesses):
            raise UsageError(f"{len(weights)} weights for {len(fitnesses)} objectives")
        return cls(
            objectives=tuple(f.name for f in fitnesses),
            directions=tuple(f.direction for f in fitnesses),
            weights=None if weights is None else tuple(float(w) for w in weights),
            feasible_first=feasible_first,
            descriptions=tuple(f.spec.description for f in fitnesses),
        )

    def key(self, ev: Evaluation) -> tuple[float, ...]:
        if ev.failed is not None:
            return (1.0,)
        head = (0.0, 0.0 if ev.feasible or not self.feasible_first else 1.0)
        signed = [
            ev.values[name] if d == "min" else -ev.values[name]
            for name, d in zip(self.objectives, self.directions)
        ]
        if self.weights is None:
            return head + tuple(signed)
        return (*head, sum(w * v for w, v in zip(self.weights, signed)))

    def direction(self, name: str) -> Direction:
        """Whether objective ``name`` is minimised or maximised (``min`` for a name not ranked)."""
        return dict(zip(self.objectives, self.directions)).get(name, "min")

    def describe(self) -> str:
        arrows = [f"{n} ({'min' if d == 'min' else 'max'})" for n, d in zip(self.objectives, self.directions)]
        if self.weights is None:
            return "lexicographic: " + " > ".join(arrows)
        return "weighted: " + " + ".join(f"{w:g}*{a}" for w, a in zip(self.weights, arrows))
