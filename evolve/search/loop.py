"""The search loop: keep the best, breed children from them, score, repeat.

The engine is given everything it uses (operators, evaluator, ranking) rather
than importing it, so a caller can swap any part. Every child draws from its own
random stream, derived from ``(seed, generation, index)``: results depend on the
seed alone, never on which worker ran what.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import numpy as np

from evolve.fitness.evaluation import Evaluation
from evolve.model.errors import UsageError
from evolve.model.patch import diff_plans
from evolve.model.plan import Plan, plan_hash
from evolve.model.problem import Problem
from evolve.search.algorithm import Candidate, EventSink, SearchResult, generation_end, minimize
from evolve.search.develop import Developed, Developer, Development, InProcess, Work
from evolve.search.operators import OperatorSet, operator_name
from evolve.search.options import SearchOptions
from evolve.search.ranking import Ranking


@dataclass(frozen=True)
class Offspring:
    """A child before scoring. ``plan`` is ``None`` when a proposer could not make one; its
    ``meta`` (e.g. why an LLM patch was rejected) then rides on the fallback child's event.
    ``evaluation`` is the plan's verdict when whoever developed it scored it too."""

    plan: Plan | None
    parents: tuple[str, ...] = ()
    operator: str = "construct"
    meta: dict[str, Any] = field(default_factory=dict)
    evaluation: Evaluation | None = None


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


