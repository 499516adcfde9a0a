"""Catalog fields a spec cannot say: how long a tool takes, what it risks, what it costs.

They come from a small side file (``--meta side.yaml``, keyed by tool name) or from the spec's
own ``x-evolve`` entries, and are checked here with the loader's rules, so a bad value is an
error naming the file and the field, never a problem that fails later under another name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evolve.model.documents import Reader, describe, join
from evolve.model.limits import TOOL_NAME
from evolve.model.problem import BY, RISKS

META_KEYS = ("duration", "risk", "cost", "scope", "llm_calls", "by", "writes", "description")
"""The tool fields a side file or ``x-evolve`` may set (the rest come from the spec)."""


def read_meta(r: Reader, value: object, path: str) -> dict[str, Any]:
    """One tool's fields, each checked as the problem loader checks it."""
    doc = r.mapping(value, path, META_KEYS)
    checks: dict[str, Any] = {
        "duration": r.number,
        "risk": lambda v, p: r.choice(v, p, RISKS),
        "cost": r.number,
        "scope": lambda v, p: r.name(v, p, TOOL_NAME),
        "llm_calls": lambda v, p: r.integer(v, p, 0),
        "by": lambda v, p: r.choice(v, p, BY),
        "writes": r.text,
        "description": r.text,
    }
    out: dict[str, Any] = {}
    for key, item in doc.items():
        checked = checks[key](item, join(path, key))
        out[key] = int(checked) if key == "llm_calls" else checked
    return out


def read_side_file(doc: object, source: str, tools: Sequence[str]) -> dict[str, dict[str, Any]]:
    """A side file: ``{tool name: {duration, risk, ...}}``; every name must be a tool of the spec."""
    r = Reader(source)
    if doc is None:
        return {}
    entries = r.mapping(doc, "", None)
    known = set(tools)
    out = {}
    for name, value in entries.items():
        if name not in known:
            raise r.fail(name, f"{describe(name)} is not a tool of the spec (its tools: "
                         f"{', '.join(sorted(known)[:8])}{', ...' if len(known) > 8 else ''})")
        out[name] = read_meta(r, value, name)
    return out


def merged(spec_meta: Mapping[str, Any], side: Mapping[str, Any]) -> dict[str, Any]:
    """The side file over the spec: the person who wrote the side file knows their tools."""
    return {**spec_meta, **side}
