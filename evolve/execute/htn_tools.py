"""An HTN operator's tool as a run calls it: its guard checked in the live world, a prompted
operator's arguments filled, the tool's own outputs in, the operator's keys out.

A tool returns what it returns (``{"comment": "...", "sha": "..."}``); the operator says what
that does to the world: literal ``set`` values, and ``$result.<output>[.path]`` bindings read
from those outputs. The bound step returns one output per key the operator sets (what the plan's
later tasks read as ``$tN.key``) and the tool's own outputs under ``$result`` (what the world
replay binds from), so a tool need not know the domain's keys. A binding whose path is not in the
outputs, or holds no scalar, is a failure of that task, named, never a silent null. The goal
marker (``htn:<goal>``, which makes ``__htn_decomposed__``) runs here too: it only marks the
decomposition done.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evolve.execute.tools import Call, ToolFailure, ToolFn, reconciler
from evolve.llm.argfill import ArgFiller, Filled
from evolve.model.problem import Problem
from evolve.problems.htn import HtnProblem
from evolve.problems.htn.domain import Operator, Unknown, first_failing, holds, show
from evolve.problems.htn.problem import GOAL_FACT, goal_tool
from evolve.problems.htn.world import RESULT_KEY, apply_effects, resolve

ARGFILL = "argfill.jsonl"
"""The run folder's record of argument filling (see :class:`Ledger`)."""


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


class World:
    """The world state as the run's steps finish (seeded from the journal on resume): what a
    prompted operator's prompt is rendered from. Steps that conflict are ordered by deps, so the
    order in which concurrent ones finish does not change it."""

    def __init__(self, state: Mapping[str, Any]) -> None:
        self.state = dict(state)
        self.lock = threading.Lock()

    def apply(self, operator: Operator, outputs: Mapping[str, Any]) -> None:
        with self.lock:
            self.state = apply_effects(operator.effects, self.state, outputs)

    def current(self) -> dict[str, Any]:
        """The state as it is, unknown values kept unknown (no guard over one holds)."""
        with self.lock:
            return dict(self.state)

    def snapshot(self) -> dict[str, Any]:
        with self.lock:
            return {k: None if isinstance(v, Unknown) else v for k, v in self.state.items()}


class Ledger:
    """``argfill.jsonl`` in the run folder: every ask of the model, accepted or refused, written
    (and synced) before the task's tool is called, so a resumed run passes the same arguments,
    never asks twice, and counts each request once (the ledger is the record, not memory)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock = threading.Lock()
        self.args: dict[str, dict[str, Any]] = {}
        self.rows: list[dict[str, Any]] = read_ledger(path)
        for row in self.rows:
            if row.get("args") is not None:
                self.args[str(row["task"])] = dict(row["args"])

    def get(self, task_id: str) -> dict[str, Any] | None:
        with self.lock:
            return self.args.get(task_id)

    def put(self, task_id: str, attempt: int, filled: Filled) -> None:
        row: dict[str, Any] = {"task": task_id, "attempt": attempt, "args": filled.args,
                               "cached": filled.cached, "requests": filled.requests}
        if filled.refused is not None:
            row.update(refused=filled.refused, detail=filled.detail)
        with self.lock, self.path.open("a", encoding="utf-8") as stream:
            stream.write(json.dumps(row) + "\n")
            stream.flush()
            os.fsync(stream.fileno())
            self.rows.append(row)
            if filled.args is not None:
                self.args[task_id] = dict(filled.args)


    def asks(self, task_id: str, attempt: int) -> int:
        """The model calls the rows of that call of ``task_id`` say were made: one per ask that
        sent a request (a reply from the reply cache sent none). Read from the file, which a
        step running in another process (a Dask worker) appended to."""
        return sum(1 for row in read_ledger(self.path)
                   if row.get("task") == task_id and row.get("attempt") == attempt and not row.get("cached"))


def read_ledger(path: Path) -> list[dict[str, Any]]:
    """The rows of an ``argfill.jsonl`` (none when there is none; a torn last line skipped)."""
    rows: list[dict[str, Any]] = []
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            with contextlib.suppress(ValueError):
                row = json.loads(line)
                if isinstance(row, dict) and "task" in row:
                    rows.append(row)
    return rows


@dataclass(frozen=True)
class Filling:
    """What a run needs to fill prompted operators' arguments."""

    filler: ArgFiller | None
    ledger: Ledger
    world: World


