"""Replanning: the search, run again on the problem as it now stands, and its plan as a patch.

When a task fails under ``on_failure: replan`` or an ``assumes`` turns out false, what is known
has changed: the outputs of done tasks are facts now, and a tool that failed for good (or whose
premise was wrong) is no longer to be used in this run. :func:`situation` states that problem;
a :class:`Replanner` proposes a plan for it (the plan search, or the LLM operator); and
:func:`translate` turns the proposal back into the run's terms, as a patch of the live plan:
``invalidate`` the pending tasks it no longer needs, ``add`` new ones, ``update`` kept ones
whose deps moved. Done tasks keep their outputs; invalidated tasks stay in the journal and
never run. The executor then checks the patched plan with the validator like any plan.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from evolve import defaults
from evolve.execute.htn import HtnNow, htn_now, plan_htn
from evolve.fitness.builtin import DEFAULT_OBJECTIVES
from evolve.fitness.evaluation import evaluate_plan
from evolve.fitness.registry import resolve_all
from evolve.model.evaluation import Resolver, holds
from evolve.model.expression import ExpressionError, parse_expression
from evolve.model.graph import topological_order, upstream
from evolve.model.keys import is_template
from evolve.model.patch import renamed
from evolve.model.plan import Plan, Task, parse_ref
from evolve.model.problem import Limits, Problem
from evolve.model.status import ENDED, TaskStatus
from evolve.model.validate import produced_by
from evolve.problems import default_operators
from evolve.run.folder import run_search
from evolve.search.algorithm import Candidate
from evolve.search.loop import ProposalContext, Proposer
from evolve.search.options import SearchOptions
from evolve.search.ranking import Ranking


@dataclass(frozen=True)
class Situation:
    """The problem as it now stands, and what the run knows.

    ``producers`` maps each fact a done task made to that task (the first one, in plan order);
    ``current`` is the live plan's pending part in ``problem``'s terms (reads of done tasks'
    outputs become ``$fact``), the parent an LLM replanner edits.
    """

    problem: Problem
    producers: Mapping[str, str]
    current: Plan
    excluded: tuple[str, ...]
    reason: str
    given: frozenset[str] = frozenset()
    """The facts initial before the run began."""
    htn: HtnNow | None = None
    """For a plan of an HTN domain: the world its done steps left (it is replanned from there by
    the HTN planner, whichever replanner is asked)."""
    failed: Task | None = None
    """The task whose failure (or false ``assumes``) asked for this replan, when ``reason`` names
    one (the executor's reasons begin with the task's id)."""
    done: tuple[Task, ...] = ()
    """The live plan's done tasks, in plan order."""
    outputs: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """The done tasks' outputs by task id: the partial results a replanner may build on."""


def made_facts(problem: Problem, task: Task, outputs: Mapping[str, Any] | None) -> list[str]:
    """The facts a done task made: those it declares (or its tool's) that it returned."""
    declared = produced_by(problem, task) or ()
    return [fact for fact in declared if outputs is not None and fact in outputs]


