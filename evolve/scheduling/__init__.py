"""Schedules of plans: the kernel-backed :func:`schedule` every part of evolve uses, and
:func:`reference_schedule`, the plain-Python oracle it is tested against (loaded on first use:
see :mod:`evolve.model.lazy`).
"""

from evolve.model.lazy import exports

TYPE_CHECKING = False
"""True for type checkers only (``typing.TYPE_CHECKING`` without importing :mod:`typing`)."""

if TYPE_CHECKING:
    from evolve.scheduling.base import Capacity, Schedule, demand_vector
    from evolve.scheduling.reference import reference_schedule
    from evolve.scheduling.schedule import schedule

__all__ = ["Capacity", "Schedule", "demand_vector", "reference_schedule", "schedule"]

__getattr__, __dir__ = exports(__name__, __file__, __all__)
