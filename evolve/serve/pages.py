"""The pages of ``evolve serve``, written as strings on the server (no front-end build).

The run page reuses the report's own drawings and sections (:mod:`evolve.report`): the plan
graph and Gantt chart, the planned-against-actual chart, the revisions and why, the people and
model-call sections; the inbox shows each pending item in the lines ``evolve pending`` prints
(:func:`~evolve.execute.inbox.describe`). Everything read from a run folder is escaped.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evolve import defaults
from evolve.execute.inbox import describe
from evolve.execute.outcome import RunStatus
from evolve.execute.records import AskKind
from evolve.execute.session import open_run
from evolve.model.errors import EvolveError
from evolve.model.plan_file import plan_from_dict
from evolve.model.problem_file import problem_from_dict
from evolve.report.data import load_run
from evolve.report.execution import gantt_section, header, revisions_section, tasks_section
from evolve.report.execution_data import load_execution
from evolve.report.execution_models import models_section
from evolve.report.execution_people import people_section
from evolve.report.graph_svg import graph_svg
from evolve.report.html import convergence_section, plan_section
from evolve.report.html import header as search_header
from evolve.report.svg import esc
from evolve.report.timeline import timeline_of
from evolve.serve.auth import CSRF_FIELD
from evolve.serve.runs import PROBLEM, RunInfo, read_object

STATUS_CLASS: dict[str, str] = {status: f"st-{status}" for status in RunStatus}
RESULT_CHARS = 600
"""Tool outputs longer than this show their start, and the whole in a fold."""


def layout(title: str, body: str, *, person: str, csrf: str, active: str,
           flash: Sequence[tuple[str, str]] = (), pending: int | None = None) -> str:
    """A whole page: the report's styles and scripts and the server's own, all from the package."""
    nav = "".join(
        f'<a href="{href}" class="{"on" if key == active else ""}">{label}</a>'
        for key, href, label in (("runs", "/", "Runs"),
                                 ("inbox", "/inbox", "Inbox" + (f" ({pending})" if pending else "")))
    )
    notes = "".join(f'<p class="flash {esc(kind)}" role="status">{esc(text)}</p>' for kind, text in flash)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta name="csrf-token" content="{esc(csrf)}">'
        '<link rel="icon" href="data:,">'
        '<link rel="stylesheet" href="/static/report.css"><link rel="stylesheet" href="/static/serve.css">'
        f"<title>{esc(title)}</title></head><body>"
        f'<nav class="top"><b>evolve serve</b>{nav}<span class="who">signed in as {esc(person)}</span></nav>'
        f'<main data-refresh="{defaults.SERVE_REFRESH_MS}">{notes}{body}</main>'
        '<script src="/static/report.js"></script><script src="/static/serve.js"></script></body></html>\n'
    )


def age(seconds: float) -> str:
    return esc(f"{seconds:.0f}")


def runs_rows(runs: Sequence[RunInfo]) -> str:
    """The rows of the runs table (the partial the page fetches again while runs progress)."""
    if not runs:
        return '<tr><td colspan="6" class="meta">no run folders here yet</td></tr>'
    rows = []
    for run in runs:
        reason = run.reason + (f": {run.message}" if run.message and run.message != run.reason else "")
        rows.append(
            f'<tr data-run="{esc(run.name)}" data-status="{esc(run.status)}">'
            f'<td><a href="/runs/{esc(run.name)}">{esc(run.name)}</a></td><td>{esc(run.kind)}</td>'
            f'<td><span class="status {STATUS_CLASS.get(run.status, "")}">{esc(run.status)}</span></td>'
            f'<td>{esc(run.goal)}</td><td class="meta">{esc(reason)}</td>'
            f'<td class="num" data-sort="{run.updated:.3f}"><time data-epoch="{run.updated:.3f}">'
            f"{esc(iso_time(run.updated))}</time></td></tr>"
        )
    return "".join(rows)


def iso_time(epoch: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def runs_page(runs: Sequence[RunInfo], root: Path) -> str:
    return (
        f'<section id="runs"><h2>Runs</h2><p class="lead">The run folders of {esc(root)}, newest first; '
        "the list follows them while they run.</p>"
        '<div class="scroll"><table class="runs"><thead><tr><th>run</th><th>kind</th><th>status</th>'
        '<th>goal</th><th>reason</th><th class="num">updated</th></tr></thead>'
        f'<tbody data-live="/partials/runs">{runs_rows(runs)}</tbody></table></div></section>'
    )


def declared_outputs(root: Path, run: str, tool: str) -> list[str]:
    """The outputs a person's tool declares (the answer form's hint), from the run's problem."""
    tools = read_object(root / run / PROBLEM).get("tools")
    spec = tools.get(tool) if isinstance(tools, Mapping) else None
    outputs = spec.get("outputs") if isinstance(spec, Mapping) else None
    return [str(o) for o in outputs] if isinstance(outputs, list) else []


