"""Schedules of plans: the kernel-backed :func:`schedule` every part of evolve uses, and
:func:`reference_schedule`, the plain-Python oracle it is tested against."""

from evolve.scheduling.base import Capacity, Schedule, demand_vector
from evolve.scheduling.reference import reference_schedule
from evolve.scheduling.schedule import schedule

__all__ = ["Capacity", "Schedule", "demand_vector", "reference_schedule", "schedule"]
