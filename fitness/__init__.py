"""Fitness functions: the contract, the built-ins and the plugin registry."""

# ``evolve``'s package init imports ``fitness.base`` (through the evaluator), and
# ``fitness.base`` imports ``evolve.plan``. Importing ``evolve`` first, in full,
# lets either package be imported first: a plugin module, or a worker unpickling
# a plugin, usually imports ``fitness`` before anything else.
import evolve  # noqa: F401  (import order, see above)
from fitness.base import Context, Direction, Fitness, FitnessError, FitnessSpec, as_fitness, fitness
from fitness.builtin import (
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
from fitness.registry import ENTRY_POINT_GROUP, Survey, available, resolve, resolve_all, survey

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
