"""The plan-execute agent: a planner drafts the plan, the durable executor runs it and replans.

This is the library face of ``evolve execute``: the same executor, journal and run folder, so
an agent's run is journaled, resumable (run the same agent on the same ``out`` again) and has
its report. What the agent adds is the planner: any callable, asked for the first plan and, on
a failure, for the next one with the error in hand; its plans are checked before they run.
Whether the goal was met is the executor's verdict (every criterion of the problem made by a
done task), never the planner's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evolve import defaults
from evolve.agent.planner import (
    ModelPlanner,
    Planner,
    PlannerReplanner,
    SearchPlanner,
    answers_allowed,
    calls_of,
    draft,
    plan_errors,
    planner_view,
    step_of,
)
from evolve.execute.executor import ExecuteOptions
from evolve.execute.limits import spent_text
from evolve.execute.outcome import PlanDiff, Reason, RunStatus
from evolve.execute.replan import Replanner, SearchReplanner
from evolve.execute.session import JOURNAL, read_run, resume_run, start_run
from evolve.execute.tools import ToolFn
from evolve.model.errors import EvolveError
from evolve.model.patch import diff_plans
from evolve.model.plan import Plan
from evolve.model.plan_file import plan_from_dict
from evolve.model.problem import Problem
from evolve.model.status import TaskStatus
from evolve.problems import load_problem
from evolve.report import write_execution_report
from evolve.run.folder import dump_json
from evolve.run.location import make_folder, new_run_dir, runs_root


@dataclass(frozen=True)
class AgentResult:
    """How an agent's run ended.

    ``status`` is ``completed`` or ``failed``; ``reason`` one of the executor's reasons
    (``goal_met``, ``no_plan``, ``replan_budget``, ...); ``revisions`` one :class:`PlanDiff` per
    replan, in the planner's step ids (``revised``: a step the planner kept but changed);
    ``plans`` the plan of every revision in those ids; ``outputs`` each done step's outputs;
    ``out`` the run folder (journal, events, outcome, report).
    """

    status: str
    reason: str
    message: str
    revisions: tuple[PlanDiff, ...]
    plans: tuple[Plan, ...]
    outputs: Mapping[str, Mapping[str, Any]]
    out: Path
    outcome: Mapping[str, Any] = field(default_factory=dict)
    made: Mapping[str, Any] = field(default_factory=dict)
    """Each criterion made, and its value (from the task the executor credits with it)."""

    @property
    def goal_met(self) -> bool:
        return self.reason == Reason.GOAL_MET

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "reason": self.reason,
            "message": self.message,
            "revisions": [d.to_dict() for d in self.revisions],
            "plans": [p.to_dict() for p in self.plans],
            "outputs": {k: dict(v) for k, v in self.outputs.items()},
            "made": dict(self.made),
            "out": str(self.out),
        }


def step_diffs(plans: list[Plan], reasons: list[str]) -> tuple[PlanDiff, ...]:
    """The diff of each revision against the one before it, step by step."""
    diffs = []
    for revision in range(1, len(plans)):
        patch = diff_plans(plans[revision - 1], plans[revision])
        diffs.append(
            PlanDiff(
                revision=revision,
                removed=tuple(patch.get("remove", ())),
                added=tuple(t["id"] for t in patch.get("add", ())),
                revised=tuple(u["id"] for u in patch.get("update", ())),
                reason=reasons[revision],
            )
        )
    return tuple(diffs)


class PlanExecuteAgent:
    """``PlanExecuteAgent(problem, tools, planner=None).run(goal)``.

    ``problem``: a :class:`Problem` or a problem file. ``tools``: tool name -> ``fn(inputs,
    call)`` (see :mod:`evolve.execute.tools`). ``planner``: any :data:`Planner` (default: the
    plan search, :class:`SearchPlanner`). ``replanner``: who proposes a plan after a failure: a
    planner callable, an executor :class:`Replanner` (e.g. the LLM one), or ``None`` for the
    planner itself (the search when the planner is the search). ``max_steps`` counts every
    tool call and replan (``None``: derived from the first plan, see
    :func:`evolve.execute.options.step_budget`), ``max_replans`` the replans; both are hard.
    ``out``: the run folder (default: a new one under ``runs/``). ``facts``: the values of the
    problem's initial facts.
    ``horizon``: a rolling horizon of that many tasks (see :mod:`evolve.execute.horizon`): the
    replanner then plans the rest each time the committed tasks are over.
    """

    def __init__(
        self,
        problem: Problem | str | Path,
        tools: Mapping[str, ToolFn],
        planner: Planner | None = None,
        replanner: Replanner | Planner | None = None,
        max_steps: int | None = defaults.EXECUTE_MAX_STEPS,
        max_replans: int = defaults.EXECUTE_MAX_REPLANS,
        out: str | Path | None = None,
        *,
        facts: Mapping[str, Any] | None = None,
        attempts: int = defaults.AGENT_PLAN_ATTEMPTS,
        seed: int = defaults.SEED,
        timeout: float = defaults.EXECUTE_TIMEOUT,
        report: bool = True,
        on_event: Callable[[dict[str, Any]], None] | None = None,
        horizon: int | None = defaults.EXECUTE_HORIZON,
    ) -> None:
        if attempts < 1:
            raise EvolveError(f"attempts must be >= 1, got {attempts}")
        if horizon is not None and horizon < 1:
            raise EvolveError(f"horizon must be >= 1 (or None), got {horizon}")
        self.problem = problem if isinstance(problem, Problem) else load_problem(problem)
        self.tools = dict(tools)
        self.out = Path(out) if out is not None else new_run_dir(runs_root())
        self.facts = dict(facts or {})
        self.planner: Planner = planner or SearchPlanner(self.problem, self.out / "plan", seed=seed)
        self.replanner = replanner
        self.options = ExecuteOptions(
            max_steps=max_steps, max_replans=max_replans, seed=seed, timeout=timeout, horizon=horizon
        )
        self.attempts = attempts
        self.report = report
        self.on_event = on_event

    def goal_text(self, goal: str | None) -> str:
        return goal if goal is not None else "make " + ", ".join(self.problem.criteria)

    def executor_replanner(self, goal: str) -> Replanner:
        chosen = self.replanner
        if chosen is None:
            if isinstance(self.planner, SearchPlanner):
                return SearchReplanner()
            chosen = self.planner
        if hasattr(chosen, "propose"):
            return chosen  # type: ignore[return-value]
        return PlannerReplanner(chosen, goal, self.tools, self.attempts)  # type: ignore[arg-type]

    def run(self, goal: str | None = None) -> AgentResult:
        """Plan, run, replan until the goal is met or a budget or the planner gives out.

        If ``out`` already holds this agent's run, it is continued where it stopped (nothing
        done is run again, the first plan is not asked for again)."""
        text = self.goal_text(goal)
        replanner = self.executor_replanner(text)
        if (self.out / JOURNAL).is_file():
            executor = resume_run(self.out, replanner=replanner, tools=self.tools, on_event=self.on_event)
        else:
            budget = self.problem.limits.max_llm_calls
            attempts = answers_allowed(self.planner, self.attempts, budget)
            if attempts == 0:
                return self.no_first_plan((), Reason.LLM_BUDGET,
                                          f"limits.max_llm_calls {budget}: the first plan needs a "
                                          "model call and none may be made", {"plan": 0})
            before = calls_of(self.planner)
            drafted = draft(
                self.planner,
                text,
                [],
                None,
                lambda plan: plan_errors(self.problem, plan, self.tools, self.facts),
                attempts,
                "the planner",
            )
            model = isinstance(self.planner, ModelPlanner)
            spent = {"plan": calls_of(self.planner) - before} if model else {}
            plan, fallback = drafted.plan, None
            if plan is None and (template := self.template_plan()) is not None:
                # the safety net: the planner gave no valid plan, the problem's template is one
                why = f"no valid plan after {drafted.asked} answer(s)" + (
                    f": {drafted.errors[0]}" if drafted.errors else "")
                plan, fallback = template, f"{why}; the problem's template instead"
            if plan is None:
                why = f"no valid plan after {drafted.asked} answer(s): " + (
                    drafted.errors[0] if drafted.errors else "none")
                if attempts < self.attempts and drafted.asked == attempts:  # the budget cut it short
                    assert budget is not None
                    return self.no_first_plan(drafted.errors, Reason.LLM_BUDGET,
                                              f"{spent_text(budget, spent)}; {why}", spent)
                return self.no_first_plan(drafted.errors, Reason.NO_PLAN, why, spent)
            executor = start_run(
                self.problem,
                plan,
                self.out,
                plan_source="the planner" if fallback is None else "the problem's template",
                fallback=fallback,
                tools_spec=None,
                tools=self.tools,
                options=self.options,
                replanner=replanner,
                replanner_name=replanner.name,
                facts=self.facts,
                on_event=self.on_event,
                model_calls=spent,
            )
        outcome = executor.run()
        if self.report:
            write_execution_report(self.out)
        return self.result(outcome)

    def template_plan(self) -> Plan | None:
        """The problem's ``template`` when it may run as the first plan (checked as any planner's
        plan is), else ``None``."""
        template = self.problem.template
        if not isinstance(template, Plan) or plan_errors(self.problem, template, self.tools, self.facts):
            return None
        return template

    def no_first_plan(self, errors: tuple[str, ...], reason: Reason, message: str,
                      model_calls: Mapping[str, int]) -> AgentResult:
        """No plan passed the checks (``no_plan``), or the model calls ``limits.max_llm_calls``
        allows ran out first (``llm_budget``): nothing ran; the folder says why."""
        make_folder(self.out)
        outcome = {"status": RunStatus.FAILED, "reason": reason, "message": message, "errors": list(errors),
                   "model_calls": dict(model_calls)}
        (self.out / "outcome.json").write_text(dump_json(outcome))
        return AgentResult(RunStatus.FAILED, reason, message, (), (), {}, self.out, outcome)

    def result(self, outcome: Mapping[str, Any]) -> AgentResult:
        journal, _, _ = read_run(self.out)
        try:
            revisions = journal.revisions()
            rows = journal.tasks()
        finally:
            journal.close()
        plans = [planner_view(plan_from_dict(r.plan, str(self.out / JOURNAL))) for r in revisions]
        final = plan_from_dict(revisions[-1].plan, str(self.out / JOURNAL))
        steps = {t.id: step_of(t)[0] for t in final.tasks}
        outputs = {
            steps.get(tid, tid): dict(row.outputs)
            for tid, row in rows.items()
            if row.status == TaskStatus.DONE and row.outputs is not None
        }
        made = {}
        for fact, tid in (outcome.get("criteria") or {}).items():
            row = rows.get(tid) if tid else None
            if row is not None and row.outputs is not None and fact in row.outputs:
                made[fact] = row.outputs[fact]
        return AgentResult(
            status=outcome["status"],
            reason=outcome["reason"],
            message=outcome["message"],
            revisions=step_diffs(plans, [r.reason or "" for r in revisions]),
            plans=tuple(plans),
            outputs=outputs,
            out=self.out,
            outcome=dict(outcome),
            made=made,
        )
