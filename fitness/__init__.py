"""Fitness functions: the contract, the built-ins and the plugin registry."""

from fitness.base import Context, Direction, Fitness, FitnessError, FitnessSpec, as_fitness, fitness
from fitness.builtin import BUILTINS, DEFAULT_OBJECTIVES, completeness, makespan, minimality, validity
from fitness.registry import ENTRY_POINT_GROUP, available, resolve, resolve_all

__all__ = [
    "BUILTINS",
    "DEFAULT_OBJECTIVES",
    "ENTRY_POINT_GROUP",
    "Context",
    "Direction",
    "Fitness",
    "FitnessError",
    "FitnessSpec",
    "as_fitness",
    "available",
    "completeness",
    "fitness",
    "makespan",
    "minimality",
    "resolve",
    "resolve_all",
    "validity",
]