def situation(
    problem: Problem,
    live: Plan,
    status: Mapping[str, str],
    outputs: Mapping[str, Mapping[str, Any]],
    excluded: Iterable[str],
    reason: str,
) -> Situation:
    producers: dict[str, str] = {}
    for task in live.tasks:
        if status.get(task.id) == TaskStatus.DONE:
            for fact in made_facts(problem, task, outputs.get(task.id)):
                producers.setdefault(fact, task.id)
    known = [f for f in producers if f not in problem.initial_set()]
    excluded_set = set(excluded)
    kept = sum(1 for t in live.tasks if status.get(t.id) in ENDED)
    max_tasks = problem.limits.max_tasks
    limits = Limits(
        max_parallel=problem.limits.max_parallel,
        max_tasks=None if max_tasks is None else max(1, max_tasks - kept),
    )
    now = Problem(
        tools={name: tool for name, tool in problem.tools.items() if name not in excluded_set},
        initial=(*problem.initial, *known),
        criteria=tuple(c for c in problem.criteria if c not in producers and c not in problem.initial_set()),
        scopes=problem.scopes,
        limits=limits,
        resources=dict(problem.resources),
        policy=problem.policy,
        template=None,
        name=problem.name,
        objective=problem.objective,
    )
    current = []
    for task in live.tasks:
        if status.get(task.id) != TaskStatus.PENDING:
            continue
        inputs = {}
        for key, value in task.inputs.items():
            ref = parse_ref(value)
            inputs[key] = (
                f"${ref.fact}"
                if ref is not None and ref.task is not None and status.get(ref.task) == TaskStatus.DONE
                else value
            )
        deps = tuple(d for d in task.deps if status.get(d) == TaskStatus.PENDING)
        current.append(
            Task(
                id=task.id,
                tool=task.tool,
                deps=deps,
                inputs=inputs,
                outputs=task.outputs,
                idempotency_key=task.idempotency_key,
                name=task.name,
            )
        )
    done = tuple(t for t in live.tasks if status.get(t.id) == TaskStatus.DONE)
    return Situation(
        problem=now,
        producers=producers,
        current=Plan(tasks=tuple(current)),
        excluded=tuple(sorted(excluded_set)),
        reason=reason,
        given=problem.initial_set(),
        htn=htn_now(problem, live, status, outputs),
        failed=live.by_id().get(reason.split(" ", 1)[0]),
        done=done,
        outputs={t.id: dict(outputs.get(t.id) or {}) for t in done},
    )


def htn_proposal(situation: Situation, folder: Path) -> Proposal | None:
    """The HTN planner's plan from the world as it is: the domain owns structure, order and
    backtracking, so an HTN plan is never replanned by editing its task graph."""
    assert situation.htn is not None
    made = plan_htn(situation.htn, set(situation.excluded), folder)
    if made.plan is None:
        return None
    return Proposal(plan=made.plan, source="htn", folder=str(folder), note=made.note)


def last_error(situation: Situation) -> dict[str, Any]:
    """What a replanner is told went wrong: the failed step (its task, or ``None``), the error
    text, and the partial results (each done task's outputs)."""
    failed = situation.failed
    return {
        "failed_step": None if failed is None else failed.to_dict(),
        "error": situation.reason,
        "partial_results": {tid: dict(out) for tid, out in situation.outputs.items()},
    }


@dataclass(frozen=True)
class Proposal:
    """A replanner's answer: a plan in the situation's terms, and where its evidence is."""

    plan: Plan
    source: str
    folder: str | None = None
    note: str = ""
    base_version: int | None = None
    """The revision the replanner says it planned against (``None``: the one it was asked
    about). One that is not the live revision is a stale patch, and is refused."""


class Replanner(Protocol):
    name: str

    def propose(self, situation: Situation, revision: int, seed: int, folder: Path) -> Proposal | None:
        """A plan that is valid and complete for ``situation.problem``, or ``None`` if none was found."""


@runtime_checkable
class Metered(Protocol):
    """A replanner whose proposals are model calls, which ``limits.max_llm_calls`` bounds: how
    many a replan may make (counted before it is asked), and how many the last one made."""

    spent: int

    def model_calls_needed(self, situation: Situation, left: int | None) -> int:
        """The most model calls proposing a plan for ``situation`` makes when at most ``left``
        may be made (``None``: no budget). A replanner that can do with fewer (fewer answers
        asked for) says so and keeps to it in the :meth:`propose` that follows; more than
        ``left`` means it cannot propose within the budget (the run stops ``llm_budget``)."""


