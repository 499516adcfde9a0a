"""The search over an HTN domain's decompositions, as an algorithm of the engine.

A genome is the planner's choices (which method at each occurrence of a
compound task, the order of each unordered method's subtasks); decoding it is
a run of the planner that tries those preferences first, so every genome gives
a plan whenever the domain has one, and different genomes give different valid
decompositions. The loop is the plan GA's: the best ``keep`` survive, the rest
are children (a uniform crossover of two parents' choices with probability
:data:`CROSSOVER_RATE`, then one choice changed; choice points a genome leaves
open are drawn from the child's random stream), each distinct plan scored once
by the run's evaluator with the run's objectives. Decoding happens in this
process, in child order, so results are the same for any number of workers,
and so is what the fallback learns. The search stops (a ``bound``) once its decodings have
searched a multiple of the first plan's nodes (:meth:`HtnSearch.at_bound`).

The search is anytime: ``on_best`` hears the first plan as soon as the planner finds it (before
the rest of the first population is decoded) and every better plan at a generation's end, so a
run folder holds its best plan so far from then on; with ``max_seconds`` every decoding stops at
the deadline (the first plan's search too, which then fails saying so), and a generation cut
short by it keeps the children decoded before it.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evolve import defaults
from evolve.fitness.evaluation import Evaluation
from evolve.model.errors import InfeasibleProblem, RunFailed
from evolve.model.patch import diff_plans
from evolve.model.plan import Plan, plan_hash
from evolve.problems.htn.decomposition import Choice, Decomposition, Genome, NoPlan
from evolve.problems.htn.fallback import DecompositionFallback
from evolve.problems.htn.hddl import GOAL_OPERATOR, ROOT_TASK
from evolve.problems.htn.hddl_plans import ipc_plan
from evolve.problems.htn.planner import Learned, Planner
from evolve.problems.htn.problem import HtnProblem, to_plan
from evolve.search.algorithm import Candidate, EventSink, SearchResult, generation_end
from evolve.search.loop import Evaluator, child_rng
from evolve.search.options import SearchOptions
from evolve.search.ranking import Ranking

OPERATOR = "htn"
"""How a checkpoint's identity names this algorithm."""
CROSSOVER_RATE = 0.3


class NoPlanError(InfeasibleProblem):
    """The domain's goal has no decomposition from its initial state (exit status 3)."""


class PlanBudgetError(RunFailed):
    """No plan was found before a limit (max_depth, max_nodes) ended the search: one may still
    exist (exit status 1, not "infeasible")."""


class RandomChooser:
    """Open choice points drawn from one random stream (in the planner's visiting order)."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def method(self, key: str, options: int) -> int:
        return int(self.rng.integers(options))

    def order(self, key: str, size: int) -> tuple[int, ...]:
        return tuple(int(i) for i in self.rng.permutation(size))


@dataclass(frozen=True)
class Child:
    """A decoded genome before scoring."""

    plan: Plan
    genome: Genome
    parents: tuple[str, ...]
    operator: str
    meta: dict[str, Any] = field(default_factory=dict)
    tree: Decomposition | None = None


def genome_doc(genome: Genome) -> dict[str, Any]:
    """The choices as JSON for events: key -> method index or subtask order."""
    return {c.key: list(c.value) if isinstance(c.value, tuple) else c.value for c in genome}


def mutate(genome: Genome, rng: np.random.Generator) -> Genome | None:
    """One choice changed: another method, or two subtasks swapped; None if nothing can change."""
    open_ = [i for i, c in enumerate(genome) if c.options > 1]
    if not open_:
        return None
    i = open_[int(rng.integers(len(open_)))]
    choice = genome[i]
    value: int | tuple[int, ...]
    if isinstance(choice.value, tuple):
        order = list(choice.value)
        a, b = (int(x) for x in rng.choice(len(order), size=2, replace=False))
        order[a], order[b] = order[b], order[a]
        value = tuple(order)
    else:
        value = int(rng.integers(choice.options - 1))
        value += value >= choice.value
    return (*genome[:i], Choice(choice.key, value, choice.options), *genome[i + 1:])


def crossover(a: Genome, b: Genome, rng: np.random.Generator) -> Genome:
    """Uniform crossover by choice point: each key's choice from one parent or the other."""
    mine = {c.key: c for c in a}
    theirs = {c.key: c for c in b}
    out = []
    for key in sorted(mine.keys() | theirs.keys()):
        pick = rng.random() < 0.5
        out.append((theirs if (pick and key in theirs) or key not in mine else mine)[key])
    return tuple(out)


