"""The README's problem-file tables list every key the loader accepts, and no other: the test
reads the key lists from the loader itself (``evolve.model.problem_file``), so a key added there without
a README row (or a row left behind for a key that went) fails here."""

from __future__ import annotations

import re
from pathlib import Path

from evolve.model import problem_file as files

README = Path(__file__).resolve().parent.parent / "README.md"
ROW = re.compile(r"^\| `([a-z_.]+)` \|")


def table_after(text: str, heading: str) -> set[str]:
    """The keys (first column) of the first table after the line ``heading``."""
    lines = text.splitlines()
    start = lines.index(heading)
    keys: set[str] = set()
    in_table = False
    for line in lines[start + 1:]:
        if line.startswith("|"):
            in_table = True
            found = ROW.match(line)
            if found:
                keys.add(found.group(1))
        elif in_table:
            break
    return keys


def test_the_problem_table_is_the_loaders_key_list() -> None:
    nested = {"limits": files.LIMIT_KEYS, "policy": files.POLICY_KEYS}
    expected = {k for k in files.PROBLEM_KEYS if k not in nested}
    expected |= {f"{section}.{key}" for section, keys in nested.items() for key in keys}
    shown = table_after(README.read_text(encoding="utf-8"), "## The problem file")
    assert shown == expected, (f"missing from the README: {sorted(expected - shown)}; "
                               f"not a loader key: {sorted(shown - expected)}")


def test_the_tool_table_is_the_loaders_key_list() -> None:
    shown = table_after(README.read_text(encoding="utf-8"), "A tool:")
    expected = set(files.TOOL_KEYS)
    assert shown == expected, (f"missing from the README: {sorted(expected - shown)}; "
                               f"not a loader key: {sorted(shown - expected)}")