def item_card(item: Mapping[str, Any], csrf: str, root: Path, back: str = "") -> str:
    """One pending item: the lines ``evolve pending`` prints, and the forms that decide it. Each
    form carries the action hash shown, so a changed action is refused, not approved."""
    run, task = str(item["run"]), str(item["task"])
    action = str(item.get("action_hash") or "")
    key = f"{run}/{task}"
    hidden = (f'<input type="hidden" name="{CSRF_FIELD}" value="{esc(csrf)}">'
              f'<input type="hidden" name="run" value="{esc(run)}">'
              f'<input type="hidden" name="task" value="{esc(task)}">'
              f'<input type="hidden" name="action" value="{esc(action)}">'
              f'<input type="hidden" name="ask" value="{esc(item.get("ask", ""))}">'
              + (f'<input type="hidden" name="back" value="{esc(back)}">' if back else ""))
    if item["kind"] == AskKind.APPROVAL:
        forms = (
            f'<form method="post" action="/inbox/decide" class="decide approve">{hidden}'
            '<input type="hidden" name="verdict" value="approved">'
            '<input name="note" placeholder="note (optional)" aria-label="approval note">'
            f'<button type="submit" class="approve" data-key="{esc(key)}">Approve</button></form>'
            f'<form method="post" action="/inbox/decide" class="decide reject">{hidden}'
            '<input type="hidden" name="verdict" value="rejected">'
            '<input name="note" required placeholder="why (required)" aria-label="rejection note">'
            f'<button type="submit" class="reject" data-key="{esc(key)}">Reject</button></form>'
        )
    else:
        fields = declared_outputs(root, run, str(item["tool"]))
        hint = json.dumps({f: "…" for f in fields}) if fields else "{}"
        forms = (
            f'<form method="post" action="/inbox/decide" class="decide answer">{hidden}'
            '<input type="hidden" name="verdict" value="answered">'
            f'<textarea name="outputs" required rows="3" placeholder="{esc(hint)}" '
            'aria-label="outputs (JSON)"></textarea>'
            '<input name="note" placeholder="note (optional)" aria-label="answer note">'
            f'<button type="submit" class="answer" data-key="{esc(key)}">Answer</button></form>'
        )
    lines = "\n".join(describe(dict(item)))
    return (
        f'<article class="item" data-key="{esc(key)}" data-action="{esc(action)}">'
        f'<h3><a href="/runs/{esc(run)}">{esc(run)}</a> · {esc(task)} · {esc(item["tool"])} '
        f'<span class="status st-waiting">{esc(item["kind"])}</span></h3>'
        f'<pre class="action">{esc(lines)}</pre>'
        + (f'<p class="meta">action hash <code>{esc(action)}</code></p>' if action else "")
        + f'<div class="forms">{forms}</div></article>'
    )


def inbox_items(items: Sequence[Mapping[str, Any]], csrf: str, root: Path, errors: Mapping[str, str]) -> str:
    """The inbox's list (the partial the page fetches again)."""
    cards = "".join(item_card(item, csrf, root) for item in items) or '<p class="meta">nothing pending</p>'
    broken = "".join(f'<p class="no">{esc(run)}: {esc(error)}</p>' for run, error in sorted(errors.items()))
    return cards + broken


def inbox_page(items: Sequence[Mapping[str, Any]], csrf: str, root: Path, errors: Mapping[str, str]) -> str:
    return (
        '<section id="inbox"><h2>Inbox</h2><p class="lead">Every approval and question the runs wait '
        "for. An approval approves the exact action shown (the writes downstream, with their bound "
        "inputs); if the run changed it since this page was loaded, the decision is refused.</p>"
        f'<div data-live="/partials/inbox" data-keep-edits="1">{inbox_items(items, csrf, root, errors)}</div>'
        "</section>"
    )


