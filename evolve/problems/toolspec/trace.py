"""A recorded session: which call's result fed which later call's argument.

A spec says what each tool takes and returns, never which tool's output another tool's input
is. A recorded session shows it: when an argument of a call equals (same JSON type, same value)
a field of an earlier call's result, the value flowed from there. That is a dataflow edge, and
the catalog names the input after that output (:mod:`evolve.problems.toolspec.catalog`).

A trace is a list of calls, or ``{"calls": [...]}``; a call is ``{name, arguments, result}``
(``tool`` for ``name``; ``arguments`` a mapping or the JSON text of one, as OpenAI's
``tool_calls`` give it; ``result`` any JSON value, the JSON text of one, or an MCP
``tools/call`` result whose ``structuredContent`` is then used).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evolve.model.documents import Reader, describe, join

CALL_KEYS = ("name", "tool", "arguments", "result", "id", "label", "error")
MAX_FIELD_DEPTH = 3
"""How deep into a result a field is looked for (``a.b.c``): deeper paths are not facts anyone
names, and the walk stays small whatever a result holds."""


@dataclass(frozen=True)
class Call:
    """One recorded call."""

    tool: str
    arguments: Mapping[str, Any]
    result: Any
    where: str


@dataclass(frozen=True)
class Edge:
    """Argument ``argument`` of call ``call`` is the value at ``path`` of call ``source``'s result
    (``path`` empty: the whole result)."""

    call: int
    argument: str
    source: int
    path: tuple[str, ...]
    others: tuple[str, ...] = field(default=())
    """Other places the same value was seen (``call 2 result.id``): the edge is then a guess."""


def read_trace(doc: object, source: str) -> tuple[Call, ...]:
    """The calls of a parsed trace document."""
    r = Reader(source)
    path = ""
    if isinstance(doc, Mapping):
        r.mapping(doc, "", ("calls",))
        if "calls" not in doc:
            raise r.fail("calls", "missing: a trace lists its calls under 'calls' (or is a list)")
        doc, path = doc["calls"], "calls"
    if not isinstance(doc, list):
        raise r.fail(path, f"expected a list of calls, got {describe(doc)}")
    if not doc:
        raise r.fail(path, "no calls: the trace is empty")
    return tuple(read_call(r, item, f"{path}[{i}]") for i, item in enumerate(doc))


def read_call(r: Reader, item: object, path: str) -> Call:
    doc = r.mapping(item, path, CALL_KEYS)
    key = "name" if "name" in doc else "tool"
    if key not in doc:
        raise r.fail(join(path, "name"), "missing: every call names its tool")
    tool = r.string(doc[key], join(path, key))
    arguments = doc.get("arguments", {})
    if isinstance(arguments, str):
        arguments = parse_json(r, arguments, join(path, "arguments"))
    arguments = r.mapping(arguments if arguments is not None else {}, join(path, "arguments"), None)
    result = doc.get("result")
    if isinstance(result, str):
        with contextlib.suppress(ValueError):  # a plain text result is a value like any other
            result = json.loads(result)
    if isinstance(result, Mapping) and "structuredContent" in result:
        result = result["structuredContent"]
    return Call(tool=tool, arguments=arguments, result=result, where=path)


def parse_json(r: Reader, text: str, path: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise r.fail(path, f"not valid JSON text ({exc})") from None


def trivial(value: object) -> bool:
    """Values too common to show a flow (``true``, ``null``, ``""``, ``[]``): equal by chance."""
    return value is None or isinstance(value, bool) or value in ("", [], {})


def fields(result: object, depth: int = MAX_FIELD_DEPTH) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every ``(path, value)`` of a result: the whole result first, then its mapping fields,
    depth-first, at most :data:`MAX_FIELD_DEPTH` keys deep (list items are not fields)."""
    stack: list[tuple[tuple[str, ...], Any]] = [((), result)]
    while stack:
        path, value = stack.pop(0)
        yield path, value
        if isinstance(value, Mapping) and len(path) < depth:
            stack[:0] = [((*path, str(k)), v) for k, v in value.items()]


def same(a: object, b: object) -> bool:
    """Equal as JSON values of one type (``1`` is not ``1.0`` nor ``true``)."""
    return type(a) is type(b) and a == b


def dataflow(calls: Sequence[Call]) -> tuple[Edge, ...]:
    """The edges of a trace: each non-trivial argument value found in an earlier result.

    The most recent earlier call holding the value wins (a value is usually passed on from the
    last call that produced it); within that result, the field named like the argument, else the
    shortest path. Every other place the value was seen is kept in :attr:`Edge.others`.
    """
    seen = [list(fields(call.result)) for call in calls]
    edges = []
    for i, call in enumerate(calls):
        for name, value in call.arguments.items():
            if trivial(value):
                continue
            found = [(j, path) for j in range(i - 1, -1, -1) for path, v in seen[j] if same(value, v)]
            if not found:
                continue
            latest = found[0][0]
            mine = [path for j, path in found if j == latest]
            best = next((p for p in mine if p and p[-1] == name), min(mine, key=len))
            others = tuple(f"call {j + 1} result{''.join('.' + k for k in p)}"
                           for j, p in found if (j, p) != (latest, best))
            edges.append(Edge(call=i, argument=name, source=latest, path=best, others=others))
    return tuple(edges)
