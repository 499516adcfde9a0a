"""Convergence: best and median of each objective per generation, one small chart each.

Objectives have different units and scales (a 0/1 validity beside a makespan
in milliseconds), so they get a panel each rather than a shared axis; panels
come in ranking order, the objective that decides first, first.
"""

from __future__ import annotations

from collections.abc import Sequence

from evolve.report.data import GenerationRecord
from evolve.report.svg import coord, esc, nice_ticks, num, padded_range

W, H = 330.0, 190.0
LEFT, RIGHT, TOP, BOTTOM = 52.0, 12.0, 14.0, 30.0


def convergence_svgs(generations: Sequence[GenerationRecord], objectives: Sequence[str],
                     directions: dict[str, str] | None = None) -> list[tuple[str, str]]:
    """``(objective, svg)`` per objective; each best-series point is a ``circle.conv-point``."""
    return [(name, panel(generations, name, (directions or {}).get(name))) for name in objectives]


def panel(generations: Sequence[GenerationRecord], name: str, direction: str | None) -> str:
    gens = [g for g in generations if name in g.objectives]
    best = [g.objectives[name].best for g in gens]
    median = [g.objectives[name].median for g in gens]
    low, high = padded_range(best + median)
    yticks = nice_ticks(low, high, 5)
    low, high = min(low, yticks[0]), max(high, yticks[-1])
    last_gen = max((g.generation for g in gens), default=0)
    xticks = [t for t in nice_ticks(0, max(last_gen, 1), 6) if t <= max(last_gen, 1)]

    def x(gen: float) -> float:
        return LEFT + (W - LEFT - RIGHT) * gen / max(last_gen, 1)

    def y(value: float) -> float:
        return TOP + (H - TOP - BOTTOM) * (1 - (value - low) / (high - low))

    parts = [f'<svg class="chart convergence" data-objective="{esc(name)}" viewBox="0 0 {W:g} {H:g}" '
             f'role="img" aria-label="Convergence of {esc(name)}">']
    for t in yticks:
        parts.append(f'<line class="grid" x1="{LEFT}" x2="{W - RIGHT}" y1="{coord(y(t))}" '
                     f'y2="{coord(y(t))}"/><text class="tick" x="{LEFT - 6}" y="{coord(y(t) + 4)}" '
                     f'text-anchor="end">{num(t)}</text>')
    for t in xticks:
        parts.append(f'<text class="tick" x="{coord(x(t))}" y="{H - BOTTOM + 16}" '
                     f'text-anchor="middle">{num(t)}</text>')
    parts.append(f'<text class="axis-label" x="{W - RIGHT}" y="{H - 2}" '
                 'text-anchor="end">generation</text>')
    if gens:
        parts.append(polyline("median-line", [(x(g.generation), y(v)) for g, v in zip(gens, median)]))
        parts.append(polyline("best-line", [(x(g.generation), y(v)) for g, v in zip(gens, best)]))
    for g, b, m in zip(gens, best, median):
        parts.append(f'<circle class="conv-point" data-generation="{g.generation}" '
                     f'cx="{coord(x(g.generation))}" '
                     f'cy="{coord(y(b))}" r="2.6"><title>generation {g.generation}: best {num(b)}, '
                     f'median {num(m)} ({g.evaluations} evaluations so far)</title></circle>')
    parts.append("</svg>")
    return "".join(parts)


def polyline(cls: str, points: list[tuple[float, float]]) -> str:
    return f'<polyline class="{cls}" points="{" ".join(f"{coord(a)},{coord(b)}" for a, b in points)}"/>'
