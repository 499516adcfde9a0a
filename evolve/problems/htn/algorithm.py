"""The search over an HTN domain's decompositions, as a representation of the engine's one loop.

A genome is the planner's choices (which method at each occurrence of a
compound task, the order of each unordered method's subtasks); decoding it is
a run of the planner that tries those preferences first, so every genome gives
a plan whenever the domain has one, and different genomes give different valid
decompositions (:class:`HtnChoices`, a representation of the engine's one loop,
:class:`~evolve.search.loop.Search`): the best ``keep`` survive, the rest
are children (a uniform crossover of two parents' choices with probability
:data:`CROSSOVER_RATE`, then one choice changed, or, for a parent's own genome, a
large-neighbourhood step that re-plans subtrees of its plan for fewer actions,
:mod:`evolve.problems.htn.lns`; choice points a genome leaves open are drawn
from the child's random stream), each distinct plan scored once
by the run's evaluator with the run's objectives. Decoding happens in this
process, in child order, so results are the same for any number of workers,
and so is what the fallback learns. The search stops (a ``bound``) once its decodings have
searched a multiple of the first plan's nodes (:meth:`HtnChoices.at_bound`).

The search is anytime: ``on_best`` hears the first plan as soon as the planner finds it (before
the rest of the first population is decoded) and every better plan at a generation's end, so a
run folder holds its best plan so far from then on; given the run's deadline
(:meth:`HtnChoices.stop_at`), every decoding stops at it (the first plan's search too, which then
fails saying so), and a generation cut short by it keeps the children decoded before it (a
decoding the deadline cut has no plan, and the loop drafts no more children).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from evolve import defaults
from evolve.fitness.base import Fitness
from evolve.fitness.evaluation import evaluate_plan
from evolve.model.errors import InfeasibleProblem, RunFailed, UsageError
from evolve.model.fingerprint import fingerprint
from evolve.model.plan import Plan, Task, plan_hash
from evolve.problems.htn.decomposition import Choice, Decomposition, Genome, NoPlan
from evolve.problems.htn.fallback import DecompositionFallback
from evolve.problems.htn.hddl import GOAL_OPERATOR, ROOT_TASK
from evolve.problems.htn.hddl_plans import ipc_plan, lifted_guide
from evolve.problems.htn.heuristic import warm_up
from evolve.problems.htn.lns import Memo, neighbour
from evolve.problems.htn.memory import MemoryGuard
from evolve.problems.htn.planner import Learned, Planner
from evolve.problems.htn.problem import HtnProblem, to_plan
from evolve.search.algorithm import Candidate, EventSink
from evolve.search.develop import Development
from evolve.search.family import BestSink, Request, Workers
from evolve.search.loop import Evaluator, Search
from evolve.search.options import SearchOptions
from evolve.search.ranking import Ranking
from evolve.search.representation import Develop, Offspring, child_rng

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


REDECODED = 64
"""Parents' decompositions :meth:`HtnChoices.parent_tree` keeps (a memo: the oldest go first)."""


