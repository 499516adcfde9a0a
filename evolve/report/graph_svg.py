"""The best plan as a left-to-right task graph with its critical path highlighted.

Tasks sit in columns by dependency level, so everything a task waits for is to
its left; within a column they are ordered by the mean row of their
predecessors (the barycentre heuristic), which removes most edge crossings in
plans of this size without a layout library.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import pairwise

from evolve.report.svg import coord, esc, num
from evolve.report.timeline import Bar, Timeline

NODE_W, NODE_H = 166.0, 46.0
GAP_X, GAP_Y = 28.0, 14.0
PAD = 12.0


def column_order(timeline: Timeline) -> list[list[str]]:
    """Task ids per level, ordered to keep edges short (two barycentre sweeps)."""
    columns: dict[int, list[str]] = {}
    for bar in timeline.bars:
        columns.setdefault(timeline.level.get(bar.id, 0), []).append(bar.id)
    ordered = [columns[k] for k in sorted(columns)]
    deps = {bar.id: bar.deps for bar in timeline.bars}
    critical = set(timeline.critical_path)
    for _ in range(2):
        row: dict[str, float] = {}
        for column in ordered:
            keys = {tid: (barycentre(deps[tid], row, i), tid not in critical)
                    for i, tid in enumerate(column)}
            column.sort(key=keys.__getitem__)
            row.update({tid: float(i) for i, tid in enumerate(column)})
    return ordered


def barycentre(deps: tuple[str, ...], row: Mapping[str, float], fallback: int) -> float:
    placed = [row[d] for d in deps if d in row]
    return sum(placed) / len(placed) if placed else float(fallback)


def graph_svg(timeline: Timeline) -> str:
    """An SVG of the plan's tasks and dependencies; critical nodes and edges carry ``critical``."""
    columns = column_order(timeline)
    rows = max((len(c) for c in columns), default=1)
    height = PAD * 2 + rows * NODE_H + (rows - 1) * GAP_Y
    width = PAD * 2 + len(columns) * NODE_W + max(len(columns) - 1, 0) * GAP_X
    place: dict[str, tuple[float, float]] = {}
    for i, column in enumerate(columns):
        offset = (height - (len(column) * NODE_H + (len(column) - 1) * GAP_Y)) / 2
        for j, tid in enumerate(column):
            place[tid] = (PAD + i * (NODE_W + GAP_X), offset + j * (NODE_H + GAP_Y))
    bars = {bar.id: bar for bar in timeline.bars}
    chain = timeline.critical_path
    critical_edges = set(pairwise(chain))
    parts = [
        f'<svg class="chart graph" viewBox="0 0 {coord(width)} {coord(height)}" '
        f'width="{coord(width)}" role="img" aria-label="Task graph of the best plan">',
        '<defs>' + marker('arrow', 'arrowhead') + marker('arrow-critical', 'arrowhead critical') + '</defs>',
    ]
    edges = [(dep, bar.id) for bar in timeline.bars for dep in bar.deps if dep in place]
    edges.sort(key=lambda e: e in critical_edges)  # critical edges drawn last, on top
    for source, target in edges:
        parts.append(edge_path(place[source], place[target], (source, target) in critical_edges))
    for tid, (x, y) in place.items():
        parts.append(node(bars[tid], x, y))
    parts.append("</svg>")
    return "".join(parts)


def marker(name: str, cls: str) -> str:
    """An arrowhead of fixed size (``userSpaceOnUse``), so thick critical edges keep small heads."""
    return (f'<marker id="{name}" viewBox="0 0 10 10" refX="9" refY="5" markerUnits="userSpaceOnUse" '
            f'markerWidth="9" markerHeight="9" orient="auto-start-reverse">'
            f'<path d="M0,0L10,5L0,10z" class="{cls}"/></marker>')


def edge_path(source: tuple[float, float], target: tuple[float, float], critical: bool) -> str:
    x1, y1 = source[0] + NODE_W, source[1] + NODE_H / 2
    x2, y2 = target[0] - 2, target[1] + NODE_H / 2
    bend = max((x2 - x1) / 2, 20.0)
    cls = "edge critical" if critical else "edge"
    marker = "arrow-critical" if critical else "arrow"
    return (f'<path class="{cls}" marker-end="url(#{marker})" d="M{coord(x1)},{coord(y1)} '
            f'C{coord(x1 + bend)},{coord(y1)} {coord(x2 - bend)},{coord(y2)} {coord(x2)},{coord(y2)}"/>')


def node(bar: Bar, x: float, y: float) -> str:
    cls = "node critical" if bar.critical else "node"
    tool = bar.tool if len(bar.tool) <= 25 else bar.tool[:24] + "…"
    return (
        f'<g class="{cls}" data-task="{esc(bar.id)}" transform="translate({coord(x)},{coord(y)})">'
        f"<title>{esc(tooltip(bar))}</title>"
        f'<rect width="{coord(NODE_W)}" height="{coord(NODE_H)}" rx="7"/>'
        f'<text x="10" y="18" class="node-id">{esc(bar.id)}'
        f'<tspan class="node-time" dx="6">{num(bar.start)}–{num(bar.finish)}</tspan></text>'
        f'<text x="10" y="35" class="node-tool">{esc(tool)}</text></g>'
    )


def tooltip(bar: Bar, extra: Mapping[str, str] | None = None) -> str:
    """The hover text of a task, shared by the graph and the Gantt chart."""
    lines = [f"{bar.id}: {bar.tool}" + (f" ({bar.name})" if bar.name else ""),
             f"start {num(bar.start)}, finish {num(bar.finish)}, duration {num(bar.duration)}"]
    if bar.slack is not None:
        lines.append(f"slack {num(bar.slack)}")
    if bar.deps:
        lines.append("after " + ", ".join(bar.deps))
    if bar.critical:
        lines.append("on the critical path")
    lines.extend(f"{k}: {v}" for k, v in (extra or {}).items())
    return "\n".join(lines)
