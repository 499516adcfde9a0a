"""Finding fitness functions: built-ins, installed plugins, and ``module:function`` specs.

Every path ends in the same place, a :class:`Fitness` holding the resolved
callable, which is what workers receive; they never look a name up themselves.
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points

from fitness.base import Fitness, FitnessError, as_fitness
from fitness.builtin import BUILTINS

ENTRY_POINT_GROUP = "evolve.fitness"


def available() -> dict[str, Fitness]:
    """Built-ins first, then plugins registered under the ``evolve.fitness`` entry-point group."""
    found = {fn.__name__: as_fitness(fn) for fn in BUILTINS}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            loaded = as_fitness(ep.load(), source=f"entry point {ep.value} ({ep.dist.name if ep.dist else '?'})")
        except Exception as exc:
            raise FitnessError(f"fitness plugin {ep.name!r} ({ep.value}) failed to load: {exc}") from None
        found[loaded.name] = loaded
    return found


def resolve(spec: str) -> Fitness:
    """A fitness by name (built-in or entry point) or by ``package.module:function``."""
    if ":" in spec:
        module_name, _, attr = spec.partition(":")
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:
            raise FitnessError(f"fitness plugin {spec!r}: cannot import {module_name!r}: {exc}") from None
        fn = getattr(module, attr, None)
        if fn is None or not callable(fn):
            raise FitnessError(f"fitness plugin {spec!r}: {module_name} has no function {attr!r}")
        try:
            return as_fitness(fn, source=spec)
        except FitnessError as exc:
            raise FitnessError(f"fitness plugin {spec!r}: {exc}") from None
    known = available()
    if spec not in known:
        raise FitnessError(f"unknown fitness {spec!r} (available: {', '.join(known)})")
    return known[spec]


def resolve_all(specs: list[str] | tuple[str, ...]) -> list[Fitness]:
    """Resolve several specs; a name given twice is an error rather than a double weight."""
    resolved = [resolve(s) for s in specs]
    names = [f.name for f in resolved]
    for name in names:
        if names.count(name) > 1:
            raise FitnessError(f"fitness {name!r} is selected more than once")
    return resolved