class HtnChoices:
    """The :class:`~evolve.search.representation.Representation` of an HTN domain's
    decompositions: a genome is the planner's choices, decoded by a run of the planner.
    ``on_best`` hears each better plan (see the module docstring); ``timed``, a run with a time
    budget, has no node bound (:meth:`at_bound`); ``memory`` stops every decoding once the
    machine's free memory runs low (default: :class:`~evolve.problems.htn.memory.MemoryGuard`'s)."""

    crossover_rate: float | None = CROSSOVER_RATE
    improves = False

    def __init__(self, problem: HtnProblem, fallback: DecompositionFallback | None = None,
                 on_best: BestSink | None = None, timed: bool = False,
                 memory: MemoryGuard | None = None, steps: Sequence[str] = ()) -> None:
        self.problem = problem
        self.steps = tuple(steps)
        """A plan found before grounding (:mod:`~evolve.problems.htn.lifted`), its ground
        actions in order: the first plan is that one when this domain decomposes to it."""
        self.memory = memory if memory is not None else MemoryGuard()
        self.domain = problem.htn()
        self.hddl = self.domain.goal == ROOT_TASK and GOAL_OPERATOR in self.domain.operators
        self.fallback = fallback
        self.on_best = on_best
        self.timed = timed
        self.written: str | None = None
        """The hash of the plan ``on_best`` heard last."""
        self.trees: dict[str, Decomposition] = {}
        """The decompositions of the population's plans, by plan hash (for ``on_best``)."""
        self.learned = Learned()
        self.reported = 0
        self.planner = Planner(self.domain, fallback, self.learned, self.memory)
        self.budget: int | None = None
        self.first_depth: int | None = None
        self.spent = 0
        """Nodes the decodings after the first plan have searched (see :meth:`at_bound`)."""
        self.allowance: int | None = None
        self.redecoded: dict[Genome, Decomposition | None] = {}
        """Parents' decompositions for the large-neighbourhood step (:meth:`parent_tree`)."""
        self.memo = Memo()
        """Sub-plans the large-neighbourhood steps found (a memo only: see
        :mod:`~evolve.problems.htn.lns`)."""

    def decode(self, genome: Genome, rng: np.random.Generator | None, parents: tuple[str, ...],
               operator: str) -> Offspring:
        """The planner's decomposition of ``genome`` as a plan; no plan (``None``) when the
        deadline stopped it, an empty plan when the domain or a limit allowed none."""
        outcome = self.planner.plan(genome, RandomChooser(rng) if rng is not None else None,
                                    max_nodes=self.budget, first_depth=self.first_depth)
        if self.budget is not None:
            self.spent += outcome.nodes
        return self.offspring(outcome, genome, parents, operator)

    def offspring(self, outcome: Decomposition | NoPlan, genome: Genome, parents: tuple[str, ...],
                  operator: str) -> Offspring:
        meta: dict[str, Any] = {}
        if isinstance(outcome, NoPlan):
            meta["htn"] = {"no_plan": str(outcome), "nodes": outcome.nodes, "exhausted": outcome.exhausted}
            plan = None if outcome.stopped else Plan()
            return Offspring(plan, parents, operator, meta, genome=genome)
        meta["htn"] = {"choices": genome_doc(outcome.genome), "nodes": outcome.nodes,
                       "depth_limit": outcome.limit}
        return Offspring(to_plan(self.domain, outcome), parents, operator, meta, genome=outcome.genome,
                         detail=outcome)

    def first(self, size: int, seed: int, develop: Develop) -> list[Offspring]:
        """The planner's own first plan (file order, handed to ``on_best`` at once), then random
        decompositions while new ones can be found (a small domain may have fewer plans than the
        population) and the deadline allows. With :attr:`steps`, their decomposition comes first
        (handed to ``on_best`` before the planner's own search, which then gets at most
        :data:`~evolve.defaults.HTN_OWN_FIRST_NODES` nodes), and both join the population, the
        shorter first."""
        self.budget = self.first_depth = None
        followed = self.followed()
        if followed is not None:  # on disk at once; the planner's own first plan may still be shorter
            self.tell_best(followed.plan, followed.detail)
            self.budget = defaults.HTN_OWN_FIRST_NODES
        own = self.decode((), None, (), "htn_first")
        self.spent = 0
        made = [own]
        if followed is not None:
            assert followed.plan is not None
            mine = own.plan
            if mine is None or not mine.tasks or plan_hash(mine) == plan_hash(followed.plan):
                made = [followed]
            else:  # the shorter plan first: it is the one on disk
                made = [own, followed] if len(mine.tasks) < len(followed.plan.tasks) else [followed, own]
        self.tell_best(made[0].plan, made[0].detail)
        # the decodings' budgets scale with the planner's own effort, not the followed plan's few nodes
        first_nodes = max(own.meta["htn"]["nodes"], made[0].meta["htn"]["nodes"])
        self.first_depth = made[0].meta["htn"].get("depth_limit")  # the others start where it was found
        self.budget = min(self.domain.max_nodes, max(defaults.HTN_DECODE_MIN_NODES,
                                                     defaults.HTN_DECODE_FACTOR * first_nodes))
        self.allowance = max(defaults.HTN_SEARCH_MIN_NODES, defaults.HTN_SEARCH_FACTOR * first_nodes)
        seen = {plan_hash(child.plan or Plan()) for child in made}
        for attempt in range(2 * size):
            if len(made) >= size or self.out_of_time():
                break
            child = self.decode((), child_rng(seed, 0, attempt), (), "htn_random")
            if child.plan is None:
                break  # the deadline cut it
            digest = plan_hash(child.plan)
            if digest not in seen:
                seen.add(digest)
                made.append(child)
        if all(c.plan is None or not c.plan.tasks for c in made):
            if made[0].meta["htn"]["exhausted"]:
                raise PlanBudgetError(self.no_plan_message(made[0]))
            raise NoPlanError(self.no_plan_message(made[0]))
        return made

    def followed(self) -> Offspring | None:
        """The decomposition of :attr:`steps`, when there are steps and this domain makes them
        in at most :data:`~evolve.defaults.HTN_FOLLOW_NODES` nodes a step."""
        if not self.steps:
            return None
        outcome = self.planner.follow(lifted_guide(self.steps),
                                      defaults.HTN_FOLLOW_NODES * (len(self.steps) + 1))
        if isinstance(outcome, NoPlan):
            return None
        return self.offspring(outcome, (), (), "htn_lifted")

    def no_plan_message(self, child: Offspring) -> str:
        text = f"{self.domain.source}: htn: {child.meta['htn']['no_plan']}"
        rejected = [r for r in self.learned.records if not r.get("accepted")]
        if rejected:
            last = rejected[-1]
            text += f"; the fallback's proposal for {last['task']} was rejected ({last['rejected']}: " \
                    f"{last.get('detail', '')})"
        return text

    def tell_best(self, plan: Plan | None, tree: Decomposition | None) -> None:
        """Hand ``plan`` to ``on_best`` unless it was the last one handed, with, for a grounded
        HDDL problem, its decomposition in the competition's plan format (None otherwise)."""
        if self.on_best is None or plan is None or not plan.tasks or plan_hash(plan) == self.written:
            return
        self.on_best(plan, ipc_plan(self.domain, tree) if self.hddl and tree is not None else None)
        self.written = plan_hash(plan)

    def crossover(self, a: Genome, b: Genome, rng: np.random.Generator) -> tuple[Genome, str] | None:
        return crossover(a, b, rng), "crossover"

    def mutate(self, genome: Genome, rng: np.random.Generator) -> tuple[Genome, str] | None:
        """With probability :data:`~evolve.defaults.HTN_LNS_RATE`, a large-neighbourhood step
        (:func:`~evolve.problems.htn.lns.neighbour`: subtrees of the parent's plan re-planned for
        fewer actions) when the parent's decomposition is known and one is found; else one choice
        changed (:func:`mutate`)."""
        if rng.random() < defaults.HTN_LNS_RATE:
            tree = self.parent_tree(genome)
            if tree is not None:
                shorter, nodes = neighbour(self.planner, tree, rng, self.memo)
                if self.budget is not None:
                    self.spent += nodes
                if shorter is not None:
                    return shorter, "lns"
        changed = mutate(genome, rng)
        return None if changed is None else (changed, "choice")

    def parent_tree(self, genome: Genome) -> Decomposition | None:
        """The decomposition a large-neighbourhood step re-plans: the parent's genome decoded
        again without a random stream, a function of the genome and the checkpointed limits
        alone, so a resumed run steps exactly as an unbroken one (the decompositions its
        children's decodings made are not in a checkpoint). Remembered for the survivors, and
        not charged to the node bound, for the same reason."""
        if genome not in self.redecoded:
            outcome = self.planner.plan(genome, None, max_nodes=self.budget, first_depth=self.first_depth)
            if isinstance(outcome, NoPlan) and outcome.stopped:
                return None  # the deadline (or the memory) cut it: not a property of the genome
            while len(self.redecoded) >= REDECODED:
                del self.redecoded[next(iter(self.redecoded))]
            self.redecoded[genome] = None if isinstance(outcome, NoPlan) else outcome
        return self.redecoded[genome]

    def notes(self, digest: str, child: Offspring) -> dict[str, Any]:
        """What the fallback was asked since the last event, also by decodes that made no
        candidate (a retried copy): it rides on the next candidate. The child's decomposition
        is kept for its plan (the first one scored for it)."""
        if child.detail is not None:
            self.trees.setdefault(digest, child.detail)
        if len(self.learned.records) <= self.reported:
            return {}
        asked = self.learned.records[self.reported:]
        self.reported = len(self.learned.records)
        return {"fallback": asked}

    def ranked(self, population: Sequence[Candidate]) -> None:
        """Forget the decompositions of plans no longer in the population; hand a better best
        plan to ``on_best``."""
        plans = {c.hash for c in population}
        self.trees = {k: v for k, v in self.trees.items() if k in plans}
        self.tell_best(population[0].plan, self.trees.get(population[0].hash))

    def stop_at(self, deadline: float) -> None:
        self.planner.deadline = deadline

    def out_of_time(self) -> bool:
        return self.planner.past_deadline()

    def at_bound(self) -> str | None:
        """The search over method choices stops once its decodings have searched
        :data:`~evolve.defaults.HTN_SEARCH_FACTOR` times the first plan's nodes (at least
        :data:`~evolve.defaults.HTN_SEARCH_MIN_NODES`): its cost stays proportional to what
        finding one plan cost, in nodes, so the same run stops at the same generation on
        any machine; the best plan kept is never worse than the first (survivors stay). A run
        with a time budget (``timed``) has no such bound: it improves its plan until the time is up.
        Either stops once the machine's free memory runs low (the best plan so far kept)."""
        if self.memory.tripped is not None:
            return f"{self.memory.describe()}: the search stopped with the best plan so far"
        if not self.timed and self.allowance is not None and self.spent >= self.allowance:
            return (f"the search over method choices searched {self.spent} nodes, "
                    f">= {defaults.HTN_SEARCH_FACTOR} x the first plan's (at least "
                    f"{defaults.HTN_SEARCH_MIN_NODES})")
        return None

    def state(self) -> dict[str, Any]:
        """A snapshot (see :meth:`~evolve.search.algorithm.Algorithm.state`): what was learned
        is copied, the rest are numbers."""
        learned = self.learned
        saver = getattr(self.fallback, "checkpoint_state", None)
        return {"learned": Learned(list(learned.methods), dict(learned.verdicts), list(learned.records)),
                "reported": self.reported, "budget": self.budget, "first_depth": self.first_depth,
                "spent": self.spent, "allowance": self.allowance,
                "fallback": saver() if callable(saver) else None}

    def restore(self, state: dict[str, Any]) -> None:
        self.learned, self.reported = state["learned"], state["reported"]
        self.budget, self.first_depth = state["budget"], state["first_depth"]
        self.spent, self.allowance = state["spent"], state["allowance"]
        self.planner = Planner(self.domain, self.fallback, self.learned, self.memory)
        loader = getattr(self.fallback, "restore_checkpoint", None)
        if callable(loader) and state.get("fallback") is not None:
            loader(state["fallback"])

    def summary(self) -> dict[str, Any]:
        """What the fallback was asked and what came of it, for the run summary."""
        records = self.learned.records
        rejected: dict[str, int] = {}
        for r in records:
            if not r["accepted"]:
                rejected[str(r["rejected"])] = rejected.get(str(r["rejected"]), 0) + 1
        usage = getattr(self.fallback, "usage_summary", None)
        return {"htn_fallback": {
            "fallback": self.fallback.name if self.fallback is not None else None,
            "asked": len(records), "accepted": sum(1 for r in records if r["accepted"]),
            "rejected_by_reason": dict(sorted(rejected.items())),
            "learned_methods": [m.name for m in self.learned.methods],
            **({"llm": usage()} if callable(usage) else {})}}


