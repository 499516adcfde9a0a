"""``evolve show``: one plan's Gantt chart and critical path as text, for people in a terminal.

Each task gets a row scaled to the terminal width. Critical tasks are drawn with
``█`` and the others with ``▒``, so the chart reads without colour too (piped
into a file or a log); slack is ``·``. Colour is added only when ``color`` is on.
An ``evolve execute`` run folder is drawn as what ran (:func:`execution_text_gantt`).
"""

from __future__ import annotations

from collections.abc import Sequence

import click

from evolve import defaults
from evolve.execute.outcome import RunStatus
from evolve.report.execution_data import Execution, Segment
from evolve.report.svg import num
from evolve.report.timeline import Timeline

CRITICAL, NORMAL, SLACK = "█", "▒", "·"
RAN, FAILED, PASSED = "█", "x", "-"
"""An execution's attempts: one that ended done (or reconciled), one that failed (a failure, a
timeout, an exception, an unknown outcome), one that was skipped or stood in for an assumption."""


def short_chain(ids: Sequence[str], ends: int = defaults.CHAIN_ENDS) -> str:
    """``a -> b -> c``, or for a chain longer than ``2 * ends`` ids its first and last ``ends``
    with how many are left out, so a long plan's critical path stays one readable line
    (the whole path is in the run's ``summary.json``)."""
    if not ids:
        return "-"
    if len(ids) <= 2 * ends:
        return " -> ".join(ids)
    return (" -> ".join(ids[:ends]) + f" -> ... ({len(ids) - 2 * ends} more) -> "
            + " -> ".join(ids[-ends:]) + f" ({len(ids)} tasks)")


def text_gantt(timeline: Timeline, width: int = defaults.SHOW_WIDTH, color: bool = False) -> str:
    """The chart as lines of text; ``width`` is the whole line, labels included."""
    label_w = min(max((len(b.id) for b in timeline.bars), default=2) + 1 +
                  max((len(b.tool) for b in timeline.bars), default=4), 34)
    times_w = 2 + max((len(f"{num(b.start)}–{num(b.finish)}") for b in timeline.bars), default=3)
    chart_w = max(width - label_w - times_w - 2, 10)
    span = timeline.makespan if timeline.makespan > 0 else 1.0

    def col(t: float) -> int:
        return round(chart_w * t / span)

    lines = [f"{'':<{label_w}} |0{num(timeline.makespan):>{chart_w - 1}}|"]
    for bar in timeline.bars:
        begin, end = col(bar.start), col(bar.finish)
        end = max(end, begin + 1) if bar.duration > 0 else begin
        cells = [" "] * chart_w
        glyph = CRITICAL if bar.critical else NORMAL
        for c in range(begin, min(end, chart_w)):
            cells[c] = glyph
        if bar.slack:
            for c in range(end, min(col(bar.finish + bar.slack), chart_w)):
                cells[c] = SLACK
        if bar.duration <= 0:  # an instant: a tick, kept inside the frame at the very end
            cells[min(begin, chart_w - 1)] = "|"
        row = "".join(cells)
        if color:
            row = row.replace(CRITICAL, click.style(CRITICAL, fg="red")).replace(
                NORMAL, click.style(NORMAL, fg="blue"))
        label = f"{bar.id} {bar.tool}"
        label = label if len(label) <= label_w else label[: label_w - 1] + "…"
        lines.append(f"{label:<{label_w}} |{row}| {num(bar.start)}–{num(bar.finish)}")
    for usage in timeline.usage:
        limit = "unlimited" if usage.limit is None else f"capacity {num(usage.limit)}"
        name = "tasks running" if usage.name == "slots" else usage.name
        lines.append(f"{name}: peak {num(usage.peak)} ({limit})")
    chain = short_chain(timeline.critical_path)
    lines.append(f"makespan {num(timeline.makespan)}; critical path: {chain}")
    lines.append(f"legend: {CRITICAL} critical  {NORMAL} other  {SLACK} slack")
    if timeline.unscheduled:
        lines.append(f"not schedulable (on or behind a cycle): {', '.join(timeline.unscheduled)}")
    return "\n".join(lines)


def segment_glyph(segment: Segment) -> str:
    if segment.status in ("done", "reconciled"):
        return RAN
    if segment.status in ("skipped", "assumption"):
        return PASSED
    return FAILED


def execution_text_gantt(execution: Execution, width: int = defaults.SHOW_WIDTH, color: bool = False) -> str:
    """What an ``evolve execute`` run did, as text: a row per task of every revision with one
    mark per attempt on the run clock, the task's status and times, then the revisions."""
    outcome = execution.outcome
    unit = "" if execution.virtual else " s"
    status, reason = str(outcome.get("status", RunStatus.RUNNING)), str(outcome.get("reason", "not ended"))
    message = str(outcome.get("message") or "")
    lines = [f"{execution.problem}: {status}{', ' + reason if reason != status else ''}"
             f" (steps {outcome.get('steps', '?')}/{outcome.get('max_steps', '?')}, "
             f"replans {outcome.get('replans', len(execution.revisions))}/{outcome.get('max_replans', '?')})"
             f"{': ' + message if message else ''}",
             *execution.notes]
    rows = execution.rows
    label_w = min(max((len(r.id) + 1 + len(r.tool) for r in rows), default=8), 34)
    status_w = max((len(r.status) for r in rows), default=7)

    def times(row_segments: tuple[Segment, ...]) -> str:
        if not row_segments:
            return ""
        start, finish = min(s.start for s in row_segments), max(s.finish for s in row_segments)
        return f"{num(round(start, 3))}–{num(round(finish, 3))}{unit}"

    times_w = max((len(times(r.segments)) for r in rows), default=0)
    chart_w = max(width - label_w - status_w - times_w - 5, 10)
    span = execution.end if execution.end > 0 else 1.0

    def col(t: float) -> int:
        return min(round(chart_w * t / span), chart_w - 1)

    lines.append(f"{'':<{label_w}} |0{num(round(execution.end, 3)) + unit:>{chart_w - 1}}|")
    for row in rows:
        cells = [" "] * chart_w
        for segment in row.segments:
            glyph = segment_glyph(segment)
            for c in range(col(segment.start), max(col(segment.finish), col(segment.start) + 1)):
                cells[c] = glyph
        drawn = "".join(cells)
        if color:
            drawn = drawn.replace(RAN, click.style(RAN, fg="green")).replace(
                FAILED, click.style(FAILED, fg="red"))
        label = f"{row.id} {row.tool}"
        label = label if len(label) <= label_w else label[: label_w - 1] + "…"
        lines.append(f"{label:<{label_w}} |{drawn}| {row.status:<{status_w}} {times(row.segments)}".rstrip())
    for revision in execution.revisions:
        when = "" if revision.time is None else f" at {num(round(revision.time, 3))}{unit}"
        changes = "; ".join(f"{what} {', '.join(items)}" for what, items in (
            ("removed", revision.removed), ("added", revision.added), ("revised", revision.revised)) if items)
        lines.append(f"revision {revision.revision}{when}: {revision.reason or 'replanned'}"
                     f"{' (' + changes + ')' if changes else ''}")
    lines.append(f"legend: {RAN} ran  {FAILED} failed attempt  {PASSED} skipped or assumed")
    return "\n".join(lines)
