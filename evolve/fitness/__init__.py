"""Fitness functions: the contract, the built-ins and the plugin registry.

The names are loaded on first use (see :mod:`evolve.model.lazy`): a module that needs one of
them does not import the compiled kernels the others need.
"""

from evolve.model.lazy import exports

TYPE_CHECKING = False
"""True for type checkers only (``typing.TYPE_CHECKING`` without importing :mod:`typing`)."""

if TYPE_CHECKING:
    from evolve.fitness.base import (
        Context,
        Direction,
        Fitness,
        FitnessError,
        FitnessSpec,
        as_fitness,
        fitness,
    )
    from evolve.fitness.builtin import (
        BUILTINS,
        DEFAULT_OBJECTIVES,
        completeness,
        cost,
        llm_calls,
        makespan,
        minimality,
        redundant_deps,
        risk,
        validity,
    )
    from evolve.fitness.registry import ENTRY_POINT_GROUP, Survey, available, resolve, resolve_all, survey

__all__ = [
    "BUILTINS",
    "DEFAULT_OBJECTIVES",
    "ENTRY_POINT_GROUP",
    "Context",
    "Direction",
    "Fitness",
    "FitnessError",
    "FitnessSpec",
    "Survey",
    "as_fitness",
    "available",
    "completeness",
    "cost",
    "fitness",
    "llm_calls",
    "makespan",
    "minimality",
    "redundant_deps",
    "resolve",
    "resolve_all",
    "risk",
    "survey",
    "validity",
]

__getattr__, __dir__ = exports(__name__, __file__, __all__)
