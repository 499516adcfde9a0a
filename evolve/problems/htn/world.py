"""The world an HTN plan left behind when it ran, and whether the goal holds there.

The planner's decomposition says what a plan *should* leave behind; this module says what the
steps that actually ran *did* leave behind, by replaying their operators' effects from the
state the run started in: keys unset, literal values set, then ``$result.<output>[.path]``
bindings read from the outputs the tool returned. It imports nothing of the planner, so a
planner that builds a wrong plan cannot also vouch for it: ``goal_met`` rests on this check.

The goal holds when its task's ``achieves`` is true in the replayed state; a goal task without
one holds when the steps that ran, from some point on, are a whole decomposition of the goal
from the state they started in (recognised here, by a bounded search of its own).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evolve.problems.htn.domain import (
    All,
    Domain,
    Effects,
    Predicate,
    State,
    Unknown,
    Value,
    first_failing,
    holds,
    show,
    truth,
)

Done = tuple[str, Mapping[str, Any] | None]
"""One step that ran: the operator and its task's outputs (``None``: none known)."""
RESULT_KEY = "$result"
"""Where a task's outputs keep the tool's own outputs, which ``$result`` effects bind from (a dry
run's placeholder outputs have none, so nothing binds there)."""


def resolve(outputs: Mapping[str, Any] | None, ref: Unknown) -> Value:
    """``$result.<output>.<path>`` in a tool's outputs; still unknown when it is not there or not
    a JSON scalar."""
    if outputs is None or ref.output not in outputs:
        return ref
    value: Any = outputs[ref.output]
    for part in ref.path:
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return ref
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return ref


def apply_effects(effects: Effects, state: State, outputs: Mapping[str, Any] | None) -> dict[str, Value]:
    """The state after an operator's effects: unsets, then literal sets, then result bindings
    (from the tool's outputs, kept under :data:`RESULT_KEY` of the task's)."""
    raw = outputs.get(RESULT_KEY) if outputs is not None else None
    result = raw if isinstance(raw, Mapping) else None
    out = dict(state)
    for key in effects.unset:
        out.pop(key, None)
    bindings = {}
    for key, value in effects.set.items():
        if isinstance(value, Unknown):
            bindings[key] = resolve(result, value)
        else:
            out[key] = value
    out.update(bindings)
    return out


def replay_state(domain: Domain, steps: Sequence[Done], start: State | None = None) -> dict[str, Value]:
    """The state after ``steps`` ran in order, from ``start`` (default: the domain's state)."""
    state: dict[str, Value] = dict(domain.state if start is None else start)
    for operator, outputs in steps:
        op = domain.operators.get(operator)
        if op is not None:
            state = apply_effects(op.effects, state, outputs)
    return state


@dataclass(frozen=True)
class GoalVerdict:
    """Whether the goal holds after the steps that ran, and why not when it does not."""

    holds: bool
    reason: str


def goal_achieves(domain: Domain) -> Predicate | None:
    """The goal task's ``achieves``; ``None`` when it declares none (or the goal is an operator)."""
    task = domain.tasks.get(domain.goal)
    if task is None or task.achieves == All():
        return None
    return task.achieves


def goal_verdict(domain: Domain, steps: Sequence[Done], start: State | None = None) -> GoalVerdict:
    """The goal's truth after ``steps`` (in the order they ran) from ``start``."""
    initial = dict(domain.state if start is None else start)
    achieves = goal_achieves(domain)
    if achieves is not None:
        final = replay_state(domain, steps, initial)
        if holds(achieves, final):
            return GoalVerdict(True, f"{domain.goal}: {show(achieves)} holds in the replayed state")
        failing = first_failing(achieves, final) or achieves
        return GoalVerdict(False, f"{domain.goal} needs {show(failing)}, which does not hold in the "
                                  f"state its {len(steps)} done steps leave")
    state: dict[str, Value] = initial
    for k in range(len(steps) + 1):
        if decomposes(domain, [op for op, _ in steps[k:]], [out for _, out in steps[k:]], state):
            return GoalVerdict(True, f"steps {k + 1}-{len(steps)} decompose {domain.goal}")
        if k < len(steps):
            state = replay_state(domain, steps[k:k + 1], state)
    return GoalVerdict(False, f"no run of the {len(steps)} done steps decomposes {domain.goal}")


