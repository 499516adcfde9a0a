"""``fitness.testing``: the conformance check for plugins (see :mod:`evolve.fitness.testing`)."""

from evolve.fitness.testing import *  # noqa: F403
from evolve.fitness.testing import __all__ as __all__