@runtime_checkable
class Refusing(Protocol):
    """A replanner that checks its own proposals (a planner whose answers go back to it with the
    validator's errors): ``refused`` says why the last :meth:`~Replanner.propose` that found no
    plan refused its answers (empty: it found one, or gave up, e.g. an empty plan). Refused
    answers spend the replan, and the run asks again while replans are left: a planner that keeps
    returning the same broken plan ends ``replan_budget``, not ``no_plan``."""

    refused: tuple[str, ...]


class SearchReplanner:
    """The plan search (``evolve run``'s engine) on the problem as it now stands; its run folder
    is kept under the execution's folder (``replans/r<revision>/``) as the evidence."""

    name = "search"

    def __init__(
        self,
        generations: int = defaults.REPLAN_GENERATIONS,
        population: int = defaults.POPULATION,
        keep: int = defaults.KEEP,
    ) -> None:
        self.generations = generations
        self.population = population
        self.keep = keep

    def propose(self, situation: Situation, revision: int, seed: int, folder: Path) -> Proposal | None:
        if situation.htn is not None:
            return htn_proposal(situation, folder)
        if not situation.problem.criteria:
            return Proposal(plan=Plan(), source=self.name, note="every criterion is already made")
        options = SearchOptions(
            generations=self.generations, population=self.population, keep=self.keep, seed=seed, jobs=1
        )
        # a search a killed session left in its folder is made again: the same seed, the same plan
        outcome = run_search(situation.problem, options=options, out_dir=folder, overwrite=True)
        best = outcome.result.best
        if not best.evaluation.feasible:
            return None
        return Proposal(
            plan=best.plan,
            source=self.name,
            folder=str(folder),
            note=f"{len(best.plan.tasks)} tasks, {outcome.result.evaluations} evaluations",
        )


class ProposerReplanner:
    """A search :class:`~evolve.search.loop.Proposer` (the LLM operator) as the replanner: it is
    shown the pending part of the plan as its parent, and its reply is the same untrusted patch
    as during search; a child that is not valid and complete is no plan.

    It is :class:`Metered`: it asks for one child, which is at most one model call (the LLM
    operator's reply, from the endpoint or its reply cache: a rerun counts the same calls); the
    child says whether one was made (its ``llm`` meta)."""

    def __init__(self, proposer: Proposer) -> None:
        self.proposer = proposer
        self.name = proposer.name
        self.spent = 0

    def model_calls_needed(self, situation: Situation, left: int | None) -> int:
        return 0 if situation.htn is not None or not situation.problem.criteria else 1

    def propose(self, situation: Situation, revision: int, seed: int, folder: Path) -> Proposal | None:
        self.spent = 0
        if situation.htn is not None:
            return htn_proposal(situation, folder)
        problem = situation.problem
        if not problem.criteria:
            return Proposal(plan=Plan(), source=self.name, note="every criterion is already made")
        fitnesses = resolve_all(DEFAULT_OBJECTIVES)
        parent = Candidate(
            id="current",
            plan=situation.current,
            hash="",
            generation=revision,
            evaluation=evaluate_plan(problem, situation.current, fitnesses),
        )
        context = ProposalContext(
            ranking=Ranking.of(fitnesses, None),
            operators=default_operators(problem),
            evaluate=lambda plans: [evaluate_plan(problem, p, fitnesses) for p in plans],
            last_error=last_error(situation),
        )
        children = self.proposer.propose(problem, [parent], [0], revision, seed, context)
        self.spent = sum(1 for c in children if "llm" in c.meta)
        child = children[0].plan if children else None
        if child is None:
            return None
        if not evaluate_plan(problem, child, fitnesses).feasible:
            return None
        return Proposal(plan=child, source=self.name, note=str(children[0].meta.get("reason", "")))