def child_rng(seed: int, generation: int, index: int) -> np.random.Generator:
    """The random stream of one child, independent of every other child's."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(generation, index)))


STATE_FIELDS = ("generation", "population", "cache", "cache_hits", "serial", "history",
                "parent_plans", "stale", "best_key", "evaluations", "seconds")
"""What a checkpoint holds: with these restored, a resumed search continues exactly."""


class Search:
    """One run of the evolutionary loop. Call :meth:`run`; read the outcome from the result.

    ``on_generation`` is called after every generation, when the search is in a
    consistent state that :meth:`state` captures (the runner checkpoints there).
    ``developer`` runs the costly part of making children (the initializer, the
    improvement; see :mod:`evolve.search.develop`): in this process unless given one,
    e.g. the run's evaluator, which develops them in its workers.
    """

    def __init__(self, problem: Problem, *, operators: OperatorSet, evaluator: Evaluator,
                 ranking: Ranking, options: SearchOptions, on_event: EventSink | None = None,
                 proposer: Proposer | None = None, proposer_share: float = 0.0,
                 on_generation: Callable[[Any], None] | None = None,
                 seeds: Sequence[Plan] = (), developer: Developer | None = None) -> None:
        if not 0.0 <= proposer_share <= 1.0:
            raise UsageError(f"proposer share must be within [0, 1], got {proposer_share}")
        self.problem = problem
        self.seeds = tuple(seeds)
        self.proposer = proposer
        self.proposer_share = proposer_share if proposer is not None else 0.0
        self.operators = operators
        self.evaluator = evaluator
        self.developer = developer or InProcess(problem, Development.of(operators))
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
        self.parent_plans: dict[str, Plan] = {}
        self.stale = 0
        self.best_key: tuple[float, ...] = ()
        self.evaluations = 0
        self.seconds = 0.0

    def run(self) -> SearchResult:
        """Evolve until a budget says stop; resumes where :meth:`restore` left off."""
        return minimize(self, self.budget, emit=self.emit, on_generation=self.on_generation)

    # -- the Algorithm protocol (see evolve.search.algorithm) -------------------------------

    def start(self) -> None:
        """Generation 0: the first population, built and scored."""
        self.generation = 0
        self.emit({"event": "generation_start", "generation": 0})
        self.population = self.rank(self.score(self.initial_plans(), generation=0))
        self.end_generation()

    def step(self) -> None:
        """One generation: the best ``keep`` survive, the rest of the population are their children."""
        opts = self.options
        self.generation += 1
        self.emit({"event": "generation_start", "generation": self.generation})
        survivors = self.population[: opts.keep]
        children = self.offspring(survivors, self.generation, opts.population - opts.keep)
        self.population = self.rank(survivors + self.score(children, self.generation))
        self.end_generation()

    def result(self, reason: str) -> SearchResult:
        return SearchResult(self.population, self.evaluations, self.cache_hits, self.history, reason)

    def at_bound(self) -> str | None:
        return None  # plan problems: no bound of the default ranking is computed here

    def end_generation(self) -> None:
        """Bookkeeping after a generation: stats and the patience counter."""
        self.record(self.generation, self.population)
        key = self.ranking.key(self.population[0].evaluation)
        self.stale = 0 if not self.best_key or key < self.best_key else self.stale + 1
        self.best_key = key if not self.best_key else min(key, self.best_key)

    def state(self) -> dict[str, Any]:
        """Everything needed to continue this search later (see :data:`STATE_FIELDS`), as a
        snapshot: the containers the next generations change are copied (what they hold is
        never changed), so a checkpoint may encode it while the search goes on."""
        proposer_state = getattr(self.proposer, "checkpoint_state", None)
        state = {name: getattr(self, name) for name in STATE_FIELDS}
        for name in ("population", "cache", "history", "parent_plans"):
            state[name] = copy.copy(state[name])
        state["proposer"] = proposer_state() if callable(proposer_state) else None
        return state

    def restore(self, state: dict[str, Any]) -> None:
        """Continue from :meth:`state`'s snapshot instead of starting afresh."""
        for name in STATE_FIELDS:
            setattr(self, name, state[name])
        restore = getattr(self.proposer, "restore_checkpoint", None)
        if callable(restore) and state.get("proposer") is not None:
            restore(state["proposer"])

    # Termination reads these (see evolve.search.termination.Progress).
    def best_values(self) -> dict[str, float]:
        return self.population[0].evaluation.values

    def best_feasible(self) -> bool:
        return self.population[0].evaluation.feasible

    def offspring(self, parents: Sequence[Candidate], generation: int, count: int) -> list[Offspring]:
        """This generation's children: the proposer's share first, random operators for the rest
        and for every child the proposer could not make."""
        guided = list(range(round(count * self.proposer_share)))
        made: dict[int, Offspring] = {}
        if self.proposer is not None and guided:
            context = ProposalContext(self.ranking, self.operators, self.evaluate_new)
            proposals = self.proposer.propose(self.problem, parents, guided, generation,
                                              self.options.seed, context)
            made = dict(zip(guided, proposals))
        breeding = {i: self.breed(parents, generation, i) for i in range(count)
                    if made.get(i) is None or made[i].plan is None}
        bred = develop_all(breeding, self.developer)
        children = []
        for i in range(count):
            child = made.get(i)
            if child is None or child.plan is None:
                child = replace(bred[i], meta=child.meta) if child is not None else bred[i]
            children.append(child)
        return children

    def initial_plans(self) -> list[Offspring]:
        """The template (when given), the seeds (plans drafted elsewhere, e.g. by a model: being
        in the first population, the best plan found is never worse than theirs), then plans
        made by the operators' initializer (randomised backward chaining by default), distinct
        while distinct ones can be found."""
        plans: list[Offspring] = []
        seen: set[str] = set()
        if isinstance(self.problem.template, Plan):
            plans.append(Offspring(self.problem.template, (), "template"))
            seen.add(plan_hash(self.problem.template))
        for seed in self.seeds:
            if plan_hash(seed) not in seen and len(plans) < self.options.population:
                plans.append(Offspring(seed, (), "seed"))
                seen.add(plan_hash(seed))
        attempts = 0
        while len(plans) < self.options.population:
            # as many first plans as are missing, developed at once; a surplus is dropped unseen
            batch = [Work(child_rng(self.options.seed, 0, attempts + i))
                     for i in range(self.options.population - len(plans))]
            for made in self.developer.develop(batch):
                attempts += 1
                plan = made.plan if made.plan is not None else Plan()
                digest = plan_hash(plan)
                if digest not in seen or attempts > 2 * self.options.population:
                    seen.add(digest)
                    plans.append(Offspring(plan, (), operator_name(self.operators.initial),
                                           evaluation=made.evaluation))
                    if len(plans) == self.options.population:
                        break
        return plans

    def breed(self, parents: Sequence[Candidate], generation: int,
              index: int) -> Generator[Work, Developed, Offspring]:
        """One child: maybe a crossover of two parents, then a mutation, then the local
        improvement; retried when it is a copy. An improved child that is a copy of a known
        plan (improvement pulls neighbours into the same local optimum) gives way to its
        unimproved self when that is new, so the population stays diverse; a child is improved
        once, and later attempts are plain mutations.

        The improvement is the one costly step, so it is not done here: the child is yielded
        as :class:`Work` and its development sent back (see :func:`develop_all`), which lets
        the developer improve every child of a generation at once, in its workers."""
        rng = child_rng(self.options.seed, generation, index)
        ops = self.operators
        weights = np.arange(len(parents), 0, -1, dtype=float)
        known = {p.hash for p in parents}

        def new(plan: Plan) -> bool:
            digest = plan_hash(plan)
            return digest not in self.cache and digest not in known

        improved_once = False
        for _ in range(self.options.max_attempts):
            first = parents[int(rng.choice(len(parents), p=weights / weights.sum()))]
            plan, used, names = first.plan, [first.id], []
            if ops.crossovers and len(parents) > 1 and rng.random() < ops.crossover_rate:
                other = parents[int(rng.choice([i for i in range(len(parents)) if parents[i] is not first]))]
                cross = choose(ops.crossovers, rng)
                mixed = cross(self.problem, plan, other.plan, rng)
                if mixed is not None:
                    plan, used, names = mixed, [first.id, other.id], [operator_name(cross)]
            mutate = choose(ops.mutations, rng)
            mutated = mutate(self.problem, plan, rng)
            if mutated is not None:
                plan, names = mutated, [*names, operator_name(mutate)]
            if not names:
                continue
            if ops.improve is not None and not improved_once:
                improved_once = True  # a second climb would mostly meet the same optimum again
                developed = yield Work(rng, plan)
                rng, better = developed.rng, developed.plan
                if better is not None and new(better):
                    return Offspring(better, tuple(used), "+".join([*names, "improve"]),
                                     evaluation=developed.evaluation)
            if new(plan):
                return Offspring(plan, tuple(used), "+".join(names))
        return Offspring(plan, tuple(used), "+".join(names) or "copy")

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
        plans = [child.plan for child in made if child.plan is not None]
        hashes = [plan_hash(plan) for plan in plans]
        fresh = self.fill_cache(hashes, plans, [c.evaluation for c in made if c.plan is not None])
        out = []
        for digest, plan, child in zip(hashes, plans, (c for c in made if c.plan is not None)):
            cached = digest not in fresh
            fresh.discard(digest)
            self.cache_hits += cached
            parent_plan = self.parent_plans.get(child.parents[0]) if child.parents else None
            candidate = Candidate(
                id=f"c{self.serial}", plan=plan, hash=digest, generation=generation,
                evaluation=self.cache[digest], parents=child.parents, operator=child.operator,
                patch=diff_plans(parent_plan or Plan(), plan), meta=child.meta,
            )
            self.serial += 1
            self.parent_plans[candidate.id] = plan
            out.append(candidate)
            self.emit(candidate.event(cached))
        return out

    def rank(self, candidates: list[Candidate]) -> list[Candidate]:
        """Best first; ties keep their order, so older candidates win them."""
        ranked = sorted(candidates, key=lambda c: self.ranking.key(c.evaluation))
        alive = {c.id for c in ranked[: self.options.population]}
        self.parent_plans = {k: v for k, v in self.parent_plans.items() if k in alive}
        return ranked

    def record(self, generation: int, population: list[Candidate]) -> None:
        """Per-generation statistics: the best candidate and best/median of each objective."""
        stats = generation_end(generation, population[: self.options.population], self.evaluations,
                               self.ranking)
        self.history.append(stats)
        self.emit(stats)


def develop_all(breeding: Mapping[int, Generator[Work, Developed, Offspring]],
                developer: Developer) -> dict[int, Offspring]:
    """Drive every child's :meth:`Search.breed` to its end, developing the work they ask for
    in one call (so a developer with workers improves them side by side). The children are
    drafted as the developer takes their work, so one with threads develops the first while
    the next is drafted."""
    bred: dict[int, Offspring] = {}
    asking: list[int] = []

    def drafted() -> Iterator[Work]:
        for i, child in breeding.items():
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


def choose(weighted: Sequence[tuple[Any, float]], rng: np.random.Generator) -> Any:
    """One item of ``(item, weight)`` pairs, drawn with probability proportional to its weight."""
    weights = np.array([w for _, w in weighted], dtype=float)
    return weighted[int(rng.choice(len(weighted), p=weights / weights.sum()))][0]