class HtnSearch:
    """The engine's :class:`~evolve.search.algorithm.Algorithm` over an HTN domain."""

    def __init__(self, problem: HtnProblem, *, evaluator: Evaluator, ranking: Ranking,
                 options: SearchOptions, on_event: EventSink | None = None,
                 fallback: DecompositionFallback | None = None,
                 on_best: Callable[[Plan, str | None], object] | None = None) -> None:
        self.problem = problem
        self.on_best = on_best
        self.written: str | None = None
        """The hash of the plan ``on_best`` heard last."""
        self.armed = False
        self.trees: dict[str, Decomposition] = {}
        """The decompositions of the population's plans, by plan hash (for ``on_best``)."""
        self.domain = problem.htn()
        self.hddl = self.domain.goal == ROOT_TASK and GOAL_OPERATOR in self.domain.operators
        self.evaluator = evaluator
        self.ranking = ranking
        self.options = options
        self.fallback = fallback
        self.emit: EventSink = on_event or (lambda event: None)
        self.generation = -1
        self.evaluations = 0
        self.seconds = 0.0
        self.stale = 0
        self.population: list[Candidate] = []
        self.genomes: dict[str, Genome] = {}
        self.cache: dict[str, Evaluation] = {}
        self.cache_hits = 0
        self.serial = 0
        self.history: list[dict[str, Any]] = []
        self.best_key: tuple[float, ...] = ()
        self.learned = Learned()
        self.reported = 0
        self.planner = Planner(self.domain, fallback, self.learned)
        self.budget: int | None = None
        self.first_depth: int | None = None
        self.spent = 0
        """Nodes the decodings after the first plan have searched (see :meth:`at_bound`)."""
        self.allowance: int | None = None

    # -- decoding -------------------------------------------------------------------------------

    def arm(self) -> None:
        """Give the planner the run's deadline (``max_seconds`` after the search's clock
        started: once per process, as a resumed run's clock goes on from its checkpoint)."""
        if not self.armed and self.options.max_seconds is not None:
            self.planner.deadline = time.perf_counter() - self.seconds + self.options.max_seconds
        self.armed = True

    def tell_best(self, plan: Plan, tree: Decomposition | None) -> None:
        """Hand ``plan`` to ``on_best`` unless it was the last one handed, with, for a grounded
        HDDL problem, its decomposition in the competition's plan format (None otherwise)."""
        digest = plan_hash(plan)
        if self.on_best is not None and plan.tasks and digest != self.written:
            self.on_best(plan, ipc_plan(self.domain, tree) if self.hddl and tree is not None else None)
            self.written = digest

    def decode(self, genome: Genome, rng: np.random.Generator | None, parents: tuple[str, ...],
               operator: str) -> Child:
        outcome = self.planner.plan(genome, RandomChooser(rng) if rng is not None else None,
                                    max_nodes=self.budget, first_depth=self.first_depth)
        if self.budget is not None:
            self.spent += outcome.nodes
        meta: dict[str, Any] = {}
        if isinstance(outcome, NoPlan):
            meta["htn"] = {"no_plan": str(outcome), "nodes": outcome.nodes, "exhausted": outcome.exhausted}
            if outcome.reason == "seconds":
                meta["htn"]["out_of_time"] = True
            return Child(Plan(), genome, parents, operator, meta)
        meta["htn"] = {"choices": genome_doc(outcome.genome), "nodes": outcome.nodes,
                       "depth_limit": outcome.limit}
        return Child(to_plan(self.domain, outcome), outcome.genome, parents, operator, meta, outcome)

    def initial(self) -> list[Child]:
        """The planner's own first plan (file order), then random decompositions while new ones
        can be found (a small domain may have fewer plans than the population)."""
        self.budget = self.first_depth = None
        made = [self.decode((), None, (), "htn_first")]
        self.tell_best(made[0].plan, made[0].tree)
        first_nodes = made[0].meta["htn"]["nodes"]
        self.first_depth = made[0].meta["htn"].get("depth_limit")  # the others start where it was found
        self.budget = min(self.domain.max_nodes, max(defaults.HTN_DECODE_MIN_NODES,
                                                     defaults.HTN_DECODE_FACTOR * first_nodes))
        self.allowance = max(defaults.HTN_SEARCH_MIN_NODES, defaults.HTN_SEARCH_FACTOR * first_nodes)
        seen = {plan_hash(made[0].plan)}
        for attempt in range(2 * self.options.population):
            if len(made) >= self.options.population or self.planner.past_deadline():
                break
            child = self.decode((), child_rng(self.options.seed, 0, attempt), (), "htn_random")
            if child.meta["htn"].get("out_of_time"):
                break
            digest = plan_hash(child.plan)
            if digest not in seen:
                seen.add(digest)
                made.append(child)
        if all(not c.plan.tasks for c in made):
            if made[0].meta["htn"]["exhausted"]:
                raise PlanBudgetError(self.no_plan_message(made[0]))
            raise NoPlanError(self.no_plan_message(made[0]))
        return made

    def no_plan_message(self, child: Child) -> str:
        text = f"{self.domain.source}: htn: {child.meta['htn']['no_plan']}"
        rejected = [r for r in self.learned.records if not r.get("accepted")]
        if rejected:
            last = rejected[-1]
            text += f"; the fallback's proposal for {last['task']} was rejected ({last['rejected']}: " \
                    f"{last.get('detail', '')})"
        return text

    def breed(self, parents: Sequence[Candidate], generation: int, index: int) -> Child:
        rng = child_rng(self.options.seed, generation, index)
        weights = np.arange(len(parents), 0, -1, dtype=float)
        known = {p.hash for p in parents}
        child: Child | None = None
        for _ in range(self.options.max_attempts):
            first = parents[int(rng.choice(len(parents), p=weights / weights.sum()))]
            genome, names = self.genomes[first.id], []
            used: tuple[str, ...] = (first.id,)
            if len(parents) > 1 and rng.random() < CROSSOVER_RATE:
                other = parents[int(rng.choice([i for i in range(len(parents)) if parents[i] is not first]))]
                genome = crossover(genome, self.genomes[other.id], rng)
                used, names = (first.id, other.id), ["crossover"]
            changed = mutate(genome, rng)
            if changed is not None:
                genome, names = changed, [*names, "choice"]
            child = self.decode(genome, rng, used, "+".join(names) or "copy")
            if child.meta["htn"].get("out_of_time"):
                return child
            digest = plan_hash(child.plan)
            if digest not in self.cache and digest not in known:
                return child
        assert child is not None
        return child

    # -- scoring --------------------------------------------------------------------------------

    def score(self, children: Sequence[Child], generation: int) -> list[Candidate]:
        hashes = [plan_hash(c.plan) for c in children]
        todo: dict[str, Plan] = {}
        for digest, child in zip(hashes, children):
            if digest not in self.cache:
                todo.setdefault(digest, child.plan)
        for digest, evaluation in zip(todo, self.evaluator.evaluate(list(todo.values()))):
            self.cache[digest] = evaluation
        self.evaluations += len(todo)
        by_id = {c.id: c for c in self.population}
        out = []
        for digest, child in zip(hashes, children):
            cached = digest not in todo
            todo.pop(digest, None)
            self.cache_hits += cached
            parent = by_id.get(child.parents[0]) if child.parents else None
            meta = dict(child.meta)
            if len(self.learned.records) > self.reported:
                # what the fallback was asked since the last event, also by decodes that made no
                # candidate (a retried copy), rides on the next one
                meta["fallback"] = self.learned.records[self.reported:]
                self.reported = len(self.learned.records)
            candidate = Candidate(
                id=f"c{self.serial}", plan=child.plan, hash=digest, generation=generation,
                evaluation=self.cache[digest], parents=child.parents, operator=child.operator,
                patch=diff_plans(parent.plan if parent is not None else Plan(), child.plan),
                meta=meta)
            self.serial += 1
            self.genomes[candidate.id] = child.genome
            if child.tree is not None:
                self.trees.setdefault(digest, child.tree)
            self.emit(candidate.event(cached))
            out.append(candidate)
        return out

    def rank(self, candidates: list[Candidate]) -> list[Candidate]:
        """Best first; ties keep their order, so older candidates win them."""
        ranked = sorted(candidates, key=lambda c: self.ranking.key(c.evaluation))
        alive = {c.id for c in ranked}
        self.genomes = {k: v for k, v in self.genomes.items() if k in alive}
        plans = {c.hash for c in ranked}
        self.trees = {k: v for k, v in self.trees.items() if k in plans}
        return ranked

    # -- the Algorithm protocol -----------------------------------------------------------------

    def start(self) -> None:
        self.arm()
        self.generation = 0
        self.emit({"event": "generation_start", "generation": 0})
        self.population = self.rank(self.score(self.initial(), 0))
        self.end_generation()

    def step(self) -> None:
        self.arm()
        self.generation += 1
        self.emit({"event": "generation_start", "generation": self.generation})
        survivors = self.population[: self.options.keep]
        children = []
        for i in range(self.options.population - len(survivors)):
            if self.planner.past_deadline():
                break
            child = self.breed(survivors, self.generation, i)
            if child.meta.get("htn", {}).get("out_of_time"):
                break  # cut by the deadline: no plan, and no more time to find one
            children.append(child)
        self.population = self.rank(survivors + self.score(children, self.generation))
        self.end_generation()

    def end_generation(self) -> None:
        stats = generation_end(self.generation, self.population, self.evaluations, self.ranking)
        self.history.append(stats)
        self.emit(stats)
        key = self.ranking.key(self.population[0].evaluation)
        self.stale = 0 if not self.best_key or key < self.best_key else self.stale + 1
        self.best_key = key if not self.best_key else min(key, self.best_key)
        self.tell_best(self.population[0].plan, self.trees.get(self.population[0].hash))

    def best_values(self) -> Mapping[str, float]:
        return self.population[0].evaluation.values

    def best_feasible(self) -> bool:
        return self.population[0].evaluation.feasible

    def at_bound(self) -> str | None:
        """The search over method choices stops once its decodings have searched
        :data:`~evolve.defaults.HTN_SEARCH_FACTOR` times the first plan's nodes (at least
        :data:`~evolve.defaults.HTN_SEARCH_MIN_NODES`): its cost stays proportional to what
        finding one plan cost, in nodes, so the same run stops at the same generation on
        any machine; the best plan kept is never worse than the first (survivors stay). A run
        given ``max_seconds`` has no such bound: it improves its plan until the time is up."""
        if self.options.max_seconds is None and self.allowance is not None \
                and self.spent >= self.allowance:
            return (f"the search over method choices searched {self.spent} nodes, "
                    f">= {defaults.HTN_SEARCH_FACTOR} x the first plan's (at least "
                    f"{defaults.HTN_SEARCH_MIN_NODES})")
        return None

    STATE_FIELDS = ("generation", "evaluations", "seconds", "stale", "population", "genomes", "cache",
                    "cache_hits", "serial", "history", "best_key", "learned", "reported")

    def state(self) -> dict[str, Any]:
        """A snapshot (see :meth:`~evolve.search.algorithm.Algorithm.state`): the containers
        the next generations change are copied, what they hold never changes."""
        state = {name: getattr(self, name) for name in self.STATE_FIELDS}
        for name in ("population", "genomes", "cache", "history"):
            state[name] = copy.copy(state[name])
        learned = self.learned
        state["learned"] = Learned(list(learned.methods), dict(learned.verdicts), list(learned.records))
        state["budget"], state["first_depth"] = self.budget, self.first_depth
        state["spent"], state["allowance"] = self.spent, self.allowance
        saver = getattr(self.fallback, "checkpoint_state", None)
        state["fallback"] = saver() if callable(saver) else None
        return state

    def restore(self, state: dict[str, Any]) -> None:
        for name in self.STATE_FIELDS:
            setattr(self, name, state[name])
        self.budget, self.first_depth = state.get("budget"), state.get("first_depth")
        self.spent, self.allowance = state.get("spent", 0), state.get("allowance")
        self.planner = Planner(self.domain, self.fallback, self.learned)
        self.armed = False
        loader = getattr(self.fallback, "restore_checkpoint", None)
        if callable(loader) and state.get("fallback") is not None:
            loader(state["fallback"])

    def result(self, reason: str) -> SearchResult:
        return SearchResult(self.population, self.evaluations, self.cache_hits, self.history, reason)

    def fallback_summary(self) -> dict[str, Any]:
        """What the fallback was asked and what came of it, for the run summary."""
        records = self.learned.records
        rejected: dict[str, int] = {}
        for r in records:
            if not r["accepted"]:
                rejected[str(r["rejected"])] = rejected.get(str(r["rejected"]), 0) + 1
        usage = getattr(self.fallback, "usage_summary", None)
        return {"fallback": self.fallback.name if self.fallback is not None else None,
                "asked": len(records), "accepted": sum(1 for r in records if r["accepted"]),
                "rejected_by_reason": dict(sorted(rejected.items())),
                "learned_methods": [m.name for m in self.learned.methods],
                **({"llm": usage()} if callable(usage) else {})}
