"""HTN domains: hierarchical plans by symbolic decomposition, searched by evolve.

Read a domain (:func:`load_htn_problem`, or :func:`evolve.load_problem` on any
file with an ``htn`` section), decompose it (:class:`Planner`), turn a
decomposition into the usual task graph (:func:`to_plan`), search the
decompositions for the best plan (:func:`htn_search`, what ``evolve run``
uses), check a domain over synthetic states (:func:`validate_domain`). A
fallback for tasks no method covers plugs in through :class:`DecompositionFallback`.

The names are loaded on first use (PEP 562, see :mod:`evolve.model.lazy`), so the HDDL
reader and the lifted planner import without the grounded planner's compiled kernels.
"""

from evolve.model.lazy import exports

TYPE_CHECKING = False
"""True for type checkers only (``typing.TYPE_CHECKING`` without importing :mod:`typing`)."""

if TYPE_CHECKING:
    from evolve.problems.htn.algorithm import OPERATOR, HtnChoices, NoPlanError, htn_search
    from evolve.problems.htn.decomposition import Choice, Decomposition, NoPlan, replay
    from evolve.problems.htn.domain import Domain, Method, Operator
    from evolve.problems.htn.fallback import DecompositionFallback, FallbackReply
    from evolve.problems.htn.planner import Learned, Planner
    from evolve.problems.htn.problem import HtnProblem, htn_problem_from_dict, load_htn_problem, to_plan
    from evolve.problems.htn.reader import domain_from_dict, is_htn_document, read_domain
    from evolve.problems.htn.validate import DomainReport, validate_domain

__all__ = [
    "OPERATOR",
    "Choice",
    "Decomposition",
    "DecompositionFallback",
    "Domain",
    "DomainReport",
    "FallbackReply",
    "HtnChoices",
    "HtnProblem",
    "Learned",
    "Method",
    "NoPlan",
    "NoPlanError",
    "Operator",
    "Planner",
    "domain_from_dict",
    "htn_problem_from_dict",
    "htn_search",
    "is_htn_document",
    "load_htn_problem",
    "read_domain",
    "replay",
    "to_plan",
    "validate_domain",
]

__getattr__, __dir__ = exports(__name__, __file__, __all__)
