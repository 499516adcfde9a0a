"""The run report: one self-contained HTML file a person can open anywhere, offline.

Charts are SVG written on the server side (see the ``*_svg`` modules) so the
page shows everything even with scripts off; the small inline script only adds
hover highlighting, table sorting and the self-check a browser test reads.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from evolve.fitness.evaluation import evaluate_plan
from evolve.model.problem import Problem
from evolve.report.assets import CHECK_JS, CSP, CSS, ERRORS_JS, PAGE_JS
from evolve.report.convergence_svg import convergence_svgs
from evolve.report.data import CandidateRecord, Run, RunError, load_run
from evolve.report.gantt_svg import gantt_svg
from evolve.report.graph_svg import graph_svg
from evolve.report.history import (
    changed_values,
    describe_patch,
    final_population,
    lineage,
    ranking_from,
)
from evolve.report.svg import esc, header_html, num
from evolve.report.timeline import Timeline

REPORT_NAME = "report.html"
KNOWN_SUMMARY = ("problem", "best", "ranking", "options")


def write_report(run_dir: str | Path, problem: str | Path | Problem | None = None,
                 out: str | Path | None = None) -> Path:
    """Write ``report.html`` into the run folder (or to ``out``) and return its path.

    ``problem`` overrides the run's ``problem.json``; without either the report
    is drawn from the stored schedule and shows tasks running instead of resources.
    """
    run = load_run(run_dir, problem)
    path = Path(out) if out is not None else run.folder / REPORT_NAME
    try:
        path.write_text(render(run), encoding="utf-8")
    except OSError as exc:  # a folder that is missing, a file, read-only: bad --out, not a bug
        raise RunError(f"{path}: cannot write the report ({exc.strerror or exc})") from None
    return path


def render(run: Run) -> str:
    """The whole page as a string."""
    timeline = run.timeline()
    ranking = ranking_from(str(run.summary.get("ranking", "")))
    directions = dict(zip(ranking.objectives, ranking.directions)) if ranking else {}
    title = f"evolve report: {run.summary.get('problem', run.folder.name)}"
    body = "".join([
        header(run, timeline),
        plan_section(timeline, run),
        convergence_section(run, directions),
        lineage_section(run, directions),
        population_section(run, directions),
        facts_section(run),
        f'<footer>written by evolve from {esc(run.folder)}</footer>',
        check_element(timeline, run),
    ])
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<link rel="icon" href="data:,">'
        f"<title>{esc(title)}</title><style>{CSS}</style><script>{ERRORS_JS}</script></head>"
        f"<body><main>{body}</main><script>{PAGE_JS}</script><script>{CHECK_JS}</script>"
        "</body></html>\n"
    )


def header(run: Run, timeline: Timeline) -> str:
    best = run.summary.get("best") if isinstance(run.summary.get("best"), Mapping) else {}
    assert isinstance(best, Mapping)
    feasible = bool(best.get("feasible", False))
    doubted = ""
    if feasible and run.problem is not None:  # a folder's claim, checked again on its own plan
        feasible = evaluate_plan(run.problem, run.plan, ()).feasible
        if not feasible:
            doubted = ('<p class="no">the summary says feasible, but the plan in best.json is not '
                       "valid and complete for the problem</p>")
    objective = run.problem.objective if run.problem is not None else ""
    cards = [
        ("makespan", num(timeline.makespan), ""),
        ("tasks", str(len(run.plan.tasks)), ""),
        ("feasible", "yes" if feasible else "no", "ok" if feasible else "bad"),
        ("best plan", f"{best.get('id', '?')}", ""),
        ("found in generation", str(best.get("generation", "?")), ""),
        ("generations", str(len(run.generations) - 1 if run.generations else 0), ""),
        ("evaluations", str(run.summary.get("evaluations", "?")), ""),
    ]
    if isinstance(run.summary.get("seconds"), (int, float)):
        cards.append(("wall time", f"{float(run.summary['seconds']):.3g} s", ""))
    chain = " → ".join(f"<b>{esc(t)}</b>" for t in timeline.critical_path) or "none"
    errors = "".join(f'<p class="no">error: {esc(e)}</p>' for e in best.get("errors", ()) or ())
    return header_html(str(run.summary.get("problem", run.folder.name)), objective, cards,
                       f'<p class="path">critical path: {chain}</p>{gains(run)}{doubted}{errors}')


def gains(run: Run) -> str:
    """What the search won: each objective whose best moved from generation 0 to the end."""
    if len(run.generations) < 2:
        return ""
    first, last = run.generations[0].objectives, run.generations[-1].objectives
    moved = []
    for name in run.objectives:
        if name in first and name in last and first[name].best != last[name].best:
            before, after = first[name].best, last[name].best
            change = f" ({(after - before) / abs(before):+.0%})" if before else ""
            moved.append(f"{esc(name)} <b>{num(before)} → {num(after)}</b>{change}")
    if not moved:
        return '<p class="gain">the best of generation 0 was not improved on</p>'
    return f'<p class="gain">search improved on generation 0: {"; ".join(moved)}</p>'


def plan_section(timeline: Timeline, run: Run) -> str:
    source = ("scheduled again from " + esc(run.problem_source) if run.problem is not None else
              "drawn from the stored schedule (no problem.json: resource usage is not known)")
    note = ""
    if timeline.unscheduled:
        stuck = esc(", ".join(timeline.unscheduled))
        note = f'<p class="no">not schedulable (on or behind a cycle): {stuck}</p>'
    return (
        '<section id="plan"><h2>Best plan</h2>'
        '<p class="lead">Tasks in columns by dependency level; the critical path, the chain '
        'that sets the makespan, in orange. Hover a task to find it in both views.'
        '<span class="legend"><span><span class="swatch crit"></span>critical</span>'
        '<span><span class="swatch norm"></span>other task</span>'
        '<span><span class="swatch slack"></span>slack</span></span></p>'
        f'<div class="scroll">{graph_svg(timeline)}</div>{note}</section>'
        '<section id="gantt"><h2>Schedule</h2>'
        f'<p class="lead">When each task runs ({source}), and what it holds: the strips below share '
        'the time axis, with each capacity as a dashed red line.</p>'
        f'<div class="scroll">{gantt_svg(timeline)}</div></section>'
    )


def convergence_section(run: Run, directions: Mapping[str, str]) -> str:
    panels = []
    for name, svg in convergence_svgs(run.generations, run.objectives, dict(directions)):
        stats = [g.objectives[name] for g in run.generations if name in g.objectives]
        first, last = (stats[0].best, stats[-1].best) if stats else (None, None)
        direction = directions.get(name)
        arrow = {"min": " (lower is better)", "max": " (higher is better)"}.get(direction or "", "")
        moved = (f"best {num(first)} → {num(last)}" if first is not None and last is not None
                 and first != last else f"best {num(last)} throughout" if last is not None else "no data")
        panels.append(f'<div class="panel"><h3>{esc(name)}<span class="meta">{arrow}</span></h3>'
                      f'<p class="final">{moved}</p>{svg}</div>')
    return (
        '<section id="convergence"><h2>Convergence</h2>'
        '<p class="lead">Best and median of the population per generation, one chart per objective '
        'in ranking order.<span class="legend"><span><span class="swatch best"></span>best</span>'
        '<span><span class="swatch median"></span>median</span></span></p>'
        f'<div class="panels">{"".join(panels)}</div></section>'
    )


def operator_badge(record: CandidateRecord) -> str:
    llm = record.operator.lower().startswith("llm")
    return f'<span class="op{" llm" if llm else ""}">{esc(record.operator)}</span>'


def meta_lines(record: CandidateRecord) -> list[str]:
    """Operator metadata in a line each: the LLM call behind a child, or why its patch was refused.

    A refused LLM patch rides on the random child made in its place, so it is
    shown as such rather than as the maker of the child.
    """
    lines: list[str] = []
    for key, value in record.meta.items():
        if key == "llm" and isinstance(value, Mapping):
            call = {k: v for k, v in value.items() if k not in ("reason", "detail")}
            if value.get("accepted") is False:
                lines.append(f"LLM patch refused ({value.get('rejected', '?')}); "
                             f"made by {record.operator} instead")
                call = {k: v for k, v in call.items() if k not in ("accepted", "rejected")}
            lines.append(", ".join(f"{k} {short_meta(v)}" for k, v in call.items()))
        elif key != "reason":
            lines.append(f"{key}: {short_meta(value)}")
    return [line for line in lines if line]


def lineage_section(run: Run, directions: Mapping[str, str]) -> str:
    chain = lineage(run)
    rows = []
    for i, record in enumerate(chain):
        parent = chain[i - 1] if i > 0 else None
        lines = describe_patch(record.patch)
        if not record.parents:  # the tasks it adds, not the patch's lines (its priority is one)
            added = sum(1 for task in record.patch.get("add") or () if isinstance(task, Mapping))
            change = f"built from scratch: {added} task{'s' if added != 1 else ''}"
            listing = esc("\n".join(lines))
            change = f'<details><summary>{change}</summary><pre class="patch">{listing}</pre></details>'
        else:
            change = f'<pre class="patch">{esc(chr(10).join(lines)) or "(no change)"}</pre>'
        reason = record.reason
        extra = "".join(f'<div class="meta">{esc(line)}</div>' for line in meta_lines(record))
        parents = ", ".join(record.parents) or "–"
        rows.append(
            f"<tr><td class=\"num\">{record.generation}</td><td><code>{esc(record.id)}</code></td>"
            f"<td>{operator_badge(record)}</td><td>{esc(parents)}</td><td>{change}</td>"
            f"<td>{effect(record, parent, directions)}</td>"
            f"<td>{f'<span class=reason>{esc(reason)}</span>' if reason else ''}{extra}</td></tr>"
        )
    return (
        '<section id="lineage"><h2>How the best plan was made</h2>'
        '<p class="lead">Its line of first parents, oldest first: the operator that made each step, '
        'the edit it made (the patch against the first parent) and what that did to the fitness.</p>'
        '<div class="scroll"><table><thead><tr><th class="num">gen</th><th>candidate</th><th>operator</th>'
        '<th>parents</th><th>change</th><th>effect</th><th>reason</th></tr></thead>'
        f'<tbody>{"".join(rows)}</tbody></table></div></section>'
    )


def effect(record: CandidateRecord, parent: CandidateRecord | None, directions: Mapping[str, str]) -> str:
    if parent is None:
        return "<br>".join(f"{esc(k)} {num(v)}" for k, v in record.values.items())
    parts = []
    for name, (before, after) in changed_values(record, parent).items():
        direction = directions.get(name)
        cls = ""
        if before is not None and direction is not None:
            better = after < before if direction == "min" else after > before
            cls = "better" if better else "worse"
        shown = f"{num(before)} → {num(after)}" if before is not None else num(after)
        parts.append(f'<span class="delta {cls}">{esc(name)} {shown}</span>')
    return "<br>".join(parts) or '<span class="meta">same fitness</span>'


def short_meta(value: Any) -> str:
    text = " ".join(f"{k}={v}" for k, v in value.items()) if isinstance(value, Mapping) else str(value)
    return text if len(text) <= 160 else text[:159] + "…"


def population_section(run: Run, directions: Mapping[str, str]) -> str:
    population = final_population(run)
    names = run.objectives
    best_id = run.best_id
    arrows = {"min": " ↓", "max": " ↑"}
    heads = "".join(f'<th class="num">{esc(n)}{arrows.get(directions.get(n, ""), "")}</th>' for n in names)
    rows = []
    for rank, record in enumerate(population.members, start=1):
        cells = "".join(f'<td class="num" data-sort="{record.values.get(n, "")}">'
                        f'{num(record.values[n]) if n in record.values else "–"}</td>' for n in names)
        status = ('<span class="no">failed</span>' if record.failed else
                  '<span class="yes">yes</span>' if record.feasible else '<span class="no">no</span>')
        problems = record.failed or "; ".join(record.errors)
        rows.append(
            f'<tr class="{"best" if record.id == best_id else ""}"><td class="num">{rank}</td>'
            f"<td><code>{esc(record.id)}</code></td><td class=\"num\">{record.generation}</td>"
            f"<td>{operator_badge(record)}</td><td>{status}</td>{cells}"
            f'<td class="meta">{esc(problems)}</td></tr>'
        )
    note = f'<p class="note">{esc(population.note)}</p>' if population.note else ""
    return (
        '<section id="population"><h2>Final population</h2>'
        f'<p class="lead">Every plan alive at the end, best first by the run\'s ranking '
        f'({esc(run.summary.get("ranking", "unknown"))}). Click a header to sort.</p>{note}'
        '<div class="scroll"><table class="sortable"><thead><tr><th class="num">rank</th><th>candidate</th>'
        f'<th class="num">gen</th><th>operator</th><th>feasible</th>{heads}<th>errors</th></tr></thead>'
        f'<tbody>{"".join(rows)}</tbody></table></div></section>'
    )


def facts_section(run: Run) -> str:
    options = run.summary.get("options")
    facts: list[tuple[str, Any]] = [("problem", run.summary.get("problem", "?"))]
    if run.problem_source:
        facts.append(("problem file", run.problem_source))
    if isinstance(options, Mapping):  # unset options (None, {}) are noise at a glance
        facts.extend((str(k), v) for k, v in options.items() if v is not None and v != {})
    facts.append(("ranking", run.summary.get("ranking", "?")))
    labels = {"seconds": "wall time (s)", "evaluations_per_second": "evaluations per second",
              "cache_hits": "cache hits", "generations": "generations run"}
    for key, value in flatten((k, v) for k, v in run.summary.items() if k not in KNOWN_SUMMARY):
        facts.append((labels.get(key, key.replace("_", " ")), value))
    calls = sum(1 for c in run.candidates.values() if c.meta)
    if calls and not any("llm" in k for k, _ in facts):
        facts.append(("candidates with operator metadata (LLM)", calls))
    items = "".join(f"<dt>{esc(k)}</dt><dd>{esc('–' if v is None else v)}</dd>" for k, v in facts)
    return f'<section id="run"><h2>Run</h2><dl class="facts">{items}</dl></section>'


def flatten(items: Iterable[tuple[str, Any]], prefix: str = "") -> list[tuple[str, Any]]:
    """Nested summary entries (such as ``llm: {calls, tokens}``) as dotted keys."""
    out: list[tuple[str, Any]] = []
    for key, value in items:
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.extend(flatten(value.items(), f"{name}."))
        else:
            out.append((name, value))
    return out


def check_element(timeline: Timeline, run: Run) -> str:
    """The hidden element the page's self-check fills in; it also says what to expect."""
    return (f'<div id="report-check" hidden data-expected-bars="{len(timeline.bars)}" '
            f'data-expected-points="{len(run.generations)}"></div>')
