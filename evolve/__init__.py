"""evolve: evolutionary search for the best plan (a task graph) for a planning problem.

The public API is re-exported here and loaded lazily (PEP 562): ``import evolve`` costs a few
milliseconds, and ``evolve.Search`` (or ``from evolve import Search``) imports the module that
defines it on first use, so a command line that needs none of numpy, numba, scipy or the LLM
client does not wait for them. The ``TYPE_CHECKING`` imports below are the one list of what is
exported and from where: type checkers read them, and :mod:`evolve.model.lazy` reads them from
this file's source the first time a name is asked for.
"""

# First, before any module defines a kernel: numba's cache folder, keyed by the kernel sources.
import evolve.model.kernel_cache  # noqa: F401
from evolve.model.lazy import exports

TYPE_CHECKING = False
"""True for type checkers only (``typing.TYPE_CHECKING`` without importing :mod:`typing`)."""

if TYPE_CHECKING:
    from evolve.agent import AgentResult, PlanExecuteAgent, make_deterministic_planner
    from evolve.execute.tools import ToolFailure
    from evolve.fitness.evaluation import Evaluation, evaluate_plan
    from evolve.model.collector import settle_for_one_search
    from evolve.model.errors import EvolveError, InputError
    from evolve.model.expression import ExpressionError, parse_expression
    from evolve.model.patch import apply_patch, diff_plans
    from evolve.model.plan import Plan, Ref, Task, parse_ref, plan_hash
    from evolve.model.plan_file import load_plan, plan_from_dict
    from evolve.model.problem import Limits, Policy, Problem, Tool
    from evolve.model.problem_file import problem_from_dict
    from evolve.model.validate import PlanError, plan_status, validate
    from evolve.problems import load_problem
    from evolve.problems.htn.planner import Planner as HTNPlanner
    from evolve.run.evaluator import Evaluator
    from evolve.run.folder import RunOutcome, run_search
    from evolve.scheduling import Schedule
    from evolve.scheduling.schedule import schedule
    from evolve.search.algorithm import Candidate, SearchResult
    from evolve.search.chaining import Builder, construct
    from evolve.search.loop import Search
    from evolve.search.operators import STRUCTURAL, OperatorSet
    from evolve.search.options import DEFAULTS, SearchOptions
    from evolve.search.ranking import Ranking

__all__ = [
    "DEFAULTS",
    "STRUCTURAL",
    "AgentResult",
    "Builder",
    "Candidate",
    "Evaluation",
    "Evaluator",
    "EvolveError",
    "ExpressionError",
    "HTNPlanner",
    "InputError",
    "Limits",
    "OperatorSet",
    "Plan",
    "PlanError",
    "PlanExecuteAgent",
    "Policy",
    "Problem",
    "Ranking",
    "Ref",
    "RunOutcome",
    "Schedule",
    "Search",
    "SearchOptions",
    "SearchResult",
    "Task",
    "Tool",
    "ToolFailure",
    "apply_patch",
    "construct",
    "diff_plans",
    "evaluate_plan",
    "load_plan",
    "load_problem",
    "make_deterministic_planner",
    "parse_expression",
    "parse_ref",
    "plan_from_dict",
    "plan_hash",
    "plan_status",
    "problem_from_dict",
    "run_search",
    "schedule",
    "settle_for_one_search",
    "validate",
]


__getattr__, __dir__ = exports(__name__, __file__, __all__)
