"""Packages that re-export an API without importing it: PEP 562 lazy loading.

A package ``__init__`` lists what it re-exports as imports in an ``if TYPE_CHECKING:`` block
(type checkers read them) and sets ``__getattr__, __dir__ = exports(__name__, __file__,
__all__)``: a name is imported from its module on first use, found by reading that block, so
the block is the one list of what comes from where. ``import evolve`` then costs milliseconds,
and a command that needs neither numba nor the HTTP client does not wait for them.
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Callable, Sequence
from pathlib import Path


def origins(file: str) -> dict[str, tuple[str, str]]:
    """Each name the ``if TYPE_CHECKING:`` block of ``file`` imports: its module and its name there."""
    tree = ast.parse(Path(file).read_text(encoding="utf-8"))
    block = next(node for node in tree.body if isinstance(node, ast.If)
                 and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
    return {alias.asname or alias.name: (str(node.module), alias.name) for node in block.body
            if isinstance(node, ast.ImportFrom) for alias in node.names}


def exports(name: str, file: str, public: Sequence[str]) -> tuple[Callable[[str], object],
                                                                    Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of the package ``name`` (its ``__init__`` is
    ``file``) whose ``public`` names are loaded on first use, then kept as its globals."""
    listed = frozenset(public)
    found: dict[str, tuple[str, str]] = {}

    def attribute(wanted: str) -> object:
        if wanted not in listed:
            raise AttributeError(f"module {name!r} has no attribute {wanted!r}")
        if not found:
            found.update(origins(file))
        module, original = found[wanted]
        value = getattr(importlib.import_module(module), original)
        setattr(sys.modules[name], wanted, value)
        return value

    def names() -> list[str]:
        return sorted({*vars(sys.modules[name]), *listed})

    return attribute, names
