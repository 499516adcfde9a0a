"""``evolve plot``: the Gantt chart or the convergence plot alone, as PNG or SVG, via matplotlib.

matplotlib is an optional extra (``pip install 'evolve[plot]'``): it is large and
only these pictures need it, so it is imported when a plot is asked for and its
absence is one clear message, not an ImportError at ``import evolve``. Figures are
made with ``Figure`` directly, never ``pyplot``, so no GUI backend or global state
is touched and plotting works on a headless machine.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

from evolve.model.errors import EvolveError
from evolve.report.data import Run
from evolve.report.history import ranking_from
from evolve.report.timeline import Timeline

if TYPE_CHECKING:
    from matplotlib.figure import Figure

Kind = Literal["gantt", "convergence"]
KINDS: tuple[Kind, ...] = ("gantt", "convergence")
FORMATS = (".png", ".svg")
CRITICAL, NORMAL, SLACK = "#e8590c", "#2f6fde", "#cbd5e1"


class PlotError(EvolveError):
    """A plot that cannot be made: matplotlib missing, or an unknown kind or format."""


def new_figure(width: float, height: float) -> Figure:
    """A matplotlib figure, or a :class:`PlotError` saying how to install the ``plot`` extra."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise PlotError("evolve plot needs matplotlib, which is not installed: "
                        "pip install 'evolve[plot]'") from None
    return Figure(figsize=(width, height), layout="constrained")


def save_plot(run: Run, kind: str, out: str | Path) -> Path:
    """Draw ``kind`` for ``run`` and save it; the format follows the file's suffix."""
    path = Path(out)
    if path.suffix.lower() not in FORMATS:
        raise PlotError(f"{path}: the output must end in .png or .svg")
    if kind == "gantt":
        figure = gantt_figure(run.timeline(), str(run.summary.get("problem", "")))
    elif kind == "convergence":
        figure = convergence_figure(run)
    else:
        raise PlotError(f"unknown plot kind {kind!r} (choose from {', '.join(KINDS)})")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(path, dpi=150)
    except OSError as exc:  # a parent that is a file, a read-only folder: bad --out, not a bug
        raise PlotError(f"{path}: cannot write the plot ({exc.strerror or exc})") from None
    return path


def gantt_figure(timeline: Timeline, title: str = "") -> Figure:
    """Tasks as horizontal bars (critical ones orange), resource usage as steps below."""
    rows = len(timeline.bars)
    strips = len(timeline.usage)
    figure = new_figure(10.0, 1.2 + 0.32 * rows + 1.0 * strips)
    axes = figure.subplots(1 + strips, 1, sharex=True, squeeze=False,
                           gridspec_kw={"height_ratios": [max(rows, 1) * 0.32] + [0.9] * strips})
    chart = axes[0][0]
    labels = []
    for i, bar in enumerate(timeline.bars):
        if bar.slack:
            chart.barh(i, bar.slack, left=bar.finish, height=0.18, color=SLACK)
        chart.barh(i, max(bar.duration, timeline.makespan * 0.002), left=bar.start, height=0.6,
                   color=CRITICAL if bar.critical else NORMAL)
        labels.append(f"{bar.id}  {bar.tool}")
    chart.set_yticks(range(rows), labels=labels, fontsize=8)
    chart.invert_yaxis()
    chart.axvline(timeline.makespan, color="#1f2430", linestyle="--", linewidth=1)
    chart.set_title(f"{title}  makespan {timeline.makespan:g}; critical path "
                    f"{' → '.join(timeline.critical_path)}".strip(), fontsize=9, loc="left")
    chart.grid(axis="x", color="#e5e7eb")
    for k, usage in enumerate(timeline.usage, start=1):
        ax = axes[k][0]
        times = [t for t, _ in usage.steps] + [max(timeline.makespan, usage.steps[-1][0])]
        levels = [level for _, level in usage.steps] + [usage.steps[-1][1]]
        ax.fill_between(times, levels, step="post", color="#a5c3f3", edgecolor=NORMAL)
        if usage.limit is not None:
            ax.axhline(usage.limit, color="#c92a2a", linestyle="--", linewidth=1)
        top = max(usage.limit or 0.0, usage.peak, 1.0)
        ax.set_ylim(0, top * 1.15)
        ax.set_ylabel("tasks running" if usage.name == "slots" else usage.name, fontsize=8,
                      rotation=0, ha="right", va="center")
    axes[-1][0].set_xlabel("time")
    return figure


def convergence_figure(run: Run) -> Figure:
    """Best (solid, one marker per generation) and median (dashed) per objective."""
    names = run.objectives
    ranking = ranking_from(str(run.summary.get("ranking", "")))
    directions = dict(zip(ranking.objectives, ranking.directions)) if ranking else {}
    columns = min(max(len(names), 1), 2)
    lines = (len(names) + columns - 1) // columns or 1
    figure = new_figure(5.0 * columns, 2.6 * lines)
    axes = figure.subplots(lines, columns, squeeze=False)
    for i, name in enumerate(names):
        ax = axes[i // columns][i % columns]
        gens = [g for g in run.generations if name in g.objectives]
        x = [g.generation for g in gens]
        ax.plot(x, [g.objectives[name].median for g in gens], linestyle="--", color="#9ca3af",
                label="median")
        ax.plot(x, [g.objectives[name].best for g in gens], marker="o", markersize=3,
                color=NORMAL, label="best")
        hint = {"min": " (lower is better)", "max": " (higher is better)"}.get(directions.get(name, ""), "")
        ax.set_title(name + hint, fontsize=9, loc="left")
        ax.set_xlabel("generation", fontsize=8)
        ax.grid(color="#e5e7eb")
        ax.legend(fontsize=7, loc="best")
    for j in range(len(names), lines * columns):
        axes[j // columns][j % columns].set_visible(False)
    return figure
