"""Journals of schema version 3, which kept no history: their records made once from the tables.

Version 3 held the run's state only as table rows (each task's last settle, the asks, the meta),
so a resume then rebuilt records from rows. That rebuild lives on here, for one use only: when a
version 3 journal is opened, :meth:`evolve.execute.journal.Journal.migrate` writes what it gives
as the journal's history, and from then on the run is replayed from the history like any other.
What version 3 never kept (a dispatch's bound inputs and start) stays empty in the migrated
records, as the old resume left it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evolve.execute.records import (
    Asked,
    CallRow,
    Decided,
    Dispatched,
    ModelCalls,
    Record,
    ReplanAsked,
    ReplanTried,
    Revised,
    Revision,
    Settled,
    TaskRow,
    Window,
)
from evolve.model.plan_file import plan_from_dict


def legacy_records(
    revisions: Sequence[Revision],
    calls: Sequence[CallRow],
    asks: tuple[Sequence[Asked], Sequence[Decided]],
    tasks: Mapping[str, TaskRow],
    meta: Mapping[str, Any],
    model_calls: Mapping[str, int],
    source: str,
) -> list[Record]:
    """The records whose fold is the state a version 3 journal's tables hold: each revision,
    each dispatch, each ask and its decision, each task's last settle, the last replan tried,
    the model calls, the replan request standing and the rolling horizon's window."""
    if not revisions:
        return []  # a run that never committed a plan: nothing to replay (a resume says so)
    records: list[Record] = []
    for rev in revisions:
        plan = plan_from_dict(rev.plan, source, "revisions")
        diff = dict(rev.diff or {})
        invalidated = tuple((rev.patch or {}).get("invalidate", ()))
        records.append(Revised(rev.revision, plan, invalidated, diff.get("signature", "")))
    records.extend(
        Dispatched(c.call_id, c.task_id, c.attempt, c.tool, c.risk, c.idempotency_key, "", 0.0) for c in calls
    )
    asked, decided = asks
    by_ask = {d.ask_id: d for d in decided}
    for ask in asked:
        records.append(ask)
        if ask.ask_id in by_ask:
            records.append(by_ask[ask.ask_id])
    records.extend(settled(row) for row in tasks.values())
    records.append(ReplanTried(int(meta.get("replan_tried") or 0)))
    records.extend(ModelCalls(purpose, n) for purpose, n in model_calls.items())
    records.append(ReplanAsked(tuple(meta.get("excluded") or ()), meta.get("replan")))
    window = meta.get("window")
    if window is not None:
        records.append(Window(int(window["revision"]), tuple(window["tasks"])))
    return records


def settled(row: TaskRow) -> Settled:
    """A task's row as the settle that left it so (a version 3 row is its task's last settle)."""
    return Settled(
        row.task_id,
        row.status,
        outputs=row.outputs,
        error=row.error,
        finished=row.finished,
        failures=row.failures,
        first_failure=row.first_failure,
        retry_at=row.retry_at,
        cascaded=row.cascaded,
        attempt=row.attempts,
    )
