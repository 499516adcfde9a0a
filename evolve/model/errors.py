"""Errors that carry enough context to be shown to a user as one clear line."""

from __future__ import annotations


class EvolveError(Exception):
    """Base class: everything the command line turns into a one-line message."""


class InputError(EvolveError):
    """A problem or plan file that cannot be used: names the file, the key path and the fault."""

    def __init__(self, source: str, path: str, message: str) -> None:
        self.source = source
        self.path = path
        self.message = message
        where = f"{printable(source)}: {printable(path)}: " if path else f"{printable(source)}: "
        super().__init__(f"{where}{message}")


def printable(text: str) -> str:
    """``text`` with every character a terminal would not show as itself (control, format,
    line-breaking: a newline, a right-to-left override) written as an escape, so a key or a
    file name from hostile input can neither break the one-line message nor spoof it."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


class UsageError(EvolveError, ValueError):
    """A bad argument or option value: a ``ValueError`` to API callers, and for the command line
    bad input (exit status 2) rather than an internal error."""


class InfeasibleProblem(EvolveError):
    """A problem no plan can solve, found when loading it: names each unreachable criterion
    and why (the command line exits with status 3)."""


class RunFailed(EvolveError):
    """A run that ended without a usable result (every evaluation failed, say): exit status 1."""
