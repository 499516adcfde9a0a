"""The plan-execute agent as a library: a planner you pass in, the durable executor underneath.

``PlanExecuteAgent(problem, tools, planner=...).run(goal)`` drafts a plan with the planner,
checks it, runs it through :mod:`evolve.execute` (journaled, resumable) and, when a step fails,
asks the planner again with the error; :func:`make_deterministic_planner` is the sources' demo.
"""

from evolve.agent.agent import AgentResult, PlanExecuteAgent
from evolve.agent.demo import demo_problem, demo_tools, make_deterministic_planner
from evolve.agent.planner import History, Planner, PlannerReplanner, SearchPlanner

__all__ = [
    "AgentResult",
    "History",
    "PlanExecuteAgent",
    "Planner",
    "PlannerReplanner",
    "SearchPlanner",
    "demo_problem",
    "demo_tools",
    "make_deterministic_planner",
]
