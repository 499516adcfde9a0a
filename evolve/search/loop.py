"""The search loop, one for every problem family: keep the best, breed children from them,
score, repeat.

A family is a representation (:mod:`evolve.search.representation`: its first
population, crossover, mutation and decoding); the loop is given everything
else it uses (evaluator, developer, ranking) rather than importing it, so a
caller can swap any part. Every child draws from its own random stream, derived
from ``(seed, generation, index)``: results depend on the seed alone, never on
which worker ran what.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

import numpy as np

from evolve.fitness.evaluation import Evaluation
from evolve.model.errors import UsageError
from evolve.model.patch import diff_plans
from evolve.model.plan import Plan, plan_hash
from evolve.model.problem import Problem
from evolve.search.algorithm import Candidate, EventSink, SearchResult, generation_end, minimize
from evolve.search.develop import Developed, Developer, Development, InProcess, Undeveloped, Work
from evolve.search.operators import STRUCTURAL, OperatorSet
from evolve.search.options import SearchOptions
from evolve.search.plans import Plans
from evolve.search.ranking import Ranking
from evolve.search.representation import Genome, Offspring, Representation, child_rng, choose

__all__ = ["Evaluator", "Offspring", "ProposalContext", "Proposer", "Search", "child_rng", "choose",
           "develop_all"]


class Evaluator(Protocol):
    """Scores plans, in order: the loop's one seam to wherever evaluation runs (this process, a
    joblib pool, a Dask or Ray cluster; see :class:`evolve.run.evaluator.Evaluator`)."""

    def evaluate(self, plans: Sequence[Plan]) -> list[Evaluation]: ...


@dataclass(frozen=True)
class ProposalContext:
    """What the search lends a proposer: the ranking the run uses (so a prompt can say what
    "better" means), the run's operators (to draft candidate edits from), and ``evaluate``,
    which scores plans through the search's own evaluator and cache, so a plan scored for a
    proposer is counted once and never scored again."""

    ranking: Ranking
    operators: OperatorSet
    evaluate: Callable[[Sequence[Plan]], list[Evaluation]]
    last_error: Mapping[str, Any] | None = None
    """When a run replans: ``{failed_step, error, partial_results}`` (untrusted text from the
    tools; a prompt quotes and bounds it). ``None`` during a search."""


class Proposer(Protocol):
    """Makes several children at once, e.g. an LLM operator that calls its endpoint concurrently.

    ``indices`` are the children's positions in the generation; the proposer derives
    any randomness from ``(seed, generation, index)`` so results stay reproducible.
    """

    name: str

    def propose(self, problem: Problem, parents: Sequence[Candidate], indices: Sequence[int],
                generation: int, seed: int, context: ProposalContext) -> list[Offspring]: ...


STATE_FIELDS = ("generation", "population", "cache", "cache_hits", "serial", "history", "genomes",
                "stale", "best_key", "evaluations", "seconds")
"""What a checkpoint holds (with the representation's and the proposer's own state): with these
restored, a resumed search continues exactly."""


class Search:
    """The one generational loop, for every problem family: call :meth:`run`, read the result.

    The family is its ``representation`` (see :mod:`evolve.search.representation`); without
    one, plans varied by ``operators`` (:class:`~evolve.search.plans.Plans`, with ``seeds`` in
    the first population). Each generation the best ``keep`` survive and the rest are their
    children: a ``proposer`` (e.g. an LLM) makes its share, and :meth:`breed` the others, each
    from its own random stream; the costly part of making them (the initializer, a local
    improvement; see :mod:`evolve.search.develop`) runs in ``developer`` (this process unless
    given one, e.g. the run's evaluator, which develops them in its workers), and every
    distinct plan is scored once by ``evaluator``. ``on_generation`` is called after every
    generation, when :meth:`state` can capture the search (the runner checkpoints there).
    """

    def __init__(self, problem: Problem, *, evaluator: Evaluator, ranking: Ranking,
                 options: SearchOptions, operators: OperatorSet | None = None,
                 representation: Representation | None = None, on_event: EventSink | None = None,
                 proposer: Proposer | None = None, proposer_share: float = 0.0,
                 on_generation: Callable[[Any], None] | None = None,
                 seeds: Sequence[Plan] = (), developer: Developer | None = None) -> None:
        if not 0.0 <= proposer_share <= 1.0:
            raise UsageError(f"proposer share must be within [0, 1], got {proposer_share}")
        if representation is None and operators is None:
            raise UsageError("a search needs a representation or the operators of a plan search")
        self.problem = problem
        self.representation: Representation = (representation if representation is not None
                                                else Plans(problem, operators or STRUCTURAL, seeds))
        self.proposer = proposer
        self.proposer_share = proposer_share if proposer is not None else 0.0
        self.operators = operators or STRUCTURAL
        self.evaluator = evaluator
        self.developer: Developer = developer or (InProcess(problem, Development.of(operators))
                                                  if operators is not None else Undeveloped())
        self.ranking = ranking
        self.options = options
        self.budget = options.budget()
        self.emit: EventSink = on_event or (lambda event: None)
        self.on_generation = on_generation or (lambda search: None)
        self.generation = -1
        self.population: list[Candidate] = []
        self.cache: dict[str, Evaluation] = {}
        self.cache_hits = 0
        self.serial = 0
        self.history: list[dict[str, Any]] = []
        self.genomes: dict[str, Genome] = {}
        """The genome of every candidate of the population, by id (what its children vary)."""
        self.stale = 0
        self.best_key: tuple[float, ...] = ()
        self.evaluations = 0
        self.seconds = 0.0
        self.deadline: float | None = None
        """When ``max_seconds`` ends, as a :func:`time.perf_counter` time (see :meth:`arm`)."""

    def run(self) -> SearchResult:
        """Evolve until a budget says stop; resumes where :meth:`restore` left off."""
        return minimize(self, self.budget, emit=self.emit, on_generation=self.on_generation)

    # -- the Algorithm protocol (see evolve.search.algorithm) -------------------------------

    def start(self) -> None:
        """Generation 0: the representation's first population, scored."""
        self.arm()
        self.generation = 0
        self.emit({"event": "generation_start", "generation": 0})
        first = self.representation.first(self.options.population, self.options.seed,
                                          self.developer.develop)
        self.population = self.rank(self.score(first, generation=0))
        self.end_generation()

    def step(self) -> None:
        """One generation: the best ``keep`` survive, the rest of the population are their children."""
        self.arm()
        self.generation += 1
        self.emit({"event": "generation_start", "generation": self.generation})
        survivors = self.population[: self.options.keep]
        children = self.offspring(survivors, self.generation, self.options.population - len(survivors))
        self.population = self.rank(survivors + self.score(children, self.generation))
        self.end_generation()

    def arm(self) -> None:
        """Give the representation the run's deadline, ``max_seconds`` after the search's clock
        started: once per process, as a resumed run's clock goes on from its checkpoint."""
        if self.deadline is None and self.options.max_seconds is not None:
            self.deadline = time.perf_counter() - self.seconds + self.options.max_seconds
            self.representation.stop_at(self.deadline)

    def end_generation(self) -> None:
        """Bookkeeping after a generation: stats, the patience counter, the representation told."""
        stats = generation_end(self.generation, self.population[: self.options.population],
                               self.evaluations, self.ranking)
        self.history.append(stats)
        self.emit(stats)
        key = self.ranking.key(self.population[0].evaluation)
        self.stale = 0 if not self.best_key or key < self.best_key else self.stale + 1
        self.best_key = key if not self.best_key else min(key, self.best_key)
        self.representation.ranked(self.population)

    def result(self, reason: str) -> SearchResult:
        failed = sum(1 for ev in self.cache.values() if ev.failed is not None)
        return SearchResult(self.population, self.evaluations, self.cache_hits, self.history, reason,
                            failed)

    def summary(self) -> dict[str, Any]:
        return self.representation.summary()

    # Termination reads these (see evolve.search.termination.Progress).
    def best_values(self) -> dict[str, float]:
        return self.population[0].evaluation.values

    def best_feasible(self) -> bool:
        return self.population[0].evaluation.feasible

    def at_bound(self) -> str | None:
        return self.representation.at_bound()

    def state(self) -> dict[str, Any]:
        """Everything needed to continue this search later (see :data:`STATE_FIELDS`), as a
        snapshot: the containers the next generations change are copied (what they hold is
        never changed), so a checkpoint may encode it while the search goes on."""
        proposer_state = getattr(self.proposer, "checkpoint_state", None)
        state = {name: getattr(self, name) for name in STATE_FIELDS}
        for name in ("population", "cache", "history", "genomes"):
            state[name] = copy.copy(state[name])
        state["representation"] = self.representation.state()
        state["proposer"] = proposer_state() if callable(proposer_state) else None
        return state

    def restore(self, state: dict[str, Any]) -> None:
        """Continue from :meth:`state`'s snapshot instead of starting afresh."""
        for name in STATE_FIELDS:
            setattr(self, name, state[name])
        self.deadline = None
        self.representation.restore(state["representation"])
        restore = getattr(self.proposer, "restore_checkpoint", None)
        if callable(restore) and state.get("proposer") is not None:
            restore(state["proposer"])

    # -- making children ----------------------------------------------------------------------

    def offspring(self, parents: Sequence[Candidate], generation: int, count: int) -> list[Offspring]:
        """This generation's children: the proposer's share first, bred children for the rest
        and for every child the proposer could not make; fewer when the representation's
        deadline came (the children drafted before it are kept)."""
        guided = list(range(round(count * self.proposer_share)))
        made: dict[int, Offspring] = {}
        if self.proposer is not None and guided:
            context = ProposalContext(self.ranking, self.operators, self.evaluate_new)
            proposals = self.proposer.propose(self.problem, parents, guided, generation,
                                              self.options.seed, context)
            made = dict(zip(guided, proposals))
        breeding = {i: self.breed(parents, generation, i) for i in range(count)
                    if made.get(i) is None or made[i].plan is None}
        bred = develop_all(breeding, self.developer, self.representation.out_of_time)
        children = []
        for i in range(count):
            child = made.get(i)
            if (child is None or child.plan is None) and i in bred:
                child = replace(bred[i], meta=child.meta) if child is not None else bred[i]
            if child is not None:
                children.append(child)
        return children

    def breed(self, parents: Sequence[Candidate], generation: int,
              index: int) -> Generator[Work, Developed, Offspring]:
        """One child, from its own random stream: a parent drawn by rank, maybe crossed with
        another, then mutated, then (when the representation improves) climbed, then decoded;
        retried while it is a copy of a known plan (not when the deadline cut its decoding: it
        has no plan, and no time to find one). An improved child that is a copy (improvement
        pulls neighbours into the same local optimum) gives way to its unimproved self when that
        is new, so the population stays diverse; a child is improved once, later attempts are
        plain variations.

        The improvement is the one costly step, so it is not done here: the child is yielded
        as :class:`Work` and its development sent back (see :func:`develop_all`), which lets
        the developer improve every child of a generation at once, in its workers."""
        rng = child_rng(self.options.seed, generation, index)
        rep = self.representation
        weights = np.arange(len(parents), 0, -1, dtype=float)
        known = {p.hash for p in parents}

        def new(plan: Plan) -> bool:
            digest = plan_hash(plan)
            return digest not in self.cache and digest not in known

        improved_once = False
        child: Offspring | None = None
        for _ in range(self.options.max_attempts):
            first = parents[int(rng.choice(len(parents), p=weights / weights.sum()))]
            used: tuple[str, ...] = (first.id,)
            genome, names = self.genomes[first.id], []
            if rep.crossover_rate is not None and len(parents) > 1 and rng.random() < rep.crossover_rate:
                other = parents[int(rng.choice([i for i in range(len(parents)) if parents[i] is not first]))]
                mixed = rep.crossover(genome, self.genomes[other.id], rng)
                if mixed is not None:
                    genome, used, names = mixed[0], (first.id, other.id), [mixed[1]]
            changed = rep.mutate(genome, rng)
            if changed is not None:
                genome, names = changed[0], [*names, changed[1]]
            if names and rep.improves and not improved_once:
                improved_once = True  # a second climb would mostly meet the same optimum again
                developed = yield Work(rng, genome)
                rng, better = developed.rng, developed.plan
                if better is not None and new(better):
                    return Offspring(better, used, "+".join([*names, "improve"]),
                                     evaluation=developed.evaluation)
            child = rep.decode(genome, rng, used, "+".join(names) or "copy")
            if child.plan is None or new(child.plan):
                return child
        assert child is not None, "max_attempts is at least 1"
        return child

    # -- scoring and ranking ------------------------------------------------------------------

    def evaluate_new(self, plans: Sequence[Plan]) -> list[Evaluation]:
        """Evaluations of ``plans``, scoring (and counting) only those never scored before."""
        hashes = [plan_hash(plan) for plan in plans]
        self.fill_cache(hashes, plans)
        return [self.cache[digest] for digest in hashes]

    def fill_cache(self, hashes: Sequence[str], plans: Sequence[Plan],
                   known: Sequence[Evaluation | None] = ()) -> set[str]:
        """Score the plans not yet in the cache; returns the hashes scored now. ``known`` holds
        verdicts already made for some of the plans (by their developer), in the same order."""
        todo: dict[str, Plan] = {}
        scored: dict[str, Evaluation] = {}
        for digest, plan, evaluation in zip(hashes, plans, [*known, *[None] * (len(plans) - len(known))]):
            if digest in self.cache or digest in scored:
                continue
            if evaluation is not None:
                todo.pop(digest, None)
                scored[digest] = evaluation
            else:
                todo.setdefault(digest, plan)
        scored.update(zip(todo, self.evaluator.evaluate(list(todo.values()))))
        for digest in [*dict.fromkeys(hashes)]:
            if digest in scored:
                self.cache[digest] = scored[digest]
        self.evaluations += len(scored)
        return set(scored)

    def score(self, made: Sequence[Offspring], generation: int) -> list[Candidate]:
        """Evaluate new plans (each distinct plan once, ever) and record them as candidates."""
        made = [child for child in made if child.plan is not None]
        plans = [child.plan for child in made if child.plan is not None]
        hashes = [plan_hash(plan) for plan in plans]
        fresh = self.fill_cache(hashes, plans, [child.evaluation for child in made])
        by_id = {c.id: c for c in self.population}
        out = []
        for digest, plan, child in zip(hashes, plans, made):
            cached = digest not in fresh
            fresh.discard(digest)
            self.cache_hits += cached
            parent = by_id.get(child.parents[0]) if child.parents else None
            candidate = Candidate(
                id=f"c{self.serial}", plan=plan, hash=digest, generation=generation,
                evaluation=self.cache[digest], parents=child.parents, operator=child.operator,
                patch=diff_plans(parent.plan if parent is not None else Plan(), plan),
                meta={**child.meta, **self.representation.notes(digest, child)},
            )
            self.serial += 1
            self.genomes[candidate.id] = child.genome if child.genome is not None else plan
            out.append(candidate)
            self.emit(candidate.event(cached))
        return out

    def rank(self, candidates: list[Candidate]) -> list[Candidate]:
        """Best first; ties keep their order, so older candidates win them."""
        ranked = sorted(candidates, key=lambda c: self.ranking.key(c.evaluation))
        alive = {c.id for c in ranked[: self.options.population]}
        self.genomes = {k: v for k, v in self.genomes.items() if k in alive}
        return ranked


def develop_all(breeding: Mapping[int, Generator[Work, Developed, Offspring]],
                developer: Developer, out_of_time: Callable[[], bool] = lambda: False,
                ) -> dict[int, Offspring]:
    """Drive every child's :meth:`Search.breed` to its end, developing the work they ask for
    in one call (so a developer with workers improves them side by side). The children are
    drafted as the developer takes their work, so one with threads develops the first while
    the next is drafted; none is drafted once ``out_of_time``."""
    bred: dict[int, Offspring] = {}
    asking: list[int] = []

    def drafted() -> Iterator[Work]:
        for i, child in breeding.items():
            if out_of_time():
                return
            try:
                work = next(child)
            except StopIteration as done:
                bred[i] = done.value
                continue
            asking.append(i)
            yield work

    for i, developed in zip(asking, developer.develop(drafted())):
        try:
            breeding[i].send(developed)
            raise AssertionError("a child asks to be developed once")  # pragma: no cover
        except StopIteration as done:
            bred[i] = done.value
    return bred

