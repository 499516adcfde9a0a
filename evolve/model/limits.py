"""What the loader accepts: bounds on files, nesting, numbers and names.

A problem or plan file is untrusted input. These bounds keep a hostile one
(a YAML "billion laughs", a 10,000-deep list, a 400-digit duration, a name
with a right-to-left override) from hanging, exhausting memory or spoofing a
table, and the README lists each of them. Real problems sit far inside them.
"""

from __future__ import annotations

import re
from typing import Any

MAX_FILE_BYTES = 64 << 20
"""Largest problem or plan file read (64 MiB; a 1,000-tool catalog is about 300 KiB)."""

MAX_NODES = 2_000_000
"""Most values a document may hold once YAML aliases are expanded (each use of an alias counts)."""

MAX_DEPTH = 64
"""Deepest nesting of lists and mappings in a document."""
DEPTH_PROBLEM = f"nested deeper than {MAX_DEPTH} levels"
"""evolve's one wording for a document too deep, whichever parser or library limit noticed it."""

MAX_NUMBER = 1e15
"""Largest duration, cost, capacity or amount: sums over any plan stay finite and exact enough."""

MAX_INTEGER = 1 << 53
"""Largest integer option in a file (``max_tasks``, ...): exact as a float, fits every array."""

MAX_NAME = 1000
"""Longest name (fact, tool, task, resource, scope), in characters: room for what HDDL grounding
names a ground action (its name and every argument; the competition's Entertainment domain makes
names of 237 characters at its second problem, which a limit of 200 refused in the run's own
``problem.json`` and ``best.json``)."""

MAX_TEXT = 100_000
"""Longest free text (an objective, a description), in characters."""

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*")
"""A fact, output or task id: what a ``$name`` / ``$task.name`` reference can spell."""

TOOL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-:/]*(\([A-Za-z0-9_.\-:/,]*\))?(~[A-Za-z0-9_]+)?")
"""A tool, scope or resource name: dotted and namespaced names allowed, and a ground action's
argument list (``drive(truck1,city2)``, what HDDL grounding names its tools, optionally with its
``~variant``), never spaces or control characters."""

NAME_RULE = "letters, digits, '_' and '-', starting with a letter or '_'"
TOOL_NAME_RULE = ("letters, digits and '_', '-', '.', ':', '/', starting with a letter or '_', "
                  "then optionally '(arguments,...)' and '~variant'")


def name_problem(name: str, pattern: re.Pattern[str] = NAME) -> str | None:
    """Why ``name`` is not a valid name (to follow the quoted name), or ``None`` when it is."""
    if len(name) > MAX_NAME:
        return f"is longer than {MAX_NAME} characters"
    if pattern.fullmatch(name) is None:
        rule = NAME_RULE if pattern is NAME else TOOL_NAME_RULE
        return f"is not a valid name (allowed: {rule})"
    return None


def tree_problem(doc: Any) -> str | None:
    """Why a parsed document is too big or too deep, or ``None``.

    Walks the document as a tree, so a value reached through several aliases
    is counted each time, and stops as soon as a bound is passed: the walk
    costs at most :data:`MAX_NODES` steps however large the expansion would be.
    """
    stack: list[tuple[Any, int]] = [(doc, 0)]
    nodes = 0
    while stack:
        value, depth = stack.pop()
        nodes += 1
        if nodes > MAX_NODES:
            return (f"more than {MAX_NODES:,} values once YAML aliases are expanded "
                    "(an alias bomb?)")
        if isinstance(value, dict):
            if depth >= MAX_DEPTH:
                return DEPTH_PROBLEM
            for key, item in value.items():
                stack.append((key, depth + 1))
                stack.append((item, depth + 1))
        elif isinstance(value, (list, tuple)):
            if depth >= MAX_DEPTH:
                return DEPTH_PROBLEM
            stack.extend((item, depth + 1) for item in value)
    return None


def flow_depth(text: str) -> int:
    """The deepest nesting of ``[`` and ``{`` in ``text``, outside quoted strings and comments.

    A YAML or JSON parser may refuse a deep document with a message of its own (libyaml's
    "exceeded maximum nesting depth", a ``RecursionError``, ...) that changes between versions;
    when a parse fails, this scan tells whether depth was the reason, so the error is evolve's.
    Only flow collections can nest deeply in a small file (block nesting needs a line each).
    """
    depth = deepest = 0
    quote = ""
    previous = "\n"
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\" and quote == '"':
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch == "#" and previous in " \t\n":
            newline = text.find("\n", i)
            i = len(text) if newline < 0 else newline
            previous = "\n"
            continue
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth = max(0, depth - 1)
        previous = ch
        i += 1
    return deepest
