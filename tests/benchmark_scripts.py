"""The scripts of benchmarks/ as modules, for the tests that check what they compute."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from evolve.execute.tools import import_file

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def load_benchmark(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` loaded from its path (benchmarks/ is not a package), as evolve
    loads a tools file: registered under its stem, since dataclasses look their module up while
    it executes. Each call runs the script's top level again."""
    module = import_file(BENCHMARKS / f"{name}.py")
    assert isinstance(module, ModuleType)
    return module
