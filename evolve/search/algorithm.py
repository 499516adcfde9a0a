"""What every search algorithm is to the engine, and the loop that drives one.

An algorithm is a state that advances a generation at a time (``start`` makes
the first population, ``step`` the next one) and can say how far it is
(``generation``, ``evaluations``, ``seconds``, ``stale``, the best values and
whether it has reached a bound of its own). :func:`minimize` is the whole
loop: start unless resumed, step until the termination says stop. Everything
else (checkpoints, events, the run folder) hooks in through ``on_generation``,
which is called whenever the algorithm is in a state :meth:`Algorithm.state`
can capture, so two algorithms as different as the plan GA and the numba
activity-list GA run, stop, checkpoint and resume the same way.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from statistics import median
from typing import Any, ClassVar, Protocol

from evolve.fitness.evaluation import Evaluation
from evolve.model.plan import Plan
from evolve.search.ranking import Ranking
from evolve.search.termination import Termination

EventSink = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class Candidate:
    """A scored plan and how it came to be."""

    CHECKPOINT_IMMUTABLE: ClassVar[bool] = True
    """Never changed once made (nor its patch and meta), so a checkpoint reuses the encoding it
    made of it for the previous checkpoint (see ``evolve.run.state_codec``)."""

    id: str
    plan: Plan
    hash: str
    generation: int
    evaluation: Evaluation
    parents: tuple[str, ...] = ()
    operator: str = "construct"
    patch: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    def event(self, cached: bool) -> dict[str, Any]:
        return {
            "event": "candidate", "id": self.id, "generation": self.generation,
            "parents": list(self.parents), "operator": self.operator, "hash": self.hash,
            "cached": cached, "patch": self.patch, **self.evaluation.to_dict(), **self.meta,
        }


@dataclass
class SearchResult:
    """What a search leaves: the final population (best first), counters and per-generation stats."""

    population: list[Candidate]
    evaluations: int
    cache_hits: int
    history: list[dict[str, Any]]
    stop_reason: str = ""
    failed: int = 0
    """How many of the plans scored failed to evaluate (an error, a timeout)."""

    @property
    def best(self) -> Candidate:
        return self.population[0]


def generation_end(generation: int, population: list[Candidate], evaluations: int,
                   ranking: Ranking) -> dict[str, Any]:
    """The ``generation_end`` event every algorithm emits: the best candidate (``population`` is
    best first), the population's ids, and the best and median of each objective over the
    candidates that did not fail."""
    ok = [c for c in population if c.evaluation.failed is None]
    stats: dict[str, Any] = {"event": "generation_end", "generation": generation,
                             "best": population[0].id, "evaluations": evaluations,
                             "best_values": population[0].evaluation.values,
                             "population": [c.id for c in population]}
    for name, direction in zip(ranking.objectives, ranking.directions):
        values = [c.evaluation.values[name] for c in ok]
        if values:
            pick_best = min if direction == "min" else max
            stats.setdefault("objectives", {})[name] = {"best": pick_best(values), "median": median(values)}
    return stats


class Algorithm(Protocol):
    """A search :func:`minimize` can drive; see the module docstring.

    ``evaluations`` is what the algorithm's budget counts: plans scored by the
    evaluator for the plan GA, generated schedules for the activity-list GA.
    """

    generation: int
    """-1 before :meth:`start`, then the number of the last completed generation."""
    evaluations: int
    seconds: float
    stale: int
    """Generations since the best last improved."""
    ranking: Ranking

    def start(self) -> None: ...
    def step(self) -> None: ...
    def best_values(self) -> Mapping[str, float]: ...
    def best_feasible(self) -> bool: ...
    def at_bound(self) -> str | None:
        """A lower bound the algorithm computed itself and has reached, described; or None."""
    def state(self) -> dict[str, Any]:
        """Everything needed to continue later, as a snapshot the next generations leave
        alone (copy what they change in place): a checkpoint encodes it while the search goes
        on (see :meth:`evolve.run.checkpoint.Writer.save`)."""
    def restore(self, state: dict[str, Any]) -> None: ...
    def result(self, reason: str) -> SearchResult: ...
    def summary(self) -> dict[str, Any]:
        """What the run's summary should also say about this algorithm."""


def minimize(algorithm: Algorithm, termination: Termination, *, emit: EventSink | None = None,
             on_generation: Callable[[Algorithm], None] | None = None,
             on_stop: Callable[[Algorithm], None] | None = None) -> SearchResult:
    """Run ``algorithm`` until ``termination`` says stop; continues a restored one.

    ``on_generation`` is called after every generation, ``on_stop`` once after the last
    (before the stop event), both while the state is consistent."""
    hook = on_generation or (lambda algorithm: None)
    clock = time.perf_counter() - algorithm.seconds
    if algorithm.generation < 0:
        algorithm.start()
        algorithm.seconds = time.perf_counter() - clock
        hook(algorithm)
    while (reason := termination.reason(algorithm)) is None:
        algorithm.step()
        algorithm.seconds = time.perf_counter() - clock
        hook(algorithm)
    if on_stop is not None:
        on_stop(algorithm)
    if emit is not None:
        emit({"event": "stop", "generation": algorithm.generation, "reason": reason})
    return algorithm.result(reason)
