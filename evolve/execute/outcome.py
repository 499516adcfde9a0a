"""What a run of a plan came to: ``outcome.json``, and the PlanDiff of every revision.

Everything here is read from the journal, so an outcome written after a crash and a resume is
the outcome of the whole run, not of its last session.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from evolve.execute.journal import CallRow, Journal, Revision
from evolve.execute.people import decisions, pending, waited
from evolve.execute.records import MADE, CallStatus, TaskRow, Verdict
from evolve.execute.state import RunState
from evolve.model.plan import Plan
from evolve.model.problem import Problem
from evolve.model.status import TaskStatus
from evolve.model.validate import produced_by


class Reason(StrEnum):
    """Why a run ended (``outcome.json``'s ``reason``)."""

    GOAL_MET = "goal_met"
    """The one success."""
    TASK_FAILED = "task_failed"
    """A task failed for good under ``fail_plan`` (or ``retry`` with its retries spent)."""
    GOAL_UNREACHABLE = "goal_unreachable"
    """Nothing is left to run and a criterion was not made (e.g. its producer was skipped)."""
    STEP_BUDGET = "step_budget"
    """``--max-steps`` spent."""
    REPLAN_BUDGET = "replan_budget"
    """``--max-replans`` spent."""
    NO_PLAN = "no_plan"
    """The replanner found no valid, complete plan."""
    LOOP_DETECTED = "loop_detected"
    """The replanner proposed a plan it had proposed before."""
    WAITING = "waiting"
    """Nothing can go on until a person decides (the run's ``status`` is ``waiting``, not over)."""
    DEADLINE = "deadline"
    """The problem's ``limits.deadline_s`` spent."""
    LLM_BUDGET = "llm_budget"
    """The problem's ``limits.max_llm_calls`` spent."""


class RunStatus(StrEnum):
    """Where a run stands (``outcome.json``'s ``status``, and what ``evolve serve`` and the
    reports show of a run)."""

    COMPLETED = "completed"
    """Its goal was met (:attr:`Reason.GOAL_MET`)."""
    WAITING = "waiting"
    """Not over: it waits for a person (:attr:`Reason.WAITING`); ``--resume`` goes on."""
    FAILED = "failed"
    """Over for any other reason."""
    RUNNING = "running"
    """No outcome yet: a session is going on (or was cut off before it wrote one)."""


REASONS: Final[tuple[Reason, ...]] = tuple(Reason)
BUDGETS: Final[frozenset[Reason]] = frozenset(
    {Reason.STEP_BUDGET, Reason.REPLAN_BUDGET, Reason.DEADLINE, Reason.LLM_BUDGET})
"""Stops that spend a budget: after the goal was met, the run is still a success."""
REOPENED: Final[frozenset[Reason]] = frozenset({Reason.STEP_BUDGET, Reason.REPLAN_BUDGET, Reason.DEADLINE})
"""The budgets that new limits may lift (``--resume`` with ``--max-steps``, ``--max-replans`` or a
new deadline): such a run goes on when resumed (if they do not lift it, it stops again at once,
for the same reason)."""


def run_status(reason: Reason) -> RunStatus:
    """The status of a run that ended for ``reason``: only the goal met completes it, and a run
    that waits for a person is not over."""
    if reason == Reason.GOAL_MET:
        return RunStatus.COMPLETED
    return RunStatus.WAITING if reason == Reason.WAITING else RunStatus.FAILED


@dataclass(frozen=True)
class Stop:
    """Why the loop stops before nothing is left to do: one of :data:`REASONS` and what happened."""

    reason: Reason
    message: str


def criteria_made(
    problem: Problem, plan: Plan, status: Mapping[str, str], outputs: Mapping[str, Mapping[str, Any]]
) -> dict[str, str | None]:
    """Each criterion and the done task that made it (``None``: not made)."""
    made: dict[str, str | None] = {c: None for c in problem.criteria}
    for task in plan.tasks:
        if status.get(task.id) != TaskStatus.DONE:
            continue
        out = outputs.get(task.id, {})
        for fact in produced_by(problem, task) or ():
            if fact in made and made[fact] is None and fact in out:
                made[fact] = task.id
    for fact in problem.criteria:
        if fact in problem.initial_set():
            made[fact] = made[fact] or "(initial)"
    return made


def verdict(made: Mapping[str, str | None], stop: Stop | None,
            unmet: Sequence[str] = ()) -> tuple[Reason, str]:
    """The run's reason and message: a budget spent after the goal was met is still a success.

    ``unmet`` are goals judged outside the criteria (an HTN domain's goal in the replayed world,
    :func:`evolve.execute.htn.goal_unmet`): the goal is met only when both are empty."""
    missing = [c for c, tid in made.items() if tid is None] + list(unmet)
    if stop is not None and stop.reason not in BUDGETS:
        return stop.reason, stop.message
    if not missing:
        note = f" ({stop.message}, after the goal was met)" if stop else ""
        return Reason.GOAL_MET, f"every criterion made: {', '.join(made) or '-'}{note}"
    if stop is not None:
        return stop.reason, stop.message
    return Reason.GOAL_UNREACHABLE, f"nothing left to run and not made: {', '.join(missing)}"


@dataclass(frozen=True)
class PlanDiff:
    """One revision of the plan: what it removed (invalidated), added and revised, and why.

    The audit trail of a replan: ``base_version``, the revision the patch was made against (a
    patch applies to the revision it was written for, or not at all), and ``evidence``, what
    caused it (the task, the failed assumption or error, the values observed), so a reader of
    the outcome sees why the plan changed and on which observation."""

    revision: int
    removed: tuple[str, ...]
    added: tuple[str, ...]
    revised: tuple[str, ...]
    reason: str
    base_version: int | None = None
    evidence: Mapping[str, Any] | None = None

    @classmethod
    def of(cls, revision: int, patch: Mapping[str, Any], reason: str) -> PlanDiff:
        base = patch.get("base_version")
        evidence = patch.get("evidence")
        return cls(
            revision=revision,
            removed=tuple(patch.get("invalidate", ())),
            added=tuple(t["id"] for t in patch.get("add", ())),
            revised=tuple(u["id"] for u in patch.get("update", ())),
            reason=reason,
            base_version=base if isinstance(base, int) else None,
            evidence=dict(evidence) if isinstance(evidence, Mapping) else None,
        )

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "revision": self.revision,
            "removed": list(self.removed),
            "added": list(self.added),
            "revised": list(self.revised),
            "reason": self.reason,
        }
        if self.base_version is not None:
            doc["base_version"] = self.base_version
        if self.evidence is not None:
            doc["evidence"] = dict(self.evidence)
        return doc


