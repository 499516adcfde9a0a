"""Finding fitness functions: built-ins, installed plugins, and ``module:function`` specs.

Every path ends in the same place, a :class:`Fitness` holding the resolved
callable, which is what workers receive; they never look a name up themselves.
Built-ins are found exactly as installed plugins are: each is an entry point of
the ``evolve.fitness`` group, loaded by the same function, so the path a plugin
takes is the path every run already exercises.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points

from evolve.fitness.base import Fitness, FitnessError, as_fitness
from evolve.fitness.builtin import BUILTINS

ENTRY_POINT_GROUP = "evolve.fitness"


@dataclass(frozen=True)
class Survey:
    """Everything discovered: the usable objectives by name, and one line per plugin that is not.

    A broken or clashing plugin is reported here rather than raised, so that
    ``evolve fitness list`` can still show what works next to what does not.
    """

    found: dict[str, Fitness]
    problems: tuple[str, ...] = ()


def builtin_entry_points() -> tuple[EntryPoint, ...]:
    """The built-ins as entry points of the group, as if the ``evolve`` package declared them."""
    return tuple(
        EntryPoint(fn.__name__, f"{fn.__module__}:{fn.__name__}", ENTRY_POINT_GROUP) for fn in BUILTINS
    )


def plugin_entry_points() -> tuple[EntryPoint, ...]:
    """Entry points that installed distributions declare under ``evolve.fitness``."""
    return tuple(entry_points(group=ENTRY_POINT_GROUP))


def load_entry_point(ep: EntryPoint, builtin: bool = False) -> Fitness:
    """Load one entry point into a :class:`Fitness`; any failure names the plugin and its package."""
    dist = ep.dist.name if ep.dist is not None else None
    source = "builtin" if builtin else f"entry point {ep.value}" + (f" ({dist})" if dist else "")
    where = f"fitness plugin {ep.name!r} ({ep.value}" + (f", from {dist})" if dist else ")")
    try:
        loaded = ep.load()
    except Exception as exc:
        raise FitnessError(f"{where} failed to load: {type(exc).__name__}: {exc}") from None
    try:
        return as_fitness(loaded, source=source)
    except FitnessError as exc:
        raise FitnessError(f"{where}: {exc}") from None


def survey() -> Survey:
    """Built-ins first, then every installed plugin; problems are collected, not raised.

    A plugin may not take a built-in's name (the built-in is kept) and two
    plugins may not share one (the first found is kept): silently replacing an
    objective would change what a run optimises without anyone asking for it.
    """
    found = {fn.name: fn for fn in (load_entry_point(ep, builtin=True) for ep in builtin_entry_points())}
    problems: list[str] = []
    for ep in plugin_entry_points():
        try:
            loaded = load_entry_point(ep)
        except FitnessError as exc:
            problems.append(str(exc))
            continue
        if loaded.name in found:
            problems.append(
                f"fitness plugin {ep.name!r} ({ep.value}) is named {loaded.name!r}, which "
                f"{found[loaded.name].source} already uses; it is ignored"
            )
            continue
        found[loaded.name] = loaded
    return Survey(found=found, problems=tuple(problems))


def available() -> dict[str, Fitness]:
    """Built-ins first, then plugins registered under the ``evolve.fitness`` entry-point group.

    Raises :class:`FitnessError` naming the first plugin that cannot be used;
    call :func:`survey` to get what works despite a broken plugin.
    """
    result = survey()
    if result.problems:
        raise FitnessError(result.problems[0])
    return result.found


def resolve(spec: str) -> Fitness:
    """A fitness by name (built-in or entry point) or by ``package.module:function``.

    A name is looked up without loading unrelated plugins, so one broken plugin
    does not stop a run that never asked for it.
    """
    if ":" in spec:
        return resolve_function(spec)
    for ep in builtin_entry_points():
        if ep.name == spec:
            return load_entry_point(ep, builtin=True)
    for ep in plugin_entry_points():
        if ep.name == spec:
            return load_entry_point(ep)
    # The entry point's key and the function's @fitness name may differ.
    result = survey()
    if spec in result.found:
        return result.found[spec]
    message = f"unknown fitness {spec!r} (available: {', '.join(result.found)})"
    if result.problems:
        message += "; plugins that could not be loaded: " + "; ".join(result.problems)
    raise FitnessError(message)


def resolve_function(spec: str) -> Fitness:
    """A marked function named ``package.module:function``, importable from here or the cwd.

    The current directory is searched too, as ``python -m`` would, because the
    ``evolve`` script is not started from it; the path is added to ``sys.path``
    so joblib's workers, which copy it, can unpickle the function by reference.
    """
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise FitnessError(f"fitness plugin {spec!r}: expected package.module:function")
    try:
        module = import_from_here(module_name)
    except Exception as exc:
        raise FitnessError(
            f"fitness plugin {spec!r}: cannot import {module_name!r}: {type(exc).__name__}: {exc}"
        ) from None
    fn = getattr(module, attr, None)
    if fn is None or not callable(fn):
        raise FitnessError(f"fitness plugin {spec!r}: {module_name} has no function {attr!r}")
    try:
        return as_fitness(fn, source=spec)
    except FitnessError as exc:
        raise FitnessError(f"fitness plugin {spec!r}: {exc}") from None


def import_from_here(module_name: str) -> object:
    """Import ``module_name``; if its top package is not found, retry with the cwd on ``sys.path``."""
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        top = module_name.split(".")[0]
        cwd = os.getcwd()
        if exc.name != top or cwd in sys.path or "" in sys.path:
            raise
        sys.path.append(cwd)
        importlib.invalidate_caches()
        return importlib.import_module(module_name)


def resolve_all(specs: Iterable[str]) -> list[Fitness]:
    """Resolve several specs; a name given twice is an error rather than a double weight."""
    resolved = [resolve(s) for s in specs]
    names = [f.name for f in resolved]
    for name in names:
        if names.count(name) > 1:
            raise FitnessError(f"fitness {name!r} is selected more than once")
    return resolved
