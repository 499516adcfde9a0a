"""evolve: evolutionary search for the best plan (a task graph) for a planning problem."""

from evolve.construct import Builder, construct
from evolve.engine import Candidate, Search, SearchResult
from evolve.errors import EvolveError, InputError
from evolve.evaluate import Evaluation, Evaluator, evaluate_plan
from evolve.load import load_plan, load_problem, plan_from_dict, problem_from_dict
from evolve.operators import STRUCTURAL, OperatorSet
from evolve.options import DEFAULTS, SearchOptions
from evolve.patch import apply_patch, diff_plans
from evolve.plan import Plan, Ref, Task, parse_ref, plan_hash
from evolve.problem import Limits, Policy, Problem, Tool
from evolve.rank import Ranking
from evolve.runner import RunOutcome, run_search
from evolve.schedule import Schedule, schedule
from evolve.validate import PlanError, validate

__all__ = [
    "DEFAULTS",
    "STRUCTURAL",
    "Builder",
    "Candidate",
    "Evaluation",
    "Evaluator",
    "EvolveError",
    "InputError",
    "Limits",
    "OperatorSet",
    "Plan",
    "PlanError",
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
    "apply_patch",
    "construct",
    "diff_plans",
    "evaluate_plan",
    "load_plan",
    "load_problem",
    "parse_ref",
    "plan_from_dict",
    "plan_hash",
    "problem_from_dict",
    "run_search",
    "schedule",
    "validate",
]