class BoundStep:
    """``fn`` with its outputs bound by ``operator`` (see the module docstring); a prompted
    operator's arguments are filled first (``filling``) and passed beside the bound inputs.

    It is :class:`~evolve.execute.tools.AsksModel`: a call of a prompted operator's task whose
    arguments are not in the ledger yet asks the model once (``argfill``), which
    ``limits.max_llm_calls`` counts at dispatch."""

    purpose = "argfill"

    def __init__(self, fn: ToolFn, operator: Operator, filling: Filling | None = None) -> None:
        self.fn = fn
        self.operator = operator
        self.filling = filling

    def model_calls_needed(self, task_id: str) -> int:
        filling = self.filling
        if self.operator.prompt is None or filling is None or filling.filler is None:
            return 0
        return 0 if filling.ledger.get(task_id) is not None else 1

    def model_calls_made(self, task_id: str, attempt: int) -> int:
        return 0 if self.filling is None else self.filling.ledger.asks(task_id, attempt)

    def __call__(self, inputs: Mapping[str, Any], call: Call) -> Mapping[str, Any]:
        if self.filling is not None:
            self.guard()
        args = self.arguments(call) if self.operator.prompt is not None and self.filling else {}
        out = bind_outputs(self.operator, self.fn({**inputs, **args}, call))
        if self.filling is not None:
            self.filling.world.apply(self.operator, out)
        return out

    def guard(self) -> None:
        """The operator's precondition, read in the live world just before its tool would run:
        when it no longer holds (a tool's result made it false), the step fails for good, named,
        and its ``on_failure`` decides (an HTN plan's steps replan from the world as it is)."""
        assert self.filling is not None
        state = self.filling.world.current()
        if not holds(self.operator.pre, state):
            failing = first_failing(self.operator.pre, state) or self.operator.pre
            raise ToolFailure(f"{self.operator.name}: its guard no longer holds in the live state "
                              f"(needs {show(failing)})")

    def arguments(self, call: Call) -> dict[str, Any]:
        assert self.filling is not None
        known = self.filling.ledger.get(call.task_id)
        if known is not None:
            return known
        if self.filling.filler is None:
            raise ToolFailure(f"{self.operator.name}: its prompt needs a model to fill the arguments "
                              "(give --llm-base-url and --llm-model)")
        filled = self.filling.filler.fill(self.operator, self.filling.world.snapshot(), call.attempt)
        self.filling.ledger.put(call.task_id, call.attempt, filled)
        if filled.args is None:
            raise ToolFailure(f"{self.operator.name}: the model's arguments were refused "
                              f"({filled.refused}: {filled.detail})", retryable=True)
        return filled.args


class BoundWriteStep(BoundStep):
    """A bound step whose tool can say what a call already made returned (``reconcile``)."""

    def reconcile(self, idempotency_key: str) -> Mapping[str, Any] | None:
        inner = reconciler(self.fn)
        raw = inner(idempotency_key) if inner is not None else None
        return None if raw is None else bind_outputs(self.operator, raw)


class GoalMarker:
    """The goal marker's tool: the decomposition is done (whether the goal holds is judged apart)."""

    def __call__(self, inputs: Mapping[str, Any], call: Call) -> Mapping[str, Any]:
        return {GOAL_FACT: True}


def bind_htn_tools(problem: Problem, tools: Mapping[str, ToolFn],
                   filling: Filling | None = None) -> dict[str, ToolFn]:
    """``tools`` with every HTN operator's callable bound, and the goal marker added; unchanged
    for a problem that is no HTN domain."""
    if not isinstance(problem, HtnProblem) or problem.domain is None:
        return dict(tools)
    domain = problem.domain
    table: dict[str, ToolFn] = dict(tools)
    for name, fn in tools.items():
        operator = domain.operators.get(name)
        if operator is not None and not isinstance(fn, BoundStep):
            kind = BoundWriteStep if reconciler(fn) else BoundStep
            table[name] = kind(fn, operator, filling)
    table.setdefault(goal_tool(domain), GoalMarker())
    return table
