"""An HTN operator's tool as a run calls it: the tool's own outputs in, the operator's keys out.

A tool returns what it returns (``{"comment": "...", "sha": "..."}``); the operator says what
that does to the world: literal ``set`` values, and ``$result.<output>[.path]`` bindings read
from those outputs. The bound step returns one output per key the operator sets (what the plan's
later tasks read as ``$tN.key``) and the tool's own outputs under ``$result`` (what the world
replay binds from), so a tool need not know the domain's keys. A binding whose path is not in the
outputs, or holds no scalar, is a failure of that task, named, never a silent null. The goal
marker (``htn:<goal>``) runs here too: it only marks the decomposition done.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evolve.execute.tools import Call, ToolFailure, ToolFn, reconciler
from evolve.model.problem import Problem
from evolve.problems.htn import Domain, HtnProblem
from evolve.problems.htn.domain import Operator, Unknown
from evolve.problems.htn.problem import goal_fact
from evolve.problems.htn.world import RESULT_KEY, resolve


def bind_outputs(operator: Operator, raw: object) -> dict[str, Any]:
    if not isinstance(raw, Mapping):
        raise ToolFailure(f"{operator.name}: the tool returned {type(raw).__name__}, "
                          "not a mapping of outputs")
    out: dict[str, Any] = {}
    for key, value in operator.effects.set.items():
        if isinstance(value, Unknown):
            bound = resolve(raw, value)
            if isinstance(bound, Unknown):
                raise ToolFailure(f"{operator.name}: the tool's outputs have no {value} (a string, number, "
                                  f"true/false or null) for {key!r}")
            out[key] = bound
        else:
            out[key] = value
    out[RESULT_KEY] = dict(raw)
    return out


class BoundStep:
    """``fn`` with its outputs bound by ``operator`` (see the module docstring)."""

    def __init__(self, fn: ToolFn, operator: Operator) -> None:
        self.fn = fn
        self.operator = operator

    def __call__(self, inputs: Mapping[str, Any], call: Call) -> Mapping[str, Any]:
        return bind_outputs(self.operator, self.fn(inputs, call))


class BoundWriteStep(BoundStep):
    """A bound step whose tool can say what a call already made returned (``reconcile``)."""

    def reconcile(self, idempotency_key: str) -> Mapping[str, Any] | None:
        inner = reconciler(self.fn)
        raw = inner(idempotency_key) if inner is not None else None
        return None if raw is None else bind_outputs(self.operator, raw)


class GoalMarker:
    """The goal marker's tool: the decomposition is done (whether the goal holds is judged apart)."""

    def __init__(self, domain: Domain) -> None:
        self.fact = goal_fact(domain)

    def __call__(self, inputs: Mapping[str, Any], call: Call) -> Mapping[str, Any]:
        return {self.fact: True}


def bind_htn_tools(problem: Problem, tools: Mapping[str, ToolFn]) -> dict[str, ToolFn]:
    """``tools`` with every HTN operator's callable bound, and the goal marker added; unchanged
    for a problem that is no HTN domain."""
    if not isinstance(problem, HtnProblem) or problem.domain is None:
        return dict(tools)
    domain = problem.domain
    table: dict[str, ToolFn] = dict(tools)
    for name, fn in tools.items():
        operator = domain.operators.get(name)
        if operator is not None and not isinstance(fn, BoundStep):
            table[name] = BoundWriteStep(fn, operator) if reconciler(fn) else BoundStep(fn, operator)
    table.setdefault(goal_fact(domain), GoalMarker(domain))
    return table
