"""Checks the hostile-input tests share on what a command printed."""

from __future__ import annotations

from click.testing import Result


def one_clear_line(result: Result, *words: str) -> str:
    """The error: exactly one line, no traceback, naming each of ``words``."""
    assert "Traceback" not in result.output, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]
