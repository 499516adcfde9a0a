"""The execution report: ``report.html`` of an ``evolve execute`` run folder.

It answers what a person asks after a run: did it meet the goal, and if not why; how the run
went against the plan (the planned-against-actual Gantt chart); which revisions the runtime
made, and why; and every step. Like the search report it is one self-contained file, written
from the folder's data only (``outcome.json``, ``events.jsonl``), that opens offline.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evolve.execute.outcome import RunStatus
from evolve.report.assets import CHECK_JS, CSP, CSS, ERRORS_JS, PAGE_JS
from evolve.report.execution_data import Execution, ExecutionReportError, Revision, TaskRow, load_execution
from evolve.report.execution_models import models_section
from evolve.report.execution_people import people_section
from evolve.report.execution_svg import ChartRow, execution_gantt_svg
from evolve.report.svg import esc, header_html, num

EXECUTION_REPORT = "report.html"

EXTRA_CSS = """
.planned-bar { fill:#fff; stroke:#64748b; stroke-width:1.2; stroke-dasharray:3 2; }
.planned-bar.invalidated { stroke:#cbd5e1; }
.gantt-bar.exec-done { fill:var(--ok); } .gantt-bar.exec-reconciled { fill:#1c7ed6; }
.gantt-bar.exec-failed { fill:var(--bad); }
.exec-mark { fill:#adb5bd; } .exec-mark.exec-assumption { fill:#f08c00; }
.gantt-row.invalidated .row-id, .gantt-row.invalidated .row-tool { fill:#9ca3af;
  text-decoration:line-through; }
.row-status { font-size:11px; fill:var(--muted); }
.row-status.st-done { fill:var(--ok); } .row-status.st-failed, .row-status.st-unknown { fill:var(--bad); }
.revision-line { stroke:#7048e8; stroke-width:1.4; stroke-dasharray:5 3; }
.revision-label { fill:#7048e8; font-size:11px; font-weight:600; }
.swatch.planned { background:#fff; border:1px dashed #64748b; }
.swatch.done { background:var(--ok); } .swatch.failed { background:var(--bad); }
.swatch.reconciled { background:#1c7ed6; } .swatch.revision { background:#7048e8; width:3px; }
.swatch.skip { background:#adb5bd; transform:rotate(45deg); width:8px; height:8px; }
td.ids { font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace; font-size:12px; }
"""

STATUS_CLASS: dict[str, str] = {RunStatus.COMPLETED: "ok", RunStatus.FAILED: "bad"}


def write_execution_report(run_dir: str | Path, out: str | Path | None = None) -> Path:
    """Write ``report.html`` into the execution's run folder (or to ``out``); return its path.

    Reads the folder only (never the tools, never pickles): a report can be made of any run
    folder, on any machine, also of one whose run is still going or was killed.
    """
    execution = load_execution(run_dir)
    path = Path(out) if out is not None else execution.folder / EXECUTION_REPORT
    try:
        path.write_text(render_execution(execution), encoding="utf-8")
    except OSError as exc:  # a folder where the file goes, a read-only place: not a bug
        raise ExecutionReportError(f"{path}: cannot write the report ({exc.strerror or exc})") from None
    return path


def render_execution(execution: Execution) -> str:
    """The whole page as a string."""
    title = f"evolve execution: {execution.problem}"
    body = "".join([
        header(execution),
        gantt_section(execution),
        revisions_section(execution),
        people_section(execution.outcome),
        models_section(execution.outcome),
        tasks_section(execution),
        steps_section(execution),
        facts_section(execution),
        f"<footer>written by evolve from {esc(execution.folder)}</footer>",
        f'<div id="report-check" hidden data-expected-bars="{execution.segment_count()}" '
        'data-expected-points="{}"></div>',
    ])
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<link rel="icon" href="data:,">'
        f"<title>{esc(title)}</title><style>{CSS}{EXTRA_CSS}</style><script>{ERRORS_JS}</script></head>"
        f"<body><main>{body}</main><script>{PAGE_JS}</script><script>{CHECK_JS}</script>"
        "</body></html>\n"
    )


def header(execution: Execution) -> str:
    outcome = execution.outcome
    status = str(outcome.get("status", RunStatus.RUNNING))
    reason = str(outcome.get("reason", "not ended"))
    calls = outcome.get("calls_by_risk") if isinstance(outcome.get("calls_by_risk"), Mapping) else {}
    assert isinstance(calls, Mapping)
    cards = [
        ("status", status, STATUS_CLASS.get(status, "")),
        ("reason", reason, ""),
        ("steps", f"{outcome.get('steps', '?')}/{outcome.get('max_steps', '?')}", ""),
        ("replans", f"{outcome.get('replans', len(execution.revisions))}/"
                    f"{outcome.get('max_replans', '?')}", ""),
        *((f"{risk} calls", str(count), "") for risk, count in calls.items()),
        ("writes reconciled", str(outcome.get("reconciled", 0)), ""),
    ]
    elapsed = outcome.get("elapsed")
    if isinstance(elapsed, (int, float)):
        cards.append(("run time", f"{num(round(float(elapsed), 3))}{'' if execution.virtual else ' s'}", ""))
    message = outcome.get("message")
    notes = "".join(f'<p class="no">{esc(note)}</p>' for note in execution.notes)
    unknown = outcome.get("unknown") or []
    if unknown:
        notes += (f'<p class="no">writes left unknown (dispatched, never confirmed, no reconcile): '
                  f'{esc(", ".join(map(str, unknown)))}</p>')
    return header_html(execution.problem, str(message or ""), cards, notes)


def chart_row(row: TaskRow, planned: tuple[float, float] | None, actual: bool = True) -> ChartRow:
    return ChartRow(id=row.id, tool=row.tool, status=row.status, planned=planned,
                    segments=row.segments if actual else ())


def gantt_section(execution: Execution) -> str:
    legend = ('<span class="legend"><span><span class="swatch planned"></span>planned</span>'
              '<span><span class="swatch done"></span>done</span>'
              '<span><span class="swatch reconciled"></span>reconciled</span>'
              '<span><span class="swatch failed"></span>failed attempt</span>'
              '<span><span class="swatch skip"></span>skipped / assumption</span>'
              '<span><span class="swatch revision"></span>revision</span></span>')
    markers = [(r.time, f"r{r.revision}") for r in execution.revisions if r.time is not None]
    if execution.virtual:
        rows = [chart_row(row, row.planned) for row in execution.rows]
        span = max([execution.end, *(p[1] for r in execution.rows if (p := r.planned))])
        chart = execution_gantt_svg(rows, span, markers)
        lead = ("The plan's schedule (hollow) against what ran (solid, one bar per attempt) on the "
                "run's virtual clock; a revision's tasks are planned from the moment it was made.")
        return (f'<section id="gantt"><h2>Planned against actual</h2><p class="lead">{lead}{legend}</p>'
                f'<div class="scroll">{chart}</div></section>')
    # Real tools: the plan's times are the problem's units and the run's are seconds, so each
    # gets its own axis rather than one misleading scale.
    actual = execution_gantt_svg([chart_row(row, None) for row in execution.rows], execution.end, markers,
                                 label="what ran", unit=" s")
    planned_charts = []
    for commit in execution.commits:
        base = commit.base
        rows = [chart_row(row, (commit.planned[row.id][0] - base, commit.planned[row.id][1] - base),
                          actual=False)
                for row in execution.rows if row.id in commit.planned]
        span = max((finish for _, finish in (r.planned for r in rows if r.planned)), default=0.0)
        planned_charts.append(
            f"<h3>revision {commit.revision}: the plan's schedule (problem time units, from its commit)</h3>"
            f'<div class="scroll">{execution_gantt_svg(rows, span, label=f"revision {commit.revision}")}'
            "</div>")
    lead = ("What ran, one bar per attempt on the run clock (seconds), and below it each revision's "
            "planned schedule in the problem's own time units: the plan and the run share the rows, "
            "not the scale.")
    return (f'<section id="gantt"><h2>Planned against actual</h2><p class="lead">{lead}{legend}</p>'
            f'<div class="scroll">{actual}</div>{"".join(planned_charts)}</section>')


def ids(items: tuple[str, ...]) -> str:
    return esc(", ".join(items)) if items else "–"


def audit(rev: Revision) -> str:
    """A revision's audit trail under its reason: the revision its patch applied to, and the
    values observed that caused it (shortened; ``outcome.json`` has them whole)."""
    parts = []
    if rev.base_version is not None:
        parts.append(f"patch of revision {rev.base_version}")
    observed = rev.evidence.get("observed")
    if isinstance(observed, Mapping) and observed:
        seen = "; ".join(f"{ref} = {json.dumps(value, sort_keys=True, default=str)}"
                         for ref, value in observed.items())
        parts.append("observed " + (seen if len(seen) <= 240 else seen[:239] + "…"))
    return f'<div class="meta">{esc(", ".join(parts))}</div>' if parts else ""


def revisions_section(execution: Execution) -> str:
    first = execution.commits[0] if execution.commits else None
    rows = []
    if first is not None:
        rows.append(f'<tr><td class="num">0</td><td class="num">{num(round(first.time, 3))}</td>'
                    f"<td>the first plan ({first.tasks} tasks)</td><td>–</td><td>–</td><td>–</td>"
                    "<td></td></tr>")
    for rev in execution.revisions:
        at = num(round(rev.time, 3)) if rev.time is not None else "?"
        who = esc(rev.replanner) + (f'<div class="meta">{esc(rev.note)}</div>' if rev.note else "")
        rows.append(f'<tr><td class="num">{rev.revision}</td><td class="num">{at}</td>'
                    f'<td><span class="reason">{esc(rev.reason)}</span>{audit(rev)}</td>'
                    f'<td class="ids">{ids(rev.removed)}</td>'
                    f'<td class="ids">{ids(rev.added)}</td><td class="ids">{ids(rev.revised)}</td>'
                    f"<td>{who}</td></tr>")
    lead = ("Each revision is a patch the validator checked: the tasks it invalidated (they stay in "
            "view and never run), added and updated, and why the plan had to change.")
    if not execution.revisions:
        lead = "The run kept its first plan: no revision was needed."
    return ('<section id="revisions"><h2>Revisions</h2>'
            f'<p class="lead">{lead}</p><div class="scroll"><table><thead><tr><th class="num">rev</th>'
            '<th class="num">at</th><th>why</th><th>invalidated</th><th>added</th><th>updated</th>'
            f'<th>replanner</th></tr></thead><tbody>{"".join(rows)}</tbody></table></div></section>')


def span_text(start: float | None, finish: float | None) -> str:
    if start is None or finish is None:
        return "–"
    return f"{num(round(start, 3))} – {num(round(finish, 3))}"


def tasks_section(execution: Execution) -> str:
    tasks = execution.outcome.get("tasks") if isinstance(execution.outcome.get("tasks"), Mapping) else {}
    assert isinstance(tasks, Mapping)
    rows = []
    for row in execution.rows:
        info = tasks.get(row.id) if isinstance(tasks.get(row.id), Mapping) else {}
        assert isinstance(info, Mapping)
        ran = [s for s in row.segments if s.status not in ("skipped", "assumption")]
        start = ran[0].start if ran else None
        finish = ran[-1].finish if ran else None
        planned = span_text(*row.planned) if row.planned else "–"
        cls = {"done": "yes", "failed": "no", "unknown": "no"}.get(row.status, "")
        note = row.error or "; ".join(s.note for s in row.segments if s.note)
        rows.append(f'<tr><td><code>{esc(row.id)}</code></td><td>{esc(row.tool)}</td><td>{esc(row.risk)}</td>'
                    f'<td class="{cls}">{esc(row.status)}</td><td class="num">{row.revision}</td>'
                    f'<td class="num">{row.attempts}</td><td class="num">{planned}</td>'
                    f'<td class="num">{span_text(start, finish)}</td><td class="meta">{esc(note)}</td></tr>')
        del info
    return ('<section id="tasks"><h2>Tasks</h2><p class="lead">Every task of every revision. Planned '
            'times are from the revision it ran under; actual times are on the run clock.</p>'
            '<div class="scroll"><table class="sortable"><thead><tr><th>task</th><th>tool</th><th>risk</th>'
            '<th>status</th><th class="num">rev</th><th class="num">attempts</th><th class="num">planned</th>'
            f'<th class="num">actual</th><th>note</th></tr></thead><tbody>{"".join(rows)}</tbody></table>'
            "</div></section>")


SKIP_KEYS = ("event", "seq", "time", "plan", "planned")


def event_detail(event: Mapping[str, Any]) -> str:
    parts = []
    for key, value in event.items():
        if key in SKIP_KEYS or value is None or value == [] or key == "task":
            continue
        if isinstance(value, float):
            value = num(round(value, 4))
        parts.append(f"{key} {value}")
    return "; ".join(parts)


def steps_section(execution: Execution) -> str:
    rows = []
    for event in execution.events:
        at = event.get("time")
        shown = num(round(float(at), 4)) if isinstance(at, (int, float)) else ""
        rows.append(f'<tr><td class="num">{esc(event.get("seq", ""))}</td><td class="num">{shown}</td>'
                    f'<td><code>{esc(event["event"])}</code></td><td>{esc(event.get("task", ""))}</td>'
                    f'<td class="meta">{esc(event_detail(event))}</td></tr>')
    return (f'<section id="steps"><h2>Steps</h2><details><summary>{len(execution.events)} events '
            '(events.jsonl)</summary><div class="scroll"><table><thead><tr><th class="num">seq</th>'
            '<th class="num">time</th><th>event</th><th>task</th><th>detail</th></tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table></div></details></section>')


def facts_section(execution: Execution) -> str:
    outcome = execution.outcome
    facts: list[tuple[str, Any]] = [("run folder", execution.folder)]
    for key in ("simulate", "seed", "clock", "calls"):
        if key in outcome:
            facts.append((key, outcome[key]))
    criteria = outcome.get("criteria")
    if isinstance(criteria, Mapping):
        facts.append(("criteria", ", ".join(f"{k} by {v or 'nobody'}" for k, v in criteria.items())))
    excluded = outcome.get("excluded_tools")
    if isinstance(excluded, list) and excluded:
        facts.append(("tools excluded for the run", ", ".join(map(str, excluded))))
    items = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in facts)
    return f'<section id="run"><h2>Run</h2><dl class="facts">{items}</dl></section>'