def template_proposal(situation: Situation, problem: Problem) -> Proposal | None:
    """The safety net when the replanner found no plan: the problem's ``template`` (the
    engineers' fixed plan for the request class) in the situation's terms, if it is still a valid,
    complete plan for it (``None``: no template, or one that no longer fits, e.g. it needs an
    excluded tool).

    A template task that repeats a done task (the same tool and the same inputs, reads compared
    by the fact they read) is that done work: it is not run again, and the tasks after it read
    its facts. The rest is proposed as any replanner's plan is."""
    template = problem.template
    if not isinstance(template, Plan) or situation.htn is not None:
        return None
    if any(t.tool in situation.excluded for t in template.tasks):
        return None

    def as_facts(task: Task) -> str:
        reads = {k: f"${ref.fact}" if (ref := parse_ref(v)) is not None else v
                 for k, v in task.inputs.items()}
        return json.dumps([task.tool, sorted(reads.items())], default=str)

    done = {as_facts(t) for t in situation.done}
    by_id = template.by_id()
    made: set[str] = set()
    kept: list[Task] = []
    for tid in topological_order(template.dependency_map()):
        task = by_id[tid]
        if as_facts(task) in done:
            made.add(tid)
            continue
        inputs = {k: f"${ref.fact}" if (ref := parse_ref(v)) is not None and ref.task in made else v
                  for k, v in task.inputs.items()}
        kept.append(replace(task, deps=tuple(d for d in task.deps if d not in made), inputs=inputs))
    plan = Plan(tasks=tuple(kept))
    if not evaluate_plan(situation.problem, plan, resolve_all(DEFAULT_OBJECTIVES)).feasible:
        return None
    return Proposal(plan=plan, source="template", note="template_fallback")


@dataclass(frozen=True)
class Patch:
    """The patch of the live plan, and the live plan it makes; ``base_version`` the revision it
    applies to and ``evidence`` what caused it (:func:`evidence`), the replan's audit trail."""

    invalidate: tuple[str, ...]
    added: tuple[Task, ...]
    updated: tuple[Task, ...]
    plan: Plan
    base_version: int | None = None
    evidence: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "invalidate": list(self.invalidate),
            "add": [t.to_dict() for t in self.added],
            "update": [{"id": t.id, "deps": list(t.deps)} for t in self.updated],
        }
        if self.base_version is not None:
            doc["base_version"] = self.base_version
        if self.evidence is not None:
            doc["evidence"] = dict(self.evidence)
        return doc


def evidence(situation: Situation, resolve: Resolver) -> dict[str, Any]:
    """What caused a replan, for its audit trail: the task (``None`` for a replan no task asked
    for, as a rolling horizon's), the cause as the executor stated it, the assumption found
    false or the error, and the values observed: each reference of the task's ``assumes`` that
    the run knows (e.g. ``$t2.refunds``, the refund already issued), and for a task that failed,
    the inputs it read."""
    failed = situation.failed
    doc: dict[str, Any] = {"task": None if failed is None else failed.id, "cause": situation.reason}
    if failed is None:
        return doc
    doc["tool"] = failed.tool
    observed: dict[str, Any] = {}
    for text in failed.assumes:
        try:
            expr = parse_expression(text)
        except ExpressionError:
            continue
        for ref in expr.refs:
            try:
                observed[str(ref)] = resolve(ref, ())
            except (KeyError, ExpressionError):
                continue  # not known (yet): nothing was observed
        try:
            false = not holds(expr, resolve)
        except (KeyError, ExpressionError):
            false = False
        if false and "assumption" not in doc:
            doc["assumption"] = text
    if "assumption" not in doc:
        if f"{failed.id} ({failed.tool}) failed: " in situation.reason:
            doc["error"] = situation.reason.split(" failed: ", 1)[1]
        for value in failed.inputs.values():  # what the failed call was given
            read = parse_ref(value)
            if read is not None:
                try:
                    observed[str(read)] = resolve(read, ())
                except (KeyError, ExpressionError):
                    continue
    doc["observed"] = observed
    return doc


def fresh_ids(taken: Iterable[str]) -> Iterable[str]:
    """``t<n>`` ids above every numbered id ever used in the run."""
    highest = 0
    for tid in taken:
        if tid.startswith("t") and tid[1:].isdigit():
            highest = max(highest, int(tid[1:]))
    while True:
        highest += 1
        yield f"t{highest}"


