"""People in the loop, the journal's side: what a run waits for, and a person's decision on it.

A task whose tool a person owns (``by: human`` in the catalog) does not call anything: the run
journals an :class:`~evolve.execute.records.Asked` and stops with ``status: waiting`` (exit 4).
``evolve approve``, ``reject`` and ``answer`` check the decision here (:func:`decision`) and
commit it as one :class:`~evolve.execute.records.Decided` record; the next session of the run
settles the task from it (:mod:`evolve.execute.approvals`). Everything here reads the journal or
the state folded from it; nothing calls a tool.

An approval approves an exact *action*: the writes downstream of it, each a tool and its bound
inputs, hashed (:func:`write_hash`). A write runs only on an approval of its own hash, and a
rejected hash is final: no later approval, a person's or an automatic one, lets it run.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from evolve.execute.journal import Journal, dumps
from evolve.execute.records import Asked, AskKind, CallStatus, Decided, Record, ReplanAsked, Settled, Verdict
from evolve.execute.state import RunState
from evolve.execute.steps import step_of, tasks_of_step
from evolve.model.errors import EvolveError
from evolve.model.graph import upstream
from evolve.model.problem import Problem
from evolve.model.status import TaskStatus
from evolve.model.validate import produced_by

HASH_PREFIX = 8
"""The shortest prefix of an action hash ``evolve approve --action`` accepts."""


class DecisionError(EvolveError):
    """A decision that cannot be taken: names the run, the task and why (nothing is written)."""


def write_hash(tool: str, inputs: Mapping[str, Any]) -> str:
    """The hash of one write: its tool and its bound inputs (the same write, the same hash)."""
    return hashlib.sha256(dumps({"tool": tool, "inputs": dict(inputs)}).encode()).hexdigest()


def action_hash(writes: Sequence[Mapping[str, Any]]) -> str:
    """The hash of an approval's action: the hashes of its writes, in any order."""
    return hashlib.sha256(dumps(sorted(w["hash"] for w in writes)).encode()).hexdigest()


def iso(epoch: float | None) -> str | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds")


def pending(state: RunState) -> list[dict[str, Any]]:
    """What the run waits for: each waiting task's open ask (task, the planner's step id, tool,
    the exact action, since when), in the order they were asked. ``step`` is the task's own id
    unless a planner tagged it with its step id (see :mod:`evolve.execute.steps`); a decision
    accepts either."""
    items = []
    tasks = state.plan.by_id()
    for tid, ask_id in state.latest.items():
        ask = state.asked[ask_id]
        if state.status.get(tid) != TaskStatus.WAITING or ask_id in state.decided:
            continue
        items.append(
            {
                "task": tid,
                "step": step_of(tasks[tid])[0] if tid in tasks else tid,
                "tool": ask.tool,
                "kind": ask.kind,
                "action": ask.action,
                "action_hash": ask.action_hash,
                "since": iso(ask.since_wall),
                "ask": ask_id,
            }
        )
    return sorted(items, key=lambda item: int(item["ask"]))


def decisions(state: RunState) -> list[dict[str, Any]]:
    """Who decided what, when, on which action, and how long the run waited for it."""
    out = []
    for ask_id, made in sorted(state.decided.items()):
        ask = state.asked[ask_id]
        out.append(
            {
                "task": made.task_id,
                "tool": ask.tool,
                "verdict": made.verdict,
                "by": made.by,
                "at": iso(made.at),
                "note": made.note,
                "action_hash": made.action_hash,
                "writes": [
                    {"tool": w["tool"], "inputs": w["inputs"]} for w in (ask.action or {}).get("writes", ())
                ],
                "waited_s": round(max(0.0, made.at - ask.since_wall), 3),
            }
        )
    return out


def waited(state: RunState, now_wall: float) -> float:
    """Seconds the run waited for people: each ask from when it was made to its decision (or to
    ``now_wall``, for one still open)."""
    total = 0.0
    for ask_id, ask in state.asked.items():
        made = state.decided.get(ask_id)
        total += max(0.0, (made.at if made else now_wall) - ask.since_wall)
    return round(total, 3)


