"""A first plan from a goal: the model writes a whole plan in the typed schema.

The schema is the contract: tool names are an ``enum`` of the catalog, the task list is capped
at the problem's ``max_tasks`` (else :data:`~evolve.defaults.LLM_DRAFT_MAX_TASKS`), and inputs
are ``$fact`` or ``$task.fact`` references. The reply is still untrusted: :class:`LLMPlanner`
is a planner in the agent's sense (``planner(goal, history, last_error)``), so whoever calls it
validates its plan and feeds the errors back (``evolve plan``, the plan-execute agent).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from evolve import defaults
from evolve.llm.client import CallError, Completion
from evolve.llm.operator import Sampling
from evolve.llm.prompt import describe_problem, describe_replan, describe_tools, quoted
from evolve.llm.reply import task_schema
from evolve.model.errors import EvolveError, InputError
from evolve.model.problem import Problem

SYSTEM = """You write plans for a task runtime. A plan is JSON: {"tasks": [task, ...]}.
Each task has an "id" (letters, digits, '_' or '-', starting with a letter), a "tool" from the
catalog, "deps" (ids of the tasks it waits for) and "inputs": every input fact of its tool, bound
to "$fact" for an initial fact or to "$task.fact" for a fact an earlier task makes (that task
must be in "deps"). A write tool's task needs an "idempotency_key". Together the tasks must make
every success criterion. Use as few tasks as do the job, independent ones in parallel.
Reply with the JSON only."""


class Completes(Protocol):
    url: str

    def complete(self, messages: Sequence[Mapping[str, str]], settings: Mapping[str, Any]) -> Completion: ...


def plan_schema(problem: Problem) -> dict[str, Any]:
    """The JSON schema of a whole plan for ``problem``."""
    cap = problem.limits.max_tasks or defaults.LLM_DRAFT_MAX_TASKS
    return {
        "type": "object",
        "properties": {"tasks": {"type": "array", "minItems": 1, "maxItems": cap, "items": {
            "type": "object", "properties": task_schema(problem), "required": ["id", "tool", "inputs"],
            "additionalProperties": False}}},
        "required": ["tasks"],
        "additionalProperties": False,
    }


def draft_messages(problem: Problem, goal: str, history: Sequence[Mapping[str, Any]],
                   last_error: Mapping[str, Any] | None) -> list[dict[str, str]]:
    """The chat asking for a whole plan; the goal, what is done and what went wrong are quoted
    and bounded like every untrusted field."""
    parts = [f"# Problem\n{describe_problem(problem)}", f"# Tool catalog\n{describe_tools(problem)}",
             f"# Goal\n{quoted(goal)}"]
    if history:
        parts.append(f"# Done already (do not plan these again)\n{quoted(list(history))}")
    if last_error and last_error.get("validation_errors"):
        parts.append("# Your last plan was rejected by the validator\n"
                     + "\n".join(f"- {quoted(e)}" for e in last_error["validation_errors"]))
    text = "\n\n".join(parts) + describe_replan(last_error if last_error and last_error.get("failed_step")
                                                else None)
    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": text + "\n\nReply with the JSON plan."}]


class LLMPlanner:
    """A model as a planner: each call asks for a whole plan and returns the reply's JSON as it
    is (the caller validates it). A reply that is not a JSON object is an :class:`InputError`
    (fed back like a validator error); an endpoint that fails is an :class:`EvolveError`."""

    name = "llm"

    def __init__(self, client: Completes, problem: Problem, *, sampling: Sampling | None = None,
                 seed: int = defaults.SEED) -> None:
        self.client = client
        self.problem = problem
        self.sampling = sampling or Sampling()
        self.seed = seed
        self.calls = 0

    def __call__(self, goal: str, history: Sequence[Mapping[str, Any]],
                 last_error: Mapping[str, Any] | None) -> Any:
        messages = draft_messages(self.problem, goal, history, last_error)
        settings = self.sampling.request(self.seed + self.calls, "plan", plan_schema(self.problem))
        self.calls += 1
        try:
            reply = self.client.complete(messages, settings)
        except CallError as exc:
            raise EvolveError(f"the model at {self.client.url}: {exc}") from None
        try:
            data = json.loads(reply.text)
        except json.JSONDecodeError as exc:
            raise InputError("the model's reply", "", f"not JSON ({exc.msg} at {exc.pos})") from None
        if not isinstance(data, dict):
            raise InputError("the model's reply", "", f"expected a JSON object, got {type(data).__name__}")
        return data