def translate(
    situation: Situation,
    proposal: Plan,
    live: Plan,
    status: Mapping[str, str],
    taken: Iterable[str],
    revision: int,
) -> Patch:
    """``proposal`` (in the situation's terms) as a patch of ``live``.

    A read of a fact a done task made becomes a read of that task (and a dep on it); a proposed
    task that repeats a pending one (same tool, same inputs once translated) keeps the pending
    task's id and keys (its ``when``, ``assumes``, ``on_failure``); every other gets a fresh id,
    and a write whose idempotency key an earlier task of the run holds gets a key of its own.
    """
    taken = set(taken) | set(live.by_id())
    ids = iter(fresh_ids(taken))
    pending = [t for t in live.tasks if status.get(t.id) == TaskStatus.PENDING]
    used_keys = {t.idempotency_key for t in live.tasks if t.idempotency_key}
    by_id = proposal.by_id()
    mapping: dict[str, str] = {}
    reused: dict[str, tuple[str, ...]] = {}
    added: list[Task] = []
    for pid in topological_order(proposal.dependency_map()):
        task = by_id[pid]
        inputs: dict[str, Any] = {}
        deps: list[str] = []
        for key, value in task.inputs.items():
            ref = parse_ref(value)
            if (
                ref is not None
                and ref.task is None
                and ref.fact in situation.producers
                and ref.fact not in situation.given
            ):
                producer = situation.producers[ref.fact]
                inputs[key] = f"${producer}.{ref.fact}"
                deps.append(producer)
            elif ref is not None and ref.task is not None:
                inputs[key] = f"${mapping.get(ref.task, ref.task)}.{ref.fact}"
            else:
                inputs[key] = value
        deps.extend(mapping.get(d, d) for d in task.deps)
        deps = list(dict.fromkeys(deps))
        match = next(
            (t for t in pending if t.id not in reused and t.tool == task.tool and dict(t.inputs) == inputs),
            None,
        )
        if match is not None:
            mapping[pid] = match.id
            reused[match.id] = tuple(deps)
            continue
        new_id = next(ids)
        mapping[pid] = new_id
        wkey: str | None = task.idempotency_key
        if wkey is not None and wkey in used_keys and not is_template(wkey):  # a template names its action
            wkey = f"{wkey}@r{revision}"
        if wkey is not None:
            used_keys.add(wkey)
        moved = renamed(task, mapping)  # its when and assumes may read tasks proposed before it
        added.append(replace(moved, id=new_id, deps=tuple(deps), inputs=inputs, idempotency_key=wkey))
    added = list(situation.problem.with_catalog_failure(Plan(tasks=tuple(added))).tasks)
    invalidate = tuple(t.id for t in pending if t.id not in reused)
    gone = set(invalidate)
    updated: list[Task] = []
    tasks: list[Task] = []
    for task in live.tasks:
        if task.id in gone:
            continue
        if task.id in reused:
            # a dep on a task that failed for good would hold it forever: the proposal says
            # what the kept task waits for now
            old = (d for d in task.deps if d not in gone and status.get(d) != TaskStatus.FAILED)
            kept = tuple(dict.fromkeys([*reused[task.id], *old]))
            if set(kept) != set(task.deps):
                task = replace(task, deps=kept)
                updated.append(task)
        tasks.append(task)
    tasks.extend(added)
    tasks, dropped = carry_approvals(tasks, {t.id for t in added}, status, situation.problem)
    if dropped:
        before = {t.id: set(t.deps) for t in live.tasks}
        added = [t for t in added if t.id not in dropped]
        updated = [t for t in tasks if t.id in before and set(t.deps) != before[t.id]]
    return Patch(
        invalidate=invalidate, added=tuple(added), updated=tuple(updated), plan=Plan(tasks=tuple(tasks))
    )


