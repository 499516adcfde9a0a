"""Problem families and the one door for problem files, whatever their format.

Which algorithm searches a problem is asked of :data:`FAMILIES` in turn (:func:`family_of`): an
HTN domain's decompositions, a PSPLIB-like project's activity lists, else plans of the catalog;
a new family joins with :func:`register_family`. :func:`load_problem` reads any problem file.
All of it lives in :mod:`evolve.problems.families` and is loaded on first use (PEP 562, see
:mod:`evolve.model.lazy`): a module of a family (an HDDL reader, say) is imported without
importing every family and the engine they need.
"""

from evolve.model.lazy import exports

TYPE_CHECKING = False
"""True for type checkers only (``typing.TYPE_CHECKING`` without importing :mod:`typing`)."""

if TYPE_CHECKING:
    from evolve.problems.families import (
        FAMILIES,
        PlanFamily,
        default_operators,
        family_of,
        is_fixed_structure,
        load_problem,
        operator_names,
        register_family,
    )

__all__ = ["FAMILIES", "PlanFamily", "default_operators", "family_of", "is_fixed_structure",
           "load_problem", "operator_names", "register_family"]

__getattr__, __dir__ = exports(__name__, __file__, __all__)
