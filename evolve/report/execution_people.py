"""The execution report's section on people in the loop: what the run waits for, who decided
what (approved, rejected, answered) on which exact action, how long the run waited for them,
and the actions rejected (final for the run). Read from ``outcome.json`` only."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from evolve.report.svg import esc, num


def writes_text(writes: object) -> str:
    """The writes an action approves, one line each: tool and bound inputs."""
    if not isinstance(writes, Sequence) or isinstance(writes, str):
        return "–"
    lines = []
    for write in writes:
        if isinstance(write, Mapping):
            inputs = json.dumps(write.get("inputs"), sort_keys=True, default=str)
            lines.append(f'{esc(write.get("tool", "?"))} <span class="meta">{esc(inputs)}</span>')
    return "<br>".join(lines) or "no write"


def rows_of(items: object) -> list[Mapping[str, Any]]:
    if not isinstance(items, Sequence) or isinstance(items, str):
        return []
    return [item for item in items if isinstance(item, Mapping)]


def people_section(outcome: Mapping[str, Any]) -> str:
    """The section, or nothing for a run no person took part in."""
    pending = rows_of(outcome.get("pending"))
    decided = rows_of(outcome.get("decisions"))
    if not pending and not decided:
        return ""
    waited = outcome.get("waiting_s")
    lead = (f"The run waited {num(round(float(waited), 3))} s for people in all."
            if isinstance(waited, (int, float)) else "")
    rows = []
    for item in decided:
        spent = item.get("waited_s")
        waited_cell = num(float(spent)) if isinstance(spent, (int, float)) else "–"
        note = f'<div class="meta">{esc(item.get("note"))}</div>' if item.get("note") else ""
        rows.append(
            f'<tr><td class="ids">{esc(item.get("task"))}</td><td>{esc(item.get("tool"))}</td>'
            f'<td><span class="reason">{esc(item.get("verdict"))}</span>{note}</td>'
            f'<td>{esc(item.get("by"))}</td><td>{esc(item.get("at"))}</td>'
            f'<td class="num">{waited_cell}</td>'
            f'<td class="ids">{esc(str(item.get("action_hash") or "")[:12])}</td>'
            f'<td>{writes_text(item.get("writes"))}</td></tr>')
    for item in pending:
        action = item.get("action") if isinstance(item.get("action"), Mapping) else {}
        assert isinstance(action, Mapping)
        rows.append(
            f'<tr><td class="ids">{esc(item.get("task"))}</td><td>{esc(item.get("tool"))}</td>'
            f'<td><span class="reason">waiting ({esc(item.get("kind"))})</span></td><td>–</td>'
            f'<td>since {esc(item.get("since"))}</td><td class="num">–</td>'
            f'<td class="ids">{esc(str(item.get("action_hash") or "")[:12])}</td>'
            f'<td>{writes_text(action.get("writes"))}</td></tr>')
    rejected = rows_of(outcome.get("rejected_actions"))
    note = ""
    if rejected:
        note = ('<p class="no">rejected actions (final: no later approval lets them run): '
                + "; ".join(f'{esc(r.get("task"))} by {esc(r.get("by"))}: {writes_text(r.get("writes"))}'
                            for r in rejected) + "</p>")
    return ('<section id="people"><h2>People in the loop</h2>'
            f'<p class="lead">Who approved, rejected or answered what, on which exact action. {lead}</p>'
            f'{note}<div class="scroll"><table><thead><tr><th>task</th><th>tool</th><th>decision</th>'
            '<th>by</th><th>when</th><th class="num">waited (s)</th><th>action</th><th>writes</th>'
            f'</tr></thead><tbody>{"".join(rows)}</tbody></table></div></section>')
