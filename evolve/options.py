"""Search options: the single place where every default of the search is set."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class SearchOptions:
    """How a search runs. The command line reads its defaults from here, and so does the API."""

    population: int = 6
    keep: int = 3
    generations: int = 12
    seed: int = 0
    jobs: int | None = None
    backend: str = "loky"
    max_attempts: int = 10

    def __post_init__(self) -> None:
        if self.population < 2:
            raise ValueError(f"population must be at least 2, got {self.population}")
        if not 1 <= self.keep < self.population:
            raise ValueError(f"keep must be between 1 and population-1, got {self.keep}")
        if self.generations < 0:
            raise ValueError(f"generations must be >= 0, got {self.generations}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


DEFAULTS = SearchOptions()
