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
        where = f"{source}: {path}: " if path else f"{source}: "
        super().__init__(f"{where}{message}")
