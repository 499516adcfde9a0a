"""Running a plan: the durable executor, its journal, failure policies and replanning by the search.

``evolve execute`` is the command line of this package; :func:`start_run` and :func:`resume_run`
are its programmatic twins.
"""

from evolve.execute.dispatch import DaskDispatcher, LocalDispatcher, SimulatedDispatcher
from evolve.execute.executor import ExecuteOptions, Executor
from evolve.execute.journal import Journal
from evolve.execute.outcome import REASONS, PlanDiff
from evolve.execute.readiness import RULES, TABLE, decide
from evolve.execute.replan import ProposerReplanner, Replanner, SearchReplanner
from evolve.execute.session import resume_run, start_run
from evolve.execute.tools import Call, ToolFailure, load_tools

__all__ = [
    "REASONS",
    "RULES",
    "TABLE",
    "Call",
    "DaskDispatcher",
    "ExecuteOptions",
    "Executor",
    "Journal",
    "LocalDispatcher",
    "PlanDiff",
    "ProposerReplanner",
    "Replanner",
    "SearchReplanner",
    "SimulatedDispatcher",
    "ToolFailure",
    "decide",
    "load_tools",
    "resume_run",
    "start_run",
]
