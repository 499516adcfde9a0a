"""The plugin author's import path: ``from fitness import fitness, Context``.

Plugins written against the first version import ``fitness`` and
``fitness.testing``; the code lives in :mod:`evolve.fitness`, and this package
only names it, so that ``evolve`` never imports ``fitness`` (no cycle).
"""

from evolve.fitness import *  # noqa: F403
from evolve.fitness import __all__ as __all__
