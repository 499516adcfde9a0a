"""``evolve show``: one plan's Gantt chart and critical path as text, for people in a terminal.

Each task gets a row scaled to the terminal width. Critical tasks are drawn with
``█`` and the others with ``▒``, so the chart reads without colour too (piped
into a file or a log); slack is ``·``. Colour is added only when ``color`` is on.
"""

from __future__ import annotations

import click

from evolve import defaults
from evolve.report.svg import num
from evolve.report.timeline import Timeline

CRITICAL, NORMAL, SLACK = "█", "▒", "·"


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
    chain = " -> ".join(timeline.critical_path) or "-"
    lines.append(f"makespan {num(timeline.makespan)}; critical path: {chain}")
    lines.append(f"legend: {CRITICAL} critical  {NORMAL} other  {SLACK} slack")
    if timeline.unscheduled:
        lines.append(f"not schedulable (on or behind a cycle): {', '.join(timeline.unscheduled)}")
    return "\n".join(lines)
