"""The tool-call log of one session, read from either of the two shapes agents write it in.

- JSON lines: one ``{"tool": ..., "args": {...}, "result": ...}`` a line;
- an OpenAI-style messages file (a JSON list of messages, or ``{"messages": [...]}``): the
  assistant's ``tool_calls`` (``function.name``, ``function.arguments`` as JSON text), each
  answered by a ``tool`` message with its ``tool_call_id`` (the content is the result: JSON when
  it parses, else the text).

Every error names the file and where (line, or message and field), in one line.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evolve.model.documents import read_text_file
from evolve.model.errors import InputError

CALL_KEYS = ("tool", "args", "result")


@dataclass(frozen=True)
class TraceCall:
    """One tool call of the session and what it returned."""

    tool: str
    args: Mapping[str, Any] = field(default_factory=dict)
    result: Any = None


def read_trace(path: str | Path) -> list[TraceCall]:
    source = str(path)
    text = read_text_file(path)
    try:
        whole = json.loads(text)
    except json.JSONDecodeError:
        whole = None
    if isinstance(whole, list) or (isinstance(whole, dict) and "messages" in whole):
        calls = from_messages(source, whole["messages"] if isinstance(whole, dict) else whole)
    else:
        calls = from_lines(source, text)
    if not calls:
        raise InputError(source, "", "no tool calls in the trace")
    return calls


def from_lines(source: str, text: str) -> list[TraceCall]:
    calls = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"line {number}"
        try:
            doc = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(source, where, f"not JSON ({exc.msg}); expected "
                                            '{"tool": ..., "args": {...}, "result": ...}') from None
        if not isinstance(doc, dict):
            raise InputError(source, where, "expected a JSON object {\"tool\", \"args\", \"result\"}")
        unknown = sorted(set(doc) - set(CALL_KEYS))
        if unknown:
            raise InputError(source, f"{where}.{unknown[0]}",
                             f"unknown key (allowed: {', '.join(CALL_KEYS)})")
        calls.append(call(source, where, doc.get("tool"), doc.get("args", {}), doc.get("result")))
    return calls


def call(source: str, where: str, tool: object, args: object, result: object) -> TraceCall:
    if not isinstance(tool, str) or not tool:
        raise InputError(source, f"{where}.tool", f"expected a tool name, got {json.dumps(tool)}")
    if not isinstance(args, dict):
        raise InputError(source, f"{where}.args", f"expected an object of arguments, got {json.dumps(args)}")
    return TraceCall(tool, args, result)


def from_messages(source: str, messages: object) -> list[TraceCall]:
    if not isinstance(messages, list):
        raise InputError(source, "messages", "expected a list of chat messages")
    pending: dict[str, tuple[str, dict[str, Any]]] = {}
    order: list[str] = []
    results: dict[str, Any] = {}
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(message, dict):
            raise InputError(source, where, "expected a chat message (an object with a role)")
        for j, tool_call in enumerate(message.get("tool_calls") or []):
            here = f"{where}.tool_calls[{j}]"
            function = tool_call.get("function") if isinstance(tool_call, dict) else None
            if not isinstance(function, dict):
                raise InputError(source, here, "expected {\"id\", \"function\": {\"name\", \"arguments\"}}")
            raw = function.get("arguments", "{}")
            try:
                args = json.loads(raw) if isinstance(raw, str) else raw
            except json.JSONDecodeError:
                raise InputError(source, f"{here}.function.arguments", "not JSON text") from None
            made = call(source, f"{here}.function", function.get("name"), args, None)
            key = str(tool_call.get("id") or f"#{len(order)}")
            pending[key] = (made.tool, dict(made.args))
            order.append(key)
        if message.get("role") == "tool":
            content = message.get("content")
            try:
                results[str(message.get("tool_call_id"))] = json.loads(content) if isinstance(content, str) \
                    else content
            except json.JSONDecodeError:
                results[str(message.get("tool_call_id"))] = content
    return [TraceCall(pending[k][0], pending[k][1], results.get(k)) for k in order]