def task_named(state: RunState, run: str, name: str) -> str:
    """The executor id of the task ``name`` names: a waiting task's own id, else a planner's step
    id (the one ``evolve pending`` shows in brackets) of one task of the current plan. A step id
    can also be the executor id of the step's first version that a replan invalidated (the
    agent's first plan keeps the planner's ids): the waiting version wins."""
    if state.status.get(name) == TaskStatus.WAITING:
        return name
    tagged = tasks_of_step(state.plan, name)
    waiting = [tid for tid in tagged if state.status.get(tid) == TaskStatus.WAITING]
    if len(waiting) == 1:
        return waiting[0]
    if name in state.status:
        return name
    if len(tagged) == 1:
        return tagged[0]
    open_ids = ", ".join(f"{i['task']} [{i['step']}]" if i["step"] != i["task"] else i["task"]
                         for i in pending(state))
    raise DecisionError(f"{run}: no task {name!r} in this run (waiting: {open_ids or 'none'})")


def open_ask(state: RunState, run: str, task_id: str) -> Asked:
    """The ask ``task_id`` waits on, or why there is none."""
    if task_id not in state.status:
        raise DecisionError(f"{run}: no task {task_id!r} in this run")
    ask = state.ask(task_id)
    if state.status.get(task_id) == TaskStatus.UNKNOWN:
        raise DecisionError(
            f"{run}: {task_id} is a write whose outcome is unknown, not a question: say what became of "
            f"it with evolve resolve {run} {task_id} --done --output FILE.json (or --not-done)"
        )
    if ask is None or state.status.get(task_id) != TaskStatus.WAITING:
        raise DecisionError(
            f"{run}: {task_id} is not waiting for a person (its status is {state.status[task_id]})"
        )
    if ask.ask_id in state.decided:
        made = state.decided[ask.ask_id]
        raise DecisionError(f"{run}: {task_id} was {made.verdict} by {made.by} already; resume the run")
    return ask


def decision(
    state: RunState,
    problem: Problem,
    run: str,
    task_id: str,
    verdict: Verdict,
    *,
    by: str,
    at: float,
    note: str | None = None,
    action: str | None = None,
    outputs: Mapping[str, Any] | None = None,
) -> Decided:
    """The record of a person's decision on ``task_id``, checked against what the run waits for:
    an approval is approved or rejected (``action``, when given, must be the pending action's
    hash or a prefix of it: an old hash is refused), an answer gives the tool's declared outputs.
    ``task_id`` may be a planner's step id (:func:`task_named`); the record names the task."""
    task_id = task_named(state, run, task_id)
    ask = open_ask(state, run, task_id)
    if verdict == Verdict.ANSWERED and ask.kind != AskKind.ANSWER:
        raise DecisionError(f"{run}: {task_id} waits for an approval: use evolve approve or reject")
    if verdict != Verdict.ANSWERED and ask.kind != AskKind.APPROVAL:
        raise DecisionError(f"{run}: {task_id} waits for its outputs: use evolve answer")
    if action is not None:
        pending_hash = ask.action_hash or ""
        if len(action) < HASH_PREFIX or not pending_hash.startswith(action):
            raise DecisionError(
                f"{run}: {task_id}: --action {action} is not the action pending ({pending_hash[:12]}); "
                "the plan changed what it approves (see evolve pending)"
            )
    if verdict == Verdict.ANSWERED:
        outputs = checked_answer(problem, ask, run, outputs)
    return Decided(ask.ask_id, task_id, verdict, by, at, note, ask.action_hash, outputs)


def checked_answer(
    problem: Problem, ask: Asked, run: str, outputs: Mapping[str, Any] | None
) -> dict[str, Any]:
    """An answer's outputs: a JSON object with each output the tool declares (and no other)."""
    tool = problem.tools.get(ask.tool)
    return checked_outputs(tool.outputs if tool is not None else (), ask.task_id, ask.tool, run, outputs)


def checked_outputs(
    declared: Sequence[str], task_id: str, tool: str, run: str, outputs: Mapping[str, Any] | None
) -> dict[str, Any]:
    """Outputs a person gives for ``task_id``: a JSON object with each of ``declared`` (and no
    other)."""
    if not isinstance(outputs, Mapping):
        raise DecisionError(f"{run}: --output: expected a JSON object of {', '.join(declared)}")
    missing = [f for f in declared if f not in outputs]
    extra = sorted(set(outputs) - set(declared))
    if missing or extra:
        what = "; ".join(
            part
            for part in (
                f"missing {', '.join(missing)}" if missing else "",
                f"not an output of {tool}: {', '.join(extra)}" if extra else "",
            )
            if part
        )
        raise DecisionError(f"{run}: --output for {task_id} ({tool}): {what}")
    data: dict[str, Any] = json.loads(dumps(dict(outputs)))
    return data