def short_json(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    if len(text) <= RESULT_CHARS:
        return f"<code>{esc(text)}</code>"
    return (f"<details><summary><code>{esc(text[:RESULT_CHARS])}…</code></summary>"
            f"<pre>{esc(json.dumps(value, sort_keys=True, indent=2, default=str))}</pre></details>")


def calls_section(folder: Path) -> str:
    """What each tool call returned, from the journal (read only)."""
    try:
        journal, _ = open_run(folder, read_only=True)
    except EvolveError as exc:
        return f'<section id="calls"><h2>Tool calls</h2><p class="no">{esc(exc)}</p></section>'
    try:
        calls = journal.calls()
    finally:
        journal.close()
    rows = "".join(
        f'<tr><td class="num">{c.call_id}</td><td><code>{esc(c.task_id)}</code></td><td>{esc(c.tool)}</td>'
        f'<td>{esc(c.risk)}</td><td class="num">{c.attempt}</td><td>{esc(c.status)}</td>'
        f"<td>{short_json(c.outputs) if c.outputs is not None else esc(c.error or '')}</td></tr>"
        for c in calls
    )
    return ('<section id="calls"><h2>Tool calls</h2><p class="lead">Every call the run made and what '
            'it returned (or why it failed), from the journal.</p><div class="scroll"><table><thead><tr>'
            '<th class="num">call</th><th>task</th><th>tool</th><th>risk</th><th class="num">attempt</th>'
            f'<th>status</th><th>returned</th></tr></thead><tbody>{rows}</tbody></table></div></section>')


def plan_graph(folder: Path, outcome: Mapping[str, Any]) -> str:
    """The run's current plan as the report draws a plan: its graph and its schedule under the
    problem (the last revision's plan once the run has ended, else the plan it started from)."""
    problem_doc = read_object(folder / PROBLEM)
    plan_doc = outcome.get("plan")
    if not isinstance(plan_doc, Mapping):
        plan_doc = read_object(folder / "plan.json")
    try:
        problem = problem_from_dict(dict(problem_doc), str(folder / PROBLEM))
        plan = plan_from_dict(dict(plan_doc or {}), str(folder / "plan.json"))
        timeline = timeline_of(problem, plan)
    except (EvolveError, KeyError, TypeError, ValueError) as exc:
        why = f"the plan cannot be drawn: {exc}"
        return f'<section id="plan"><h2>Plan</h2><p class="no">{esc(why)}</p></section>'
    return ('<section id="plan"><h2>Plan</h2><p class="lead">The plan as a graph (tasks in columns by '
            'dependency level, the critical path in orange), as the report draws it.</p>'
            f'<div class="scroll">{graph_svg(timeline)}</div></section>')


def timeline_section(after: int, name: str) -> str:
    """The live timeline: the run's events as they are journaled (sent by the event stream)."""
    return (
        '<section id="timeline"><h2>Timeline</h2><p class="lead">The run\'s events as they happen '
        '(<span id="live-state">connecting…</span>; <span id="live-count">0</span> events).</p>'
        f'<div class="scroll timeline"><table><thead><tr><th class="num">seq</th><th class="num">time</th>'
        f'<th>event</th><th>task</th><th>detail</th></tr></thead><tbody id="events" data-stream='
        f'"/runs/{esc(name)}/events" data-after="{after}"></tbody></table></div></section>'
    )


def run_page(info: RunInfo, folder: Path, pending: Sequence[Mapping[str, Any]], csrf: str, root: Path) -> str:
    """One run's page: what the report shows, live."""
    status = (f'<p class="runline"><span class="status {STATUS_CLASS.get(info.status, "")}" '
              f'id="run-status" data-status="{esc(info.status)}">{esc(info.status)}</span> '
              f"{esc(info.kind)} · {esc(info.goal)}</p>")
    inbox = ""
    if pending:
        inbox = ('<section id="waiting"><h2>Waiting for a person</h2>'
                 + "".join(item_card(item, csrf, root, back="run") for item in pending) + "</section>")
    if info.kind == "search":
        try:
            run = load_run(folder)
            timeline = run.timeline()
            body = search_header(run, timeline) + plan_section(timeline, run) + convergence_section(run, {})
        except EvolveError as exc:
            body = f'<p class="no">{esc(exc)}</p>'
        return status + body + timeline_section(0, info.name)
    try:
        execution = load_execution(folder)
    except EvolveError as exc:
        return status + inbox + f'<p class="no">{esc(exc)}</p>' + timeline_section(0, info.name)
    return (
        status + header(execution) + inbox + plan_graph(folder, execution.outcome) + gantt_section(execution)
        + revisions_section(execution) + people_section(execution.outcome) + calls_section(folder)
        + models_section(execution.outcome) + tasks_section(execution) + timeline_section(0, info.name)
    )