def writes_prevented(rows: Mapping[str, TaskRow], calls: Sequence[CallRow]) -> int:
    """Writes the run did not make twice: a write reconciled instead of repeated, and a write a
    replan invalidated before it ran (no call made for it), unless its tool wrote anyway later
    in the run (the replan put the write back, so none was prevented). Refused writes are
    counted apart, from the events."""
    called = {c.task_id for c in calls}
    written = {c.tool for c in calls if c.risk == "write" and c.status in MADE}
    invalidated = sum(1 for r in rows.values() if r.status == TaskStatus.INVALIDATED and r.risk == "write"
                      and r.task_id not in called and r.tool not in written)
    return invalidated + sum(1 for c in calls if c.status == CallStatus.RECONCILED)


def build_outcome(
    journal: Journal,
    problem: Problem,
    *,
    status: RunStatus,
    reason: Reason,
    message: str,
    criteria: Mapping[str, str | None],
    plan: dict[str, Any],
    elapsed: float,
    replans_tried: int,
    state: RunState | None = None,
    now_wall: float = 0.0,
    argfills: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """``outcome.json``'s content (see the README's *Running a plan*); ``argfills``: the rows of
    the run's ``argfill.jsonl``."""
    meta = journal.meta()
    rows = journal.tasks()
    calls = journal.calls()
    revisions = journal.revisions()
    by_risk = {"read": 0, "write": 0, "approval": 0}
    for call in calls:
        by_risk[call.risk] = by_risk.get(call.risk, 0) + 1
    diffs = [PlanDiff.of(r.revision, r.patch or {}, r.reason or "").to_dict() for r in revisions[1:]]
    options = meta.get("options", {})
    people = state or RunState()
    made = decisions(people)
    tool_llm = sum(problem.tools[c.tool].llm_calls for c in calls if c.tool in problem.tools)
    refused = sum(1 for e in journal.events() if e.get("event") == "step.error" and e["kind"] == "refused")
    return {
        "status": status,
        "reason": reason,
        "message": message,
        "steps": len(calls) + replans_tried,
        "replans": replans_tried,
        "max_steps": options.get("max_steps"),
        "max_replans": options.get("max_replans"),
        "revisions": diffs,
        "fallbacks": fallbacks(meta, revisions),
        "calls_by_risk": by_risk,
        "calls": len(calls),
        "reconciled": sum(1 for c in calls if c.status == CallStatus.RECONCILED),
        "unknown": sorted(r.task_id for r in rows.values() if r.status == TaskStatus.UNKNOWN),
        "criteria": dict(criteria),
        **({"hoisted_decisions": meta["decisions"]} if "decisions" in meta else {}),
        "arg_fills": [arg_fill(row) for row in argfills],
        "tasks": {
            r.task_id: {
                "tool": r.tool,
                "risk": r.risk,
                "status": r.status,
                "revision": r.revision,
                "attempts": r.attempts,
                "start": r.started,
                "finish": r.finished,
                "planned_start": r.planned_start,
                "planned_finish": r.planned_finish,
                "error": r.error,
            }
            for r in rows.values()
        },
        "plan": plan,
        "excluded_tools": meta.get("excluded", []),
        "simulate": bool(meta.get("simulate")),
        "seed": options.get("seed"),
        "clock": "virtual" if meta.get("simulate") else "wall",
        "elapsed": round(elapsed, 6),
        "problem": problem.name,
        "pending": pending(people),
        "decisions": made,
        "rejected_actions": [d for d in made if d["verdict"] == Verdict.REJECTED],
        "waiting_s": waited(people, now_wall),
        # what limits.max_llm_calls counted, by purpose (the run's own from the journal)
        "model_calls": {"tools": tool_llm, "replan": 0, "decide": 0, "argfill": 0, **journal.model_calls()},
        "duplicate_writes_prevented": writes_prevented(rows, calls) + refused,
    }


def fallbacks(meta: Mapping[str, Any], revisions: Sequence[Revision]) -> list[dict[str, Any]]:
    """The revisions that are the problem's template because the planner gave no valid plan
    (``reason: template_fallback``): revision 0 for the first plan, a later one for a replan."""
    found = [{"revision": 0, **meta["fallback"]}] if "fallback" in meta else []
    found += [{"revision": r.revision, **r.patch["fallback"]} for r in revisions[1:]
              if r.patch and "fallback" in r.patch]
    return found


def arg_fill(row: Mapping[str, Any]) -> dict[str, Any]:
    """One ``argfill.jsonl`` row as ``outcome.json`` shows it."""
    accepted = row.get("args") is not None
    return {"task": row.get("task"), "attempt": row.get("attempt"), "args": row.get("args"),
            "source": "cache" if row.get("cached") else "model", "accepted": accepted,
            **({} if accepted else {"refused": row.get("refused"), "detail": row.get("detail", "")})}