def commit_decision(journal: Journal, made: Decided, time: float) -> None:
    """The decision and its event in one transaction (refused if the ask is no longer open)."""
    event = {
        "event": f"person.{made.verdict}",
        "time": time,
        "task": made.task_id,
        "by": made.by,
        "at": iso(made.at),
        "note": made.note,
        "action_hash": made.action_hash,
    }
    journal.write((made,), (event,))


# -- writes whose outcome is unknown: a person says what became of them ---------------------------


def unresolved(state: RunState, journal: Journal) -> list[dict[str, Any]]:
    """The live plan's writes whose outcome is unknown (a call cut off, a tool with no
    ``reconcile``): each awaits ``evolve resolve``, with the call a person checks (its key and
    inputs)."""
    calls = {c.task_id: c for c in journal.calls(CallStatus.UNKNOWN)}
    items = []
    for task in state.plan.tasks:
        call = calls.get(task.id)
        if state.status.get(task.id) != TaskStatus.UNKNOWN or call is None:
            continue
        items.append({
            "task": task.id, "tool": task.tool, "kind": "resolve", "action": None, "action_hash": None,
            "since": None, "ask": None, "idempotency_key": call.idempotency_key, "inputs": call.inputs,
        })
    return items


def resolution(
    state: RunState,
    problem: Problem,
    journal: Journal,
    run: str,
    task_id: str,
    done: bool,
    *,
    by: str,
    at: float,
    time: float,
    note: str | None = None,
    outputs: Mapping[str, Any] | None = None,
) -> tuple[tuple[Record, ...], dict[str, Any]]:
    """The records and the event of a person's word on a write whose outcome is unknown:
    ``done`` (it was made: ``outputs``, its task's declared outputs, are bound and its
    dependents run; its call counts as reconciled), or not done (its task is pending again, and
    the next session runs it once more, with the same idempotency key). A dependent a cascade
    skipped for its failure is pending again; a replan its failure asked for is withdrawn."""
    if task_id not in state.status:
        raise DecisionError(f"{run}: no task {task_id!r} in this run")
    call = next((c for c in reversed(journal.calls(CallStatus.UNKNOWN)) if c.task_id == task_id), None)
    task = state.plan.by_id().get(task_id)
    if state.status[task_id] != TaskStatus.UNKNOWN or call is None or task is None:
        status = state.status[task_id]
        raise DecisionError(f"{run}: {task_id} is not a write whose outcome is unknown (status {status})")
    if done:
        given = checked_outputs(produced_by(problem, task) or (), task_id, task.tool, run, outputs)
        settle = Settled(task_id, TaskStatus.DONE, call.call_id, CallStatus.RECONCILED, outputs=given,
                         finished=call.finished)
    elif outputs is not None:
        raise DecisionError(f"{run}: {task_id}: --output goes with --done (a write not made made nothing)")
    else:
        given = None
        settle = Settled(task_id, TaskStatus.PENDING)
    records: list[Record] = [settle]
    deps = {t.id: t.deps for t in state.plan.tasks}
    records += [Settled(tid, TaskStatus.PENDING) for tid in state.cascaded
                if state.status.get(tid) == TaskStatus.SKIPPED and task_id in upstream(tid, deps)]
    if state.replan is not None and state.replan.startswith(f"{task_id} ("):
        records.append(ReplanAsked((), None))
    event = {
        "event": "person.resolved", "time": time, "task": task_id, "tool": task.tool,
        "verdict": "done" if done else "not_done", "by": by, "at": iso(at), "note": note,
        "idempotency_key": call.idempotency_key, "outputs": given,
    }
    return tuple(records), event


def commit_resolution(journal: Journal, records: Sequence[Record], event: dict[str, Any]) -> None:
    """A resolution and its event in one transaction; a run that ended on the unknown write is
    open again, so ``--resume`` goes on from it."""
    journal.write(records, (event,), {"complete": None})
