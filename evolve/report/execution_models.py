"""The execution report's section on the small-model calls of an HTN run: the hoisted decisions
(key, value, whether the model, its default or the plan input gave it) and the in-loop argument
fills (task, arguments, accepted or refused, and why), with the endpoint requests by purpose.
Read from ``outcome.json`` only."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from evolve.report.execution_people import rows_of
from evolve.report.svg import esc


def calls_line(outcome: Mapping[str, Any]) -> str:
    calls = outcome.get("model_calls")
    if not isinstance(calls, Mapping):
        return ""
    counts = ", ".join(f"{esc(k)} {esc(v)}" for k, v in calls.items())
    return f"Endpoint requests by purpose (cached replies not counted): {counts}."


def models_section(outcome: Mapping[str, Any]) -> str:
    """The section, or nothing for a run that asked no small model."""
    decided = rows_of(outcome.get("hoisted_decisions"))
    fills = rows_of(outcome.get("arg_fills"))
    if not decided and not fills:
        return ""
    rows = []
    for item in decided:
        why = f' <span class="meta">({esc(item.get("refused"))})</span>' if item.get("refused") else ""
        cached = " (cached)" if item.get("cached") else ""
        rows.append(f'<tr><td>decision</td><td class="ids">{esc(item.get("key"))}</td>'
                    f'<td>{esc(json.dumps(item.get("value"), default=str))}</td>'
                    f'<td>{esc(item.get("source"))}{cached}{why}</td></tr>')
    for item in fills:
        if item.get("accepted"):
            verdict = "accepted"
        else:
            detail = f'<span class="meta">{esc(item.get("detail"))}</span>'
            verdict = f'refused ({esc(item.get("refused"))}) {detail}'
        rows.append(f'<tr><td>arguments</td><td class="ids">{esc(item.get("task"))} '
                    f'(attempt {esc(item.get("attempt"))})</td>'
                    f'<td>{esc(json.dumps(item.get("args"), sort_keys=True, default=str))}</td>'
                    f'<td>{esc(item.get("source"))}: {verdict}</td></tr>')
    return ('<section id="models"><h2>Small-model calls</h2>'
            f'<p class="lead">The decisions asked before planning and the arguments filled at run time. '
            f'{calls_line(outcome)}</p>'
            '<div class="scroll"><table><thead><tr><th>kind</th><th>key / task</th><th>value</th>'
            f'<th>source</th></tr></thead><tbody>{"".join(rows)}</tbody></table></div></section>')
