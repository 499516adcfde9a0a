"""What the five patterns share: a model to call, and a plan run through the agent.

Each pattern builds a small problem (its tools are closures over the caller's functions) and
a plan, and runs it with :class:`~evolve.agent.PlanExecuteAgent`: so a pattern's run has a
journal, an events log, an outcome and a report like any ``evolve execute`` run, and calling
the pattern again with the same ``out`` continues a run that was interrupted.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from evolve import defaults
from evolve.agent.agent import AgentResult, PlanExecuteAgent
from evolve.agent.planner import Planner
from evolve.execute.tools import ToolFn
from evolve.llm.client import Completion
from evolve.model.problem_file import problem_from_dict

Model = Callable[[str], str]
"""A model as the patterns call it: a prompt in, the reply's text out."""

LABEL = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
"""What a route label or worker name may be: it names a tool and a fact of the pattern's plan."""


class Completes(Protocol):
    """An OpenAI-compatible client (:class:`evolve.llm.client.ChatClient`)."""

    def complete(self, messages: Sequence[Mapping[str, str]], settings: Mapping[str, Any]) -> Completion: ...


def as_model(llm: Model | Completes) -> Model:
    """``llm`` as a prompt -> text callable: a callable as it is, a chat client asked with the
    prompt as the one user message (evolve's default temperature and completion limit)."""
    complete = getattr(llm, "complete", None)
    if callable(complete):
        settings = {"temperature": defaults.LLM_TEMPERATURE, "max_tokens": defaults.LLM_MAX_TOKENS}

        def ask(prompt: str) -> str:
            return str(complete([{"role": "user", "content": prompt}], settings).text)

        return ask
    if callable(llm):
        return llm
    raise TypeError(f"llm: expected a callable prompt -> text or a chat client, got {type(llm).__name__}")


def check_names(what: str, names: Sequence[str]) -> None:
    bad = [n for n in names if not isinstance(n, str) or not LABEL.match(n)]
    if bad:
        raise ValueError(
            f"{what}: {bad[0]!r} is not a name (letters, digits, '_' and '-', starting with a letter or '_')"
        )


@dataclass(frozen=True)
class PatternResult:
    """A pattern's answer (``value``, ``None`` when the run did not complete) and its run.

    ``reason`` is the run's (``goal_met``, ``task_failed``, ``replan_budget``, ...), or
    ``awaiting_human`` when the run waits (``status`` ``waiting``) at a task a person owns: the
    message says what they are asked; once they answered (``evolve answer``), the same call
    with the same ``out`` goes on.
    """

    pattern: str
    value: Any
    status: str
    reason: str
    message: str
    run: AgentResult

    @property
    def out(self) -> Path:
        return self.run.out


def run_pattern(
    pattern: str,
    problem: Mapping[str, Any],
    tasks: list[dict[str, Any]],
    tools: Mapping[str, ToolFn],
    facts: Mapping[str, Any],
    out: str | Path | None,
    *,
    answer: str,
    planner: Planner | None = None,
    max_replans: int = 0,
    max_steps: int | None = None,
    human: str | None = None,
) -> PatternResult:
    """Run ``tasks`` (the first plan; ``planner`` the one that extends it, if the pattern loops)
    for ``problem``; the pattern's value is the criterion ``answer``. A task of the tool ``human``
    waiting for its person: reason ``awaiting_human``."""
    catalog = problem_from_dict({"name": pattern, **problem}, f"<{pattern}>")

    def first(goal: str, history: Any, last_error: dict[str, Any] | None) -> list[dict[str, Any]]:
        return tasks

    agent = PlanExecuteAgent(
        catalog,
        tools,
        planner=first,
        replanner=planner,
        max_steps=max_steps if max_steps is not None else max(defaults.PATTERN_MIN_STEPS, 2 * len(tasks)),
        max_replans=max_replans,
        out=out,
        facts=facts,
    )
    run = agent.run(str(problem.get("objective") or pattern))
    reason, message = run.reason, run.message
    waiting = [
        tid
        for tid, task in run.outcome.get("tasks", {}).items()
        if human is not None and task["tool"] == human and task["status"] == "waiting"
    ]
    if waiting:
        reason = "awaiting_human"
        tool = catalog.tools.get(human or "")
        outputs = ", ".join(tool.outputs) if tool is not None else "its outputs"
        message = (f"{waiting[0]} waits for a person to give {outputs}: evolve pending {run.out}; "
                   f"evolve answer {run.out} {waiting[0]} --output FILE.json")
    return PatternResult(pattern, run.made.get(answer), run.status, reason, message, run)
