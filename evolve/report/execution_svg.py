"""The planned-against-actual Gantt chart of an execution, as SVG.

Each row is a task of any revision. The plan's bar (hollow) and what happened (one solid bar
per attempt, coloured by how it ended) share the row, so a reader sees at once which tasks ran
late, which were retried, which were skipped and which a revision invalidated before they ran.
Vertical lines mark the moments the plan was revised.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from evolve.model.status import TaskStatus
from evolve.report.execution_data import Segment
from evolve.report.gantt_svg import clip
from evolve.report.svg import coord, esc, nice_ticks, num

LABEL_W = 270.0
PLOT_W = 820.0
RIGHT = 40.0
ROW_H = 26.0
AXIS_H = 30.0

ENDED_WELL = ("done", "reconciled")


@dataclass(frozen=True)
class ChartRow:
    id: str
    tool: str
    status: str
    planned: tuple[float, float] | None
    segments: tuple[Segment, ...] = ()


def execution_gantt_svg(rows: Sequence[ChartRow], span: float, markers: Sequence[tuple[float, str]] = (),
                        label: str = "planned against actual", unit: str = "") -> str:
    """SVG with one ``g.gantt-row`` per task, a hollow ``rect.planned-bar`` for its planned span and
    one ``rect.gantt-bar`` per attempt (class ``exec-<status>``); ``markers`` are (time, text)
    lines such as the revisions."""
    ticks = nice_ticks(0.0, max(span, 1e-9))
    scale = max(ticks[-1], span, 1e-9)

    def x(t: float) -> float:
        return LABEL_W + PLOT_W * max(t, 0.0) / scale

    height = AXIS_H + len(rows) * ROW_H + 8
    width = LABEL_W + PLOT_W + RIGHT
    parts = [f'<svg class="chart gantt execution" viewBox="0 0 {coord(width)} {coord(height)}" '
             f'width="{coord(width)}" role="img" aria-label="{esc(label)}">']
    for t in ticks:
        parts.append(f'<line class="grid" x1="{coord(x(t))}" x2="{coord(x(t))}" y1="{AXIS_H - 6}" '
                     f'y2="{coord(height - 4)}"/><text class="tick" x="{coord(x(t))}" y="{AXIS_H - 11}" '
                     f'text-anchor="middle">{num(round(t, 6))}{esc(unit) if t == ticks[-1] else ""}</text>')
    for i, row in enumerate(rows):
        y = AXIS_H + i * ROW_H
        gone = row.status == TaskStatus.INVALIDATED
        parts.append(f'<g class="gantt-row{" invalidated" if gone else ""}" data-task="{esc(row.id)}" '
                     f'data-status="{esc(row.status)}">'
                     f'<rect class="row-band" x="0" y="{coord(y)}" width="{coord(width)}" height="{ROW_H}"/>'
                     f'<text class="row-id" x="8" y="{coord(y + 17)}">{esc(row.id)}</text>'
                     f'<text class="row-tool" x="58" y="{coord(y + 17)}">{esc(clip(row.tool, 21))}</text>'
                     f'<text class="row-status st-{esc(row.status)}" x="{coord(LABEL_W - 8)}" '
                     f'y="{coord(y + 17)}" text-anchor="end">{esc(row.status)}</text>')
        if row.planned is not None:
            start, finish = row.planned
            parts.append(f'<rect class="planned-bar{" invalidated" if gone else ""}" '
                         f'x="{coord(x(start))}" y="{coord(y + 4)}" '
                         f'width="{coord(max(x(finish) - x(start), 1.5))}" height="8" rx="2">'
                         f"<title>{esc(row.id)} planned {num(start)} to {num(finish)}</title></rect>")
        for seg in row.segments:
            w = max(x(seg.finish) - x(seg.start), 2.0)
            title = (f"{row.id} attempt {seg.attempt}: {seg.status}, {num(seg.start)} to {num(seg.finish)}"
                     + (f"\n{seg.note}" if seg.note else ""))
            if seg.status == "skipped" or seg.status == "assumption":
                cx = x(seg.start)
                parts.append(f'<path class="exec-mark exec-{esc(seg.status)}" '
                             f'd="M{coord(cx)},{coord(y + 13)} l5,5 l-5,5 l-5,-5 z">'
                             f"<title>{esc(title)}</title></path>")
                continue
            cls = "gantt-bar exec-" + (seg.status if seg.status in ENDED_WELL else f"failed {seg.status}")
            parts.append(f'<rect class="{esc(cls)}" data-task="{esc(row.id)}" x="{coord(x(seg.start))}" '
                         f'y="{coord(y + 14)}" width="{coord(w)}" height="9" rx="2">'
                         f"<title>{esc(title)}</title></rect>")
        parts.append("</g>")
    for at, text in markers:
        mx = x(at)
        parts.append(f'<line class="revision-line" x1="{coord(mx)}" x2="{coord(mx)}" y1="{AXIS_H - 4}" '
                     f'y2="{coord(height - 4)}"/><text class="revision-label" x="{coord(mx + 3)}" '
                     f'y="{AXIS_H + 9}">{esc(text)}</text>')
    parts.append("</svg>")
    return "".join(parts)
