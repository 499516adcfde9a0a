"""Planners the agent can be given, and how their plans enter the durable executor.

A planner is any callable ``planner(goal, history, last_error) -> Plan | list[dict]``: the goal
text, the done steps with their outputs, and ``None`` for the first plan or else what went
wrong (the failed step, its error text and the partial results). Its answer is untrusted: it is
read with the plan reader and checked by the validator (and for the criteria it must make)
before anything runs, and a bad plan goes back to the planner with the validator's errors, a
bounded number of times.

The planner speaks in its own step ids. The executor never reuses a task id within a run (a
replanned step is a new task), so a step the agent submits on a replan carries its planner id
in the task's ``name`` (``[step2] computed via fallback``); :func:`planner_view` reads a
journal's plan back in the planner's ids, which is what the agent's history and plan diffs
speak. (So a planner's own task name of that form, ``[id] ...``, reads as a tag.)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from evolve import defaults
from evolve.execute.replan import Proposal, Situation
from evolve.execute.replan import last_error as replan_error
from evolve.execute.session import people_own
from evolve.execute.steps import TAG as TAG  # the tests and callers import these from here
from evolve.execute.steps import step_of as step_of
from evolve.execute.steps import tagged as tagged
from evolve.model.coverage import covered_criteria
from evolve.model.errors import InputError
from evolve.model.plan import Plan, Task, parse_ref
from evolve.model.plan_file import plan_from_dict
from evolve.model.problem import Problem
from evolve.model.validate import validate
from evolve.run.folder import run_search
from evolve.search.options import SearchOptions

History = list[dict[str, Any]]
"""The done steps, in order: ``{"id", "tool", "inputs", "outputs", "name"}`` each."""

Planner = Callable[[str, History, "dict[str, Any] | None"], "Plan | Sequence[Mapping[str, Any]]"]
"""``planner(goal, history, last_error)`` -> a plan (a :class:`Plan`, or its task list as dicts)."""


@runtime_checkable
class ModelPlanner(Protocol):
    """A planner whose every answer is a model call (:class:`~evolve.llm.draft.LLMPlanner`):
    ``calls``, the answers it was asked for so far. ``limits.max_llm_calls`` counts them: the
    agent's first plan (``plan``) and each replan (``replan``)."""

    calls: int


def answers_allowed(planner: object, attempts: int, left: int | None) -> int:
    """How many answers ``planner`` may be asked for: ``attempts``, fewer when it is a
    :class:`ModelPlanner` and only ``left`` model calls remain (0: none may be asked)."""
    if left is None or not isinstance(planner, ModelPlanner):
        return attempts
    return min(attempts, left)


def calls_of(planner: object) -> int:
    """The model calls ``planner`` made so far (0 for one that is no model)."""
    return planner.calls if isinstance(planner, ModelPlanner) else 0


def planner_view(plan: Plan) -> Plan:
    """An executor plan in the planner's step ids: a later task of a step supersedes an earlier
    one (the failed task a replan routed around), references and deps follow the ids."""
    ids = {t.id: step_of(t)[0] for t in plan.tasks}
    steps: dict[str, Task] = {}
    for task in plan.tasks:
        step, name = step_of(task)
        inputs = {}
        for key, value in task.inputs.items():
            ref = parse_ref(value)
            inputs[key] = f"${ids[ref.task]}.{ref.fact}" if ref and ref.task in ids else value
        steps.pop(step, None)  # a superseding step takes the place of the last version
        deps = tuple(dict.fromkeys(ids.get(d, d) for d in task.deps))
        steps[step] = replace(task, id=step, name=name, inputs=inputs, deps=deps)
    return Plan(tasks=tuple(steps.values()))


def read_answer(answer: object, source: str) -> Plan:
    """A planner's answer as a plan (raises :class:`InputError` naming what is malformed)."""
    if isinstance(answer, Plan):
        return answer
    if isinstance(answer, Mapping):
        return plan_from_dict(answer, source)
    if isinstance(answer, (list, tuple)):
        return plan_from_dict({"tasks": list(answer)}, source)
    raise InputError(source, "", f"expected a Plan or a list of task dicts, got {type(answer).__name__}")


def plan_errors(problem: Problem, plan: Plan, tools: Mapping[str, object],
                facts: Mapping[str, Any] | None = None) -> list[str]:
    """Why ``plan`` may not run for ``problem`` (and the run's ``facts``): the validator's errors,
    criteria no sound task makes, tools with no callable (a ``by: human`` tool needs none: a
    person answers, and the run waits for them). Empty: it may run."""
    found = validate(problem, plan, facts)
    errors = [str(e) for e in found]
    covered = set(covered_criteria(problem, plan, found))
    errors += [f"no sound task makes the criterion {c!r}" for c in problem.criteria if c not in covered]
    people = people_own(problem)
    errors += [f"{t.id}: no callable for tool {t.tool!r}" for t in plan.tasks
               if t.tool not in tools and t.tool not in people]
    return errors


@dataclass(frozen=True)
class Drafted:
    """What asking a planner came to: a plan that may run, or ``None`` and why not."""

    plan: Plan | None
    errors: tuple[str, ...] = ()
    asked: int = 0
    gave_up: bool = False
    """The planner returned no steps (as against answers the checks refused)."""


