"""The prompt: what a good engineer would want to see before changing a plan.

It gives the problem (tools, criteria, limits, policy), the parent plan with its
fitness values and validator errors, its schedule (critical path and slack) and
one or two other strong candidates. The text comes from plain template files,
``system.txt`` and ``user.txt``, that a user may override by pointing
``prompt_dir`` at a folder holding either. Placeholders are ``{{name}}``; an
unknown one is an error at load time, so a typo never reaches the model.

A prompt is a pure function of its inputs (no clocks, no set ordering, fixed
number formats): the reply cache is keyed by it, and a rerun must hit.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Protocol

from evolve.fitness.evaluation import Evaluation
from evolve.model.coverage import contributing_tasks, covered_criteria
from evolve.model.plan import Plan, Task
from evolve.model.problem import Problem
from evolve.model.validate import validate
from evolve.scheduling import schedule

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_]\w*)\s*\}\}")
FIELDS = ("problem", "tools", "parent_id", "parent_plan", "parent_evaluation",
          "parent_schedule", "parent_notes", "inspirations")
"""The placeholders a template may use."""

TEMPLATE_FILES = ("system.txt", "user.txt")


class Scored(Protocol):
    """What the prompt needs of a candidate (the engine's ``Candidate`` fits)."""

    @property
    def id(self) -> str: ...
    @property
    def plan(self) -> Plan: ...
    @property
    def evaluation(self) -> Evaluation: ...


@dataclass(frozen=True)
class Templates:
    """The two message templates; :meth:`load` reads the shipped ones and any overrides."""

    system: str
    user: str

    @classmethod
    def load(cls, directory: str | Path | None = None) -> Templates:
        """The shipped templates, each replaced by ``directory/<name>`` when that file exists."""
        texts: dict[str, str] = {}
        shipped = resources.files("evolve.llm").joinpath("prompts")
        for name in TEMPLATE_FILES:
            override = Path(directory) / name if directory is not None else None
            if override is not None and override.is_file():
                texts[name] = override.read_text(encoding="utf-8")
            else:
                texts[name] = shipped.joinpath(name).read_text(encoding="utf-8")
            unknown = sorted({m for m in PLACEHOLDER.findall(texts[name]) if m not in FIELDS})
            if unknown:
                raise ValueError(f"prompt template {name}: unknown placeholder(s) "
                                 f"{', '.join(unknown)} (known: {', '.join(FIELDS)})")
        return cls(system=texts["system.txt"], user=texts["user.txt"])


def render(template: str, values: Mapping[str, str]) -> str:
    """``template`` with every ``{{name}}`` replaced; everything else, braces included, kept."""
    return PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


def build_messages(problem: Problem, parent: Scored, others: Sequence[Scored],
                   templates: Templates) -> list[dict[str, str]]:
    """The chat messages asking for a patch of ``parent``, with ``others`` as inspiration."""
    values = {
        "problem": describe_problem(problem),
        "tools": describe_tools(problem),
        "parent_id": parent.id,
        "parent_plan": describe_plan(parent.plan),
        "parent_evaluation": describe_evaluation(parent.evaluation),
        "parent_schedule": describe_schedule(problem, parent.plan),
        "parent_notes": describe_notes(problem, parent.plan),
        "inspirations": describe_others(others),
    }
    return [{"role": "system", "content": render(templates.system, values).strip()},
            {"role": "user", "content": render(templates.user, values).strip()}]


def num(value: float) -> str:
    return f"{value:g}"


def describe_problem(problem: Problem) -> str:
    lines = [f"Name: {problem.name}"]
    if problem.objective:
        lines.append(f"Objective: {problem.objective}")
    lines.append(f"Initial facts (read them as $name): {', '.join(problem.initial) or '(none)'}")
    lines.append("Success criteria (facts the plan must produce): "
                 f"{', '.join(problem.criteria) or '(none)'}")
    limits = problem.limits
    parts = [f"max_parallel {limits.max_parallel}" if limits.max_parallel is not None else "",
             f"max_tasks {limits.max_tasks}" if limits.max_tasks is not None else ""]
    lines.append(f"Limits: {', '.join(p for p in parts if p) or 'none'}")
    if problem.resources:
        lines.append("Shared resources (capacity at any moment): "
                     + ", ".join(f"{k} {num(v)}" for k, v in problem.resources.items()))
    if problem.policy.write_requires_approval:
        lines.append("Policy: every write task must depend, directly or through other tasks, "
                     "on an approval task.")
    if isinstance(problem.template, Plan):
        lines.append("Required tasks (keep them, with their dependencies): "
                     + ", ".join(f"{t.id} ({t.tool})" for t in problem.template.tasks))
    return "\n".join(lines)


def describe_tools(problem: Problem) -> str:
    lines = []
    for tool in problem.tools.values():
        text = (f"- {tool.name}: needs [{', '.join(tool.inputs)}] -> "
                f"makes [{', '.join(tool.outputs)}]; {num(tool.duration)} time units; "
                f"risk {tool.risk}")
        if tool.uses:
            text += "; uses " + ", ".join(f"{k} {num(v)}" for k, v in tool.uses.items())
        if tool.cost:
            text += f"; cost {num(tool.cost)}"
        if tool.description:
            text += f"; {tool.description}"
        if not problem.scope_granted(tool.scope):
            text += f" [scope {tool.scope} NOT granted: do not use]"
        lines.append(text)
    return "\n".join(lines)


def task_json(task: Task) -> str:
    data = task.to_dict()
    if not data["outputs"]:
        del data["outputs"]
    return json.dumps(data, separators=(", ", ": "))


def describe_plan(plan: Plan) -> str:
    if not plan.tasks:
        return "(no tasks)"
    lines = [task_json(task) for task in plan.tasks]
    if plan.priority is not None:
        lines.append(f"priority: {json.dumps(list(plan.priority))}")
    return "\n".join(lines)


def describe_evaluation(evaluation: Evaluation) -> str:
    if evaluation.failed:
        return f"evaluation failed: {evaluation.failed}"
    lines = [f"feasible (valid and complete): {'yes' if evaluation.feasible else 'no'}",
             "fitness: " + ", ".join(f"{k}={num(v)}" for k, v in evaluation.values.items())]
    if evaluation.errors:
        lines.append("validator errors:")
        lines.extend(f"- {error}" for error in evaluation.errors)
    else:
        lines.append("validator errors: none")
    return "\n".join(lines)


def describe_schedule(problem: Problem, plan: Plan) -> str:
    sched = schedule(problem, plan)
    tools = plan.by_id()
    critical = set(sched.critical_path)
    lines = [f"makespan {num(sched.makespan)}; critical path "
             f"({num(sched.critical_path_length)}): {' -> '.join(sched.critical_path) or '-'}"]
    for tid in sorted(sched.start, key=lambda t: (sched.start[t], t)):
        mark = "  critical" if tid in critical else ""
        lines.append(f"{tid} {tools[tid].tool}: start {num(sched.start[tid])}, finish "
                     f"{num(sched.finish[tid])}, slack {num(sched.slack[tid])}{mark}")
    if sched.unscheduled:
        lines.append("cannot be scheduled (on or behind a dependency cycle): "
                     f"{', '.join(sched.unscheduled)}")
    return "\n".join(lines)


def describe_notes(problem: Problem, plan: Plan) -> str:
    """What the parent misses and what it carries for nothing: the two commonest fixes."""
    errors = validate(problem, plan)
    covered = set(covered_criteria(problem, plan, errors))
    missing = [c for c in problem.criteria if c not in covered]
    serving = contributing_tasks(problem, plan)
    idle = [f"{t.id} ({t.tool})" for t in plan.tasks if t.id not in serving]
    return "\n".join([
        f"criteria not yet produced by a sound task: {', '.join(missing) or 'none'}",
        f"tasks that serve no criterion: {', '.join(idle) or 'none'}",
    ])


def describe_others(others: Sequence[Scored]) -> str:
    if not others:
        return "(none yet)"
    blocks = []
    for other in others:
        values = ", ".join(f"{k}={num(v)}" for k, v in other.evaluation.values.items())
        blocks.append(f"Candidate {other.id} ({values}; "
                      f"{'feasible' if other.evaluation.feasible else 'not feasible'}):\n"
                      f"{describe_plan(other.plan)}")
    return "\n\n".join(blocks)