def carry_approvals(
    tasks: list[Task], added: set[str], status: Mapping[str, str], problem: Problem
) -> tuple[list[Task], set[str]]:
    """``tasks`` without the approvals a replan added that approve nothing new, and their ids.

    The replanned problem knows nothing of the done tasks, so its plans put an approval before
    every write the policy guards, even a write a done approval already covers (a rolling
    horizon replans the rest of the plan right after its approval ran). Such an added approval
    would ask a person again for what they approved (or call an automatic one again): it is
    dropped when every write below it has a done approval upstream without it, and nothing reads
    it; its dependents wait for its deps instead (those they do not already wait for). A write
    whose action changed is still gated at dispatch (:func:`evolve.execute.approvals.gate`)."""

    def risk(task: Task) -> str | None:
        tool = problem.tools.get(task.tool)
        return None if tool is None else tool.risk

    dropped: set[str] = set()
    for approval in [t for t in tasks if t.id in added and risk(t) == "approval"]:
        if any(ref.task == approval.id for t in tasks for ref in t.refs()):
            continue  # its record is read: it stays
        deps = {t.id: t.deps for t in tasks}
        below = [t for t in tasks if risk(t) == "write" and approval.id in upstream(t.id, deps)]
        if not below:
            continue
        trial = without(tasks, approval)
        trial_deps = {t.id: t.deps for t in trial}
        by_id = {t.id: t for t in trial}
        if all(
            any(status.get(up) == TaskStatus.DONE and risk(by_id[up]) == "approval"
                for up in upstream(w.id, trial_deps) if up in by_id)
            for w in below
        ):
            tasks = trial
            dropped.add(approval.id)
    return tasks, dropped


def without(tasks: list[Task], gone: Task) -> list[Task]:
    """``tasks`` without ``gone``: each of its dependents waits for its deps instead (those it
    does not already wait for through another dep)."""
    deps: dict[str, Sequence[str]] = {t.id: t.deps for t in tasks if t.id != gone.id}
    out = []
    for task in tasks:
        if task.id == gone.id:
            continue
        if gone.id in task.deps:
            kept = [d for d in task.deps if d != gone.id]
            reach = set(kept).union(*(upstream(d, deps) for d in kept))
            inherited = (d for d in gone.deps if d not in reach)
            task = replace(task, deps=tuple(dict.fromkeys([*kept, *inherited])))
        out.append(task)
    return out


def signature(plan: Plan, status: Mapping[str, str]) -> str:
    """What the pending part of a plan proposes, independent of task ids: the same failing plan
    proposed twice has the same signature (reads of final tasks name them; reads of pending
    tasks name their tools)."""
    tasks = plan.by_id()

    def describe(value: Any) -> Any:
        ref = parse_ref(value)
        if ref is None or ref.task is None or ref.task not in tasks:
            return value
        if status.get(ref.task, TaskStatus.PENDING) in ENDED:
            return f"${ref.task}.{ref.fact}"
        return f"${tasks[ref.task].tool}.{ref.fact}"

    rows = sorted(
        json.dumps([t.tool, sorted((k, describe(v)) for k, v in t.inputs.items())], default=str)
        for t in plan.tasks
        if status.get(t.id, TaskStatus.PENDING) == TaskStatus.PENDING
    )
    return hashlib.blake2b("\n".join(rows).encode(), digest_size=12).hexdigest()


def pending_plan(plan: Plan, status: Mapping[str, str]) -> Plan:
    """The tasks still to run, deps among themselves (what the planned schedule and the
    longest-remaining-path order are computed on)."""
    live = {t.id for t in plan.tasks if status.get(t.id, TaskStatus.PENDING) == TaskStatus.PENDING}
    return Plan(
        tasks=tuple(
            replace(t, deps=tuple(d for d in t.deps if d in live)) for t in plan.tasks if t.id in live
        )
    )