def draft(
    planner: Planner,
    goal: str,
    history: History,
    last_error: dict[str, Any] | None,
    check: Callable[[Plan], list[str]],
    attempts: int,
    source: str,
) -> Drafted:
    """Ask ``planner`` until ``check`` finds nothing wrong, at most ``attempts`` times; each retry
    carries the errors of the plan before it (``last_error["validation_errors"]``). An empty plan
    is the planner giving up: no retry."""
    error = last_error
    errors: list[str] = []
    for asked in range(1, attempts + 1):
        try:
            plan = read_answer(planner(goal, list(history), error), f"{source} (answer {asked})")
        except InputError as exc:
            errors = [str(exc)]
        else:
            if not plan.tasks:
                return Drafted(None, ("the planner returned no steps",), asked, gave_up=True)
            errors = check(plan)
            if not errors:
                return Drafted(plan, (), asked)
        error = {
            **(last_error or {"failed_step": None, "error": "", "partial_results": {}}),
            "validation_errors": list(errors),
            "error": f"the plan is not valid: {errors[0]}",
        }
    return Drafted(None, tuple(errors), attempts)


class SearchPlanner:
    """evolve's plan search as the first planner: the best plan ``evolve run`` finds for the
    problem (the goal text does not change it; the problem's criteria are the goal). Its run
    folder is the evidence of the first plan."""

    name = "search"

    def __init__(
        self,
        problem: Problem,
        folder: Path | None = None,
        *,
        generations: int = defaults.GENERATIONS,
        seed: int = defaults.SEED,
    ) -> None:
        self.problem = problem
        self.folder = folder
        self.generations = generations
        self.seed = seed

    def __call__(self, goal: str, history: History, last_error: dict[str, Any] | None) -> Plan:
        options = SearchOptions(generations=self.generations, seed=self.seed, jobs=1)
        best = run_search(self.problem, options=options, out_dir=self.folder, overwrite=True).result.best
        return best.plan if best.evaluation.feasible else Plan()


def history_of(situation: Situation) -> History:
    """The done steps of ``situation`` in planner ids, with their outputs."""
    rows = []
    for task in situation.done:
        step, name = step_of(task)
        rows.append(
            {
                "id": step,
                "tool": task.tool,
                "inputs": dict(task.inputs),
                "outputs": dict(situation.outputs.get(task.id, {})),
                "name": name,
            }
        )
    return rows


def last_error_of(situation: Situation) -> dict[str, Any]:
    """``{failed_step, error, partial_results, excluded_tools}`` of a replan, in planner ids."""
    told = replan_error(situation)
    step = told["failed_step"]
    if situation.failed is not None:
        sid, name = step_of(situation.failed)
        step = {**step, "id": sid, "name": name}
    partial = {step_of(t)[0]: told["partial_results"][t.id] for t in situation.done}
    excluded = list(situation.excluded)
    return {**told, "failed_step": step, "partial_results": partial, "excluded_tools": excluded}


def to_situation(plan: Plan, situation: Situation) -> Plan:
    """A planner's replan in the situation's terms: steps already done are dropped, reads of
    their outputs become reads of the facts they made, and every step is tagged with its id."""
    done = {step_of(t)[0] for t in situation.done}
    tasks = []
    for task in plan.tasks:
        if task.id in done:
            continue
        inputs = {}
        for key, value in task.inputs.items():
            ref = parse_ref(value)
            inputs[key] = f"${ref.fact}" if ref is not None and ref.task in done else value
        deps = tuple(d for d in task.deps if d not in done)
        tasks.append(tagged(replace(task, inputs=inputs, deps=deps), task.id))
    return Plan(tasks=tuple(tasks))


class PlannerReplanner:
    """A planner callable as the executor's replanner: it is given the goal, the history and
    the last error, and its plan, once it passes the checks, is the proposal.

    It is :class:`~evolve.execute.replan.Metered`: with a :class:`ModelPlanner` each answer is
    a model call; a replan may ask for ``attempts`` answers, fewer when fewer calls are left of
    ``limits.max_llm_calls``, and ``spent`` says how many the last one asked for."""

    def __init__(
        self,
        planner: Planner,
        goal: str,
        tools: Mapping[str, object],
        attempts: int = defaults.AGENT_PLAN_ATTEMPTS,
        name: str = "planner",
    ) -> None:
        self.planner = planner
        self.goal = goal
        self.tools = tools
        self.attempts = attempts
        self.name = name
        self.drafts: list[Drafted] = []
        self.spent = 0
        self.refused: tuple[str, ...] = ()
        """Why the last replan found no plan, when the checks refused the planner's answers
        (:class:`~evolve.execute.replan.Refusing`: the run asks again while replans are left)."""
        self.allowed: int | None = None
        """The answers the next :meth:`propose` may ask for (set by :meth:`model_calls_needed`)."""

    def model_calls_needed(self, situation: Situation, left: int | None) -> int:
        if not isinstance(self.planner, ModelPlanner) or not situation.problem.criteria:
            self.allowed = None
            return 0
        self.allowed = answers_allowed(self.planner, self.attempts, left)
        return self.allowed or self.attempts  # none allowed: it needs its attempts, past the budget

    def propose(self, situation: Situation, revision: int, seed: int, folder: Path) -> Proposal | None:
        self.spent = 0
        self.refused = ()
        attempts, self.allowed = self.allowed or self.attempts, None
        if not situation.problem.criteria:
            return Proposal(plan=Plan(), source=self.name, note="every criterion is already made")

        def check(plan: Plan) -> list[str]:
            return plan_errors(situation.problem, to_situation(plan, situation), self.tools)

        before = calls_of(self.planner)
        try:
            drafted = draft(
                self.planner,
                self.goal,
                history_of(situation),
                last_error_of(situation),
                check,
                attempts,
                f"{self.name} (revision {revision})",
            )
        finally:
            self.spent = calls_of(self.planner) - before
        self.drafts.append(drafted)
        if drafted.plan is None:
            self.refused = () if drafted.gave_up else drafted.errors
            return None
        return Proposal(
            plan=to_situation(drafted.plan, situation),
            source=self.name,
            note=f"{len(drafted.plan.tasks)} steps after {drafted.asked} answer(s)",
        )