def plan_verdict(domain: Domain, operators: Sequence[str], start: State | None = None) -> GoalVerdict:
    """Before a run: whether ``operators``, in this order from ``start`` (default: the domain's
    state), can each apply (no precondition false; a ``$result`` value is unknown until the plan
    runs) and leave the goal possible: its ``achieves`` not false where they end. A goal without
    ``achieves`` is judged by the steps applying, and an empty plan by whether the goal
    decomposes to nothing: recognising the decomposition of a longer plan is a search
    (:func:`decomposes`), too costly for every evaluation of a search (seconds per plan it
    rejects on IPC Transport), so that tree stays the planner's word (the HDDL verifier checks
    the IPC plans' trees)."""
    initial = domain.state if start is None else start
    state: dict[str, Value] = dict(initial)
    for i, name in enumerate(operators):
        op = domain.operators.get(name)
        if op is None:
            return GoalVerdict(False, f"step {i + 1} ({name}) is no operator of the domain")
        if truth(op.pre, state) is False:
            failing = first_failing(op.pre, state) or op.pre
            return GoalVerdict(False, f"step {i + 1} ({name}) needs {show(failing)}")
        state = apply_effects(op.effects, state, None)
    achieves = goal_achieves(domain)
    if achieves is not None:
        if truth(achieves, state) is False:
            failing = first_failing(achieves, state) or achieves
            return GoalVerdict(False, f"{domain.goal} needs {show(failing)}, which is false after "
                                      f"the plan's {len(operators)} steps")
        return GoalVerdict(True, f"{domain.goal}: {show(achieves)} is not false after the plan's steps")
    if not operators and not decomposes(domain, [], [], initial):
        return GoalVerdict(False, f"{domain.goal} does not decompose to nothing, and the plan has no step")
    return GoalVerdict(True, f"the plan's {len(operators)} steps apply in turn")


@dataclass(frozen=True)
class Agenda:
    """Tasks still to match (a linked list, so pushing subtasks shares the rest)."""

    name: str
    depth: int
    rest: Agenda | None


def decomposes(domain: Domain, operators: Sequence[str], outputs: Sequence[Mapping[str, Any] | None],
               start: State) -> bool:
    """Whether ``operators``, exactly and in order, are a decomposition of the goal from ``start``
    whose every precondition holds when its step runs (within the domain's depth and node bounds;
    an unordered method's subtasks in any order, each one's steps together)."""
    stack: list[tuple[Agenda | None, int, State]] = [(Agenda(domain.goal, 0, None), 0, dict(start))]
    nodes = 0
    while stack and nodes < domain.max_nodes:
        nodes += 1
        agenda, at, state = stack.pop()
        if agenda is None:
            if at == len(operators):
                return True
            continue
        op = domain.operators.get(agenda.name)
        if op is not None:
            if at < len(operators) and operators[at] == op.name and holds(op.pre, state):
                stack.append((agenda.rest, at + 1, apply_effects(op.effects, state, outputs[at])))
            continue
        if agenda.depth > domain.max_depth:
            continue
        for method in reversed(domain.methods_for(agenda.name)):
            if not holds(method.pre, state):
                continue
            size = len(method.subtasks)
            orders = itertools.permutations(range(size)) if method.unordered else [tuple(range(size))]
            for order in orders:
                rest = agenda.rest
                for i in reversed(order):
                    rest = Agenda(method.subtasks[i], agenda.depth + 1, rest)
                stack.append((rest, at, state))
    return False
