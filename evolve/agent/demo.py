"""The sources' replanning demo: "ship the report" in three steps, one of which fails.

The steps are ``step1`` .. ``step3`` (plan ids are names, so not bare numbers).

``fetch`` -> ``transform`` -> ``ship``; each tool also has a ``.fallback`` twin ("computed via
fallback") that makes the same fact another way. The demo tools fail on the ``v1`` endpoint
(``mode: v1``), and :func:`make_deterministic_planner` puts ``mode: v1`` on the step it is told
will fail. Its recovery ``route_around`` revises that step to the fallback tool with ``mode:
v2`` (evolve never calls a tool that failed for good again in the same run, so routing around
goes through another tool); ``give_up`` returns no plan. Everything else is the real agent:
the executor runs the steps, journals them and decides ``goal_met`` by itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evolve.agent.planner import History, Planner
from evolve.execute.tools import Call, ToolFailure, ToolFn
from evolve.model.problem import Problem
from evolve.model.problem_file import problem_from_dict

GOAL = "ship the report"
NAMES = {"fetch": "fetch the data", "transform": "transform the data", "ship": "ship the report"}
STEPS = (
    ("step1", "fetch", "raw", None),
    ("step2", "transform", "table", "raw"),
    ("step3", "ship", "report", "table"),
)
"""``(step id, tool, the fact it makes, the fact it reads)``."""
RECOVERIES = ("route_around", "give_up")


def demo_problem() -> Problem:
    tools: dict[str, Any] = {}
    for _, tool, makes, reads in STEPS:
        inputs = [reads] if reads else []
        tools[tool] = {"duration": 1, "inputs": inputs, "outputs": [makes], "description": f"{tool} (v1)"}
        tools[f"{tool}.fallback"] = {
            "duration": 2,
            "inputs": inputs,
            "outputs": [makes],
            "description": "computed via fallback",
        }
    return problem_from_dict(
        {"name": "ship-the-report", "objective": GOAL, "criteria": ["report"], "tools": tools}, "<demo>"
    )


def demo_tool(tool: str, makes: str, reads: str | None) -> ToolFn:
    def run(inputs: Mapping[str, Any], call: Call) -> dict[str, Any]:
        if inputs.get("mode") == "v1":
            raise ToolFailure(f"{tool}: the v1 endpoint answered 503")
        source = inputs.get(reads) if reads else GOAL
        return {makes: f"{makes} of ({source}) via {tool}"}

    return run


def demo_tools() -> dict[str, ToolFn]:
    table = {}
    for _, tool, makes, reads in STEPS:
        table[tool] = demo_tool(tool, makes, reads)
        table[f"{tool}.fallback"] = demo_tool(f"{tool}.fallback", makes, reads)
    return table


def step_dict(step: str, tool: str, reads: str | None, mode: str | None, name: str) -> dict[str, Any]:
    inputs: dict[str, Any] = {}
    deps: list[str] = []
    if reads is not None:
        before = next(s for s, _, makes, _ in STEPS if makes == reads)
        inputs[reads] = f"${before}.{reads}"
        deps.append(before)
    if mode is not None:
        inputs["mode"] = mode
    return {"id": step, "tool": tool, "deps": deps, "inputs": inputs, "name": name, "on_failure": "replan"}


def make_deterministic_planner(fail_step_id: int | str, recovery: str = "route_around") -> Planner:
    """A planner for :func:`demo_problem` whose step ``fail_step_id`` (``2`` or ``"step2"``)
    fails on the first plan.

    ``route_around``: the replan revises that step to its tool's fallback (``mode: v2``,
    "computed via fallback") and keeps the rest; ``give_up``: the replan is empty (``no_plan``).
    """
    failing = f"step{fail_step_id}" if isinstance(fail_step_id, int) else fail_step_id
    if failing not in {s for s, *_ in STEPS}:
        names = ", ".join(s for s, *_ in STEPS)
        raise ValueError(f"fail_step_id {fail_step_id!r}: the demo has steps {names}")
    if recovery not in RECOVERIES:
        raise ValueError(f"recovery {recovery!r}: expected one of {', '.join(RECOVERIES)}")

    def planner(goal: str, history: History, last_error: dict[str, Any] | None) -> list[dict[str, Any]]:
        if last_error is None:
            return [
                step_dict(s, tool, reads, "v1" if s == failing else None, NAMES[tool])
                for s, tool, _, reads in STEPS
            ]
        if recovery == "give_up":
            return []
        plan = []
        for s, tool, _, reads in STEPS:
            if s == failing:
                plan.append(step_dict(s, f"{tool}.fallback", reads, "v2", "computed via fallback"))
            else:
                plan.append(step_dict(s, tool, reads, None, NAMES[tool]))
        return plan

    return planner