def htn_search(problem: HtnProblem, *, evaluator: Evaluator, ranking: Ranking,
               options: SearchOptions, on_event: EventSink | None = None,
               fallback: DecompositionFallback | None = None, on_best: BestSink | None = None,
               steps: Sequence[str] = ()) -> Search:
    """The engine's one loop (:class:`~evolve.search.loop.Search`) over an HTN domain's
    decompositions (:class:`HtnChoices`), its first plan ``steps`` when given and found."""
    choices = HtnChoices(problem, fallback, on_best, timed=options.max_seconds is not None, steps=steps)
    return Search(problem, representation=choices, evaluator=evaluator, ranking=ranking,
                  options=options, on_event=on_event)


class HtnFamily:
    """The :class:`~evolve.search.family.Family` of HTN domains: searched by
    :func:`htn_search`, asking ``request.fallback`` for decompositions no method covers."""

    name = "htn"

    def claims(self, request: Request) -> bool:
        if not isinstance(request.problem, HtnProblem):
            return False
        if request.seeds:
            raise UsageError("seed plans are for the plan search; an HTN domain is searched by decomposition")
        return True

    def resolve(self, request: Request) -> Request:
        return request

    def identity(self, request: Request) -> str:
        """The algorithm, fallback and domain (the problem document holds only its operators
        as tools)."""
        assert isinstance(request.problem, HtnProblem)
        domain = request.problem.htn()
        text = repr((domain.methods, sorted(domain.operators.items()), domain.state, domain.goal,
                     domain.max_depth, domain.max_nodes))
        fallback = request.fallback
        followed = f":{fingerprint(repr(request.steps))}" if request.steps else ""
        return (f"{OPERATOR}:{fallback.name if fallback is not None else 'none'}:{fingerprint(text)}"
                f"{followed}")

    def development(self, request: Request) -> Development | None:
        return None  # decoding runs in this process, in child order (see the module docstring)

    def prepare(self, request: Request, fitnesses: Sequence[Fitness]) -> None:
        """The planner's heuristic and the objectives' kernels (on a one-step plan) compiled."""
        problem = request.problem
        if problem.tools:
            warm_up()
            evaluate_plan(problem, Plan(tasks=(Task(id="t1", tool=next(iter(problem.tools))),)), fitnesses)

    def build(self, request: Request, workers: Workers, ranking: Ranking, options: SearchOptions,
              emit: EventSink, on_best: BestSink) -> Search:
        assert isinstance(request.problem, HtnProblem)
        return htn_search(request.problem, evaluator=workers, ranking=ranking, options=options,
                          on_event=emit, fallback=request.fallback, on_best=on_best, steps=request.steps)
