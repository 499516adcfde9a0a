"""Search options: the single place where every default of the search is set."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from evolve import defaults
from evolve.model.errors import UsageError
from evolve.search.termination import Budget


@dataclass(frozen=True)
class SearchOptions:
    """How a search runs. The command line reads its defaults from here, and so does the API."""

    population: int = defaults.POPULATION
    keep: int = defaults.KEEP
    generations: int = defaults.GENERATIONS
    seed: int = defaults.SEED
    jobs: int | None = None
    backend: str = defaults.BACKEND
    scheduler_address: str | None = None
    eval_timeout: float | None = None
    isolate: bool | None = None
    max_attempts: int = defaults.MAX_ATTEMPTS
    max_evaluations: int | None = None
    max_seconds: float | None = None
    target: Mapping[str, float] = field(default_factory=dict)
    patience: int | None = None

    def __post_init__(self) -> None:
        if self.population < 2:
            raise UsageError(f"population must be at least 2, got {self.population}")
        if not 1 <= self.keep < self.population:
            raise UsageError(f"keep must be between 1 and population-1, got {self.keep}")
        if self.generations < 0:
            raise UsageError(f"generations must be >= 0, got {self.generations}")
        if self.eval_timeout is not None and self.eval_timeout <= 0:
            raise UsageError(f"eval timeout must be > 0 seconds, got {self.eval_timeout}")

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "target": dict(self.target)}

    def budget(self) -> Budget:
        return Budget(generations=self.generations, max_evaluations=self.max_evaluations,
                      max_seconds=self.max_seconds, target=dict(self.target), patience=self.patience)

    def fingerprint(self) -> dict[str, Any]:
        """The options that change results; a checkpoint resumes only under the same ones.
        Budgets, workers and backend may differ between a run and its resumption."""
        return {"population": self.population, "keep": self.keep, "seed": self.seed,
                "max_attempts": self.max_attempts}


DEFAULTS = SearchOptions()
