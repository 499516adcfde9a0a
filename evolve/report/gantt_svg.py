"""The Gantt chart of a timeline, with resource usage over time on the same time axis below.

Usage shares the chart's x scale so a reader can look straight down from a bar
to what it holds: that is how one sees why a task waited although its
dependencies were done (a full slot or resource), which no table shows.
"""

from __future__ import annotations

from collections.abc import Callable

from evolve.report.graph_svg import tooltip
from evolve.report.svg import coord, esc, nice_ticks, num
from evolve.report.timeline import Timeline, Usage

LABEL_W = 210.0
PLOT_W = 860.0
RIGHT = 70.0
ROW_H = 24.0
BAR_H = 15.0
AXIS_H = 26.0
USAGE_H = 58.0
USAGE_GAP = 22.0


def gantt_svg(timeline: Timeline) -> str:
    """SVG with one ``rect.gantt-bar`` per scheduled task and one usage strip per capacity."""
    horizon = max(timeline.makespan, 1e-9)
    ticks = nice_ticks(0.0, horizon)
    span = max(ticks[-1], horizon)

    def x(t: float) -> float:
        return LABEL_W + PLOT_W * t / span

    rows_h = len(timeline.bars) * ROW_H
    usage_top = AXIS_H + rows_h + USAGE_GAP
    height = usage_top + len(timeline.usage) * (USAGE_H + USAGE_GAP)
    width = LABEL_W + PLOT_W + RIGHT
    parts = [f'<svg class="chart gantt" viewBox="0 0 {coord(width)} {coord(height)}" '
             f'width="{coord(width)}" role="img" aria-label="Gantt chart of the best plan">']
    for t in ticks:
        parts.append(f'<line class="grid" x1="{coord(x(t))}" x2="{coord(x(t))}" y1="{AXIS_H - 4}" '
                     f'y2="{coord(height - USAGE_GAP + 4)}"/>'
                     f'<text class="tick" x="{coord(x(t))}" y="{AXIS_H - 9}" text-anchor="middle">'
                     f"{num(t)}</text>")
    for i, bar in enumerate(timeline.bars):
        y = AXIS_H + i * ROW_H
        mid = y + ROW_H / 2
        cls = "gantt-bar critical" if bar.critical else "gantt-bar"
        w = max(x(bar.finish) - x(bar.start), 1.5)
        parts.append(f'<g class="gantt-row" data-task="{esc(bar.id)}">'
                     f'<rect class="row-band" x="0" y="{coord(y)}" width="{coord(width)}" '
                     f'height="{ROW_H}"/>'
                     f'<text class="row-id" x="8" y="{coord(mid + 4)}">{esc(bar.id)}</text>'
                     f'<text class="row-tool" x="52" y="{coord(mid + 4)}">{esc(clip(bar.tool, 25))}</text>')
        if bar.slack:
            parts.append(f'<rect class="slack" x="{coord(x(bar.finish))}" y="{coord(mid - 2)}" '
                         f'width="{coord(x(bar.finish + bar.slack) - x(bar.finish))}" height="4" rx="2">'
                         f"<title>slack {num(bar.slack)}: {esc(bar.id)} could finish this much "
                         f"later without delaying the plan</title></rect>")
        parts.append(f'<rect class="{cls}" data-task="{esc(bar.id)}" x="{coord(x(bar.start))}" '
                     f'y="{coord(mid - BAR_H / 2)}" width="{coord(w)}" height="{BAR_H}" rx="3">'
                     f"<title>{esc(tooltip(bar))}</title></rect>")
        label = num(bar.duration)
        inside = w > 8 * len(label) + 8
        lx = x(bar.start) + w / 2 if inside else x(bar.start) + w + 5
        anchor = "middle" if inside else "start"
        lcls = "bar-label inside" if inside else "bar-label"
        parts.append(f'<text class="{lcls}" x="{coord(lx)}" y="{coord(mid + 4)}" '
                     f'text-anchor="{anchor}">{label}</text></g>')
    end = x(timeline.makespan)
    label = f"makespan {num(timeline.makespan)}"
    fits = end + 4 + 7 * len(label) <= width  # else written to the left of the line
    parts.append(f'<line class="makespan" x1="{coord(end)}" x2="{coord(end)}" y1="{AXIS_H - 4}" '
                 f'y2="{coord(AXIS_H + rows_h)}"/>'
                 f'<text class="makespan-label" x="{coord(end + 4 if fits else end - 4)}" '
                 f'y="{AXIS_H + 12}" text-anchor="{"start" if fits else "end"}">{label}</text>')
    for k, usage in enumerate(timeline.usage):
        top = usage_top + k * (USAGE_H + USAGE_GAP)
        parts.append(usage_strip(usage, top, x, timeline.makespan))
    parts.append("</svg>")
    return "".join(parts)


def usage_strip(usage: Usage, top: float, x: Callable[[float], float], end: float) -> str:
    """One capacity's usage as a filled step area, with its limit as a dashed line."""
    scale_max = max(usage.limit if usage.limit is not None else 0.0, usage.peak, 1.0)

    def y(level: float) -> float:
        return top + USAGE_H - USAGE_H * level / scale_max

    points = [(x(0.0), y(0.0))]
    for i, (t, level) in enumerate(usage.steps):
        points.append((x(t), points[-1][1]))
        points.append((x(t), y(level)))
        if i == len(usage.steps) - 1:
            points.append((x(max(end, t)), y(level)))
    points.append((points[-1][0], y(0.0)))
    d = "M" + " L".join(f"{coord(px)},{coord(py)}" for px, py in points) + "Z"
    limit = "unlimited" if usage.limit is None else f"capacity {num(usage.limit)}"
    over = usage.limit is not None and usage.peak > usage.limit + 1e-9
    title = "tasks running" if usage.name == "slots" else usage.name
    parts = [f'<g class="usage" data-resource="{esc(usage.name)}">',
             f'<text class="usage-name" x="8" y="{coord(top + 14)}">{esc(title)}</text>',
             f'<text class="usage-note" x="8" y="{coord(top + 30)}">{limit}, peak {num(usage.peak)}</text>',
             f'<line class="usage-base" x1="{coord(x(0.0))}" x2="{coord(x(end))}" '
             f'y1="{coord(y(0.0))}" y2="{coord(y(0.0))}"/>',
             f'<path class="usage-area{" over" if over else ""}" d="{d}"/>']
    if usage.limit is not None:
        parts.append(f'<line class="capacity" x1="{coord(x(0.0))}" x2="{coord(x(end))}" '
                     f'y1="{coord(y(usage.limit))}" y2="{coord(y(usage.limit))}"/>'
                     f'<text class="capacity-label" x="{coord(x(end) + 4)}" '
                     f'y="{coord(y(usage.limit) + 4)}">{num(usage.limit)}</text>')
    parts.append("</g>")
    return "".join(parts)


def clip(text: str, size: int) -> str:
    return text if len(text) <= size else text[: size - 1] + "…"
