"""The built-in objectives on compiled arrays: one numba kernel per plan instead of Python walks.

The plain-Python definitions (:func:`evolve.model.validate.validate`,
:func:`evolve.model.coverage.covered_criteria` and
:func:`~evolve.model.coverage.contributing_tasks`, the sums in
:mod:`evolve.fitness.builtin`) stay the meaning and the test oracle; this module
gives exactly their numbers, faster. :func:`evolve.model.plan_arrays.plan_arrays`
turns the plan into arrays and counts the errors it meets on the way; the kernel
:func:`measure_kernel` adds what needs the graph (a dependency cycle, writes
with no approval upstream) and computes, in linear time, how many criteria sound
tasks cover, how many tasks serve a criterion, the cost and the LLM calls; its
sweeps along the graph are :func:`evolve.model.graph_kernels.reach`.

:class:`CompiledContext` is the :class:`~evolve.fitness.base.Context` that
:func:`~evolve.fitness.evaluation.evaluate_plan` hands to every objective: the
built-ins read its :attr:`~CompiledContext.measures` and
:attr:`~CompiledContext.makespan`, and its ``errors`` (the
validator's messages, which plugins and the evaluation's record read) are only
computed when the count says there are some, since a valid plan has none.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numba import njit

from evolve.fitness.base import Context
from evolve.model.compiled import RISK_CODES, BoolArray, FloatArray, IntArray
from evolve.model.coverage import covered_criteria
from evolve.model.graph_kernels import reach
from evolve.model.plan import Plan
from evolve.model.plan_arrays import PlanArrays, PlanTables, plan_arrays
from evolve.model.problem import Problem
from evolve.model.validate import PlanError, validate
from evolve.scheduling.schedule import compiled_makespan

COMPENSATED_SUM = sys.version_info >= (3, 12)
"""Whether this Python's ``sum`` of floats is Neumaier-compensated (3.12 on): the kernel adds
costs the same way, so ``cost`` is the very float the Python definition returns."""


@dataclass(frozen=True)
class Measures:
    """What the built-in objectives need of one plan, as the compiled path computes it."""

    errors: int
    """Number of validator errors: ``len(validate(problem, plan))``."""
    covered: int
    """``len(covered_criteria(problem, plan, validate(problem, plan)))``."""
    contributing: int
    """``len(contributing_tasks(problem, plan))``."""
    cost: float | None
    """The tools' summed cost, or ``None`` when only Python's own ``sum`` gives it exactly."""
    llm_calls: int


@njit(cache=True, nogil=True)  # type: ignore[misc]
def measure_kernel(tool: IntArray, dep_ptr: IntArray, dep_idx: IntArray, succ_ptr: IntArray,
                   succ_idx: IntArray, order: IntArray, read_ptr: IntArray,
                   read_idx: IntArray, made_ptr: IntArray, made_idx: IntArray, bad_in: BoolArray,
                   intact: BoolArray, duplicate: BoolArray, template: IntArray, risk: IntArray,
                   cost: FloatArray, llm_calls: IntArray, initial: BoolArray, criteria: IntArray,
                   gated: BoolArray, compensated: bool, write: int, approval: int
                   ) -> tuple[int, int, int, float, int]:
    """``(errors, covered, contributing, cost, llm_calls)`` of one decoded plan (see
    :class:`~evolve.model.plan_arrays.PlanArrays`); ``errors`` counts only what the arrays
    leave out: one for a dependency cycle, one per ``gated`` task (a write that needs an
    approval, :func:`~evolve.model.validate.approval_rule`) with no approval upstream.

    The risk codes come in as arguments, not as globals: numba freezes a global
    into the machine code, so the codes could only change with a recompilation."""
    n = tool.shape[0]
    bad = bad_in.copy()
    errors = 0

    placed = order.shape[0]
    if placed < n:
        errors += 1  # no-cycle

    # write-approval, approval-threshold: a gated write needs an approval upstream; sweep down
    # from every approval
    if gated.any():
        approvals = np.empty(n, dtype=np.int64)
        count = 0
        for a in range(n):
            if tool[a] >= 0 and risk[tool[a]] == approval:
                approvals[count] = a
                count += 1
        approved = np.zeros(n, dtype=np.bool_)
        reach(succ_ptr, succ_idx, approvals[:count], approved)
        for v in range(n):
            if gated[v] and not approved[v]:
                errors += 1  # write-approval, approval-threshold
                bad[v] = True

    # sound tasks (no error of their own, deps intact, only sound tasks upstream) and coverage
    sound = np.zeros(n, dtype=np.bool_)
    for k in range(placed):
        v = order[k]
        ok = intact[v] and not bad[v]
        if ok:
            for q in range(dep_ptr[v], dep_ptr[v + 1]):
                if not sound[dep_idx[q]]:
                    ok = False
                    break
        sound[v] = ok
    facts = initial.shape[0]
    made = np.zeros(facts, dtype=np.bool_)
    first = np.full(facts, -1, dtype=np.int64)
    for v in range(n):
        for q in range(made_ptr[v], made_ptr[v + 1]):
            f = made_idx[q]
            if f >= facts:
                continue  # a fact outside the catalog, never a criterion
            if sound[v]:
                made[f] = True
            if first[f] < 0:
                first[f] = v
    covered = 0
    for c in criteria:
        if initial[c] or made[c]:
            covered += 1

    # contributing tasks: from each criterion's first producer and the template's tasks, along
    # what they read and the approvals upstream of writes (each task climbed through once)
    todo = np.empty(criteria.shape[0] + template.shape[0] + read_idx.shape[0] + n + 1, dtype=np.int64)
    top = 0
    for c in criteria:
        if first[c] >= 0:
            todo[top] = first[c]
            top += 1
    for v in template:
        todo[top] = v
        top += 1
    serving = np.zeros(n, dtype=np.bool_)
    climbed = np.zeros(n, dtype=np.bool_)
    writes = np.empty(n, dtype=np.int64)
    while top > 0:
        found = 0  # the writes that begin to serve, climbed from together
        while top > 0:
            top -= 1
            v = todo[top]
            if serving[v]:
                continue
            serving[v] = True
            for q in range(read_ptr[v], read_ptr[v + 1]):
                todo[top] = read_idx[q]
                top += 1
            if tool[v] >= 0 and risk[tool[v]] == write:
                writes[found] = v
                found += 1
        for u in reach(dep_ptr, dep_idx, writes[:found], climbed):
            if tool[u] >= 0 and risk[tool[u]] == approval:
                todo[top] = u
                top += 1
    contributing = 0
    for v in range(n):
        if serving[v] and not duplicate[v]:
            contributing += 1

    # cost and LLM calls, added in plan order as Python's sum() adds them
    total = 0.0
    carry = 0.0
    calls = 0
    for v in range(n):
        t = tool[v]
        if t < 0:
            continue
        x = cost[t]
        s = total + x
        if compensated:
            if abs(total) >= abs(x):
                carry += (total - s) + x
            else:
                carry += (x - s) + total
        total = s
        calls += llm_calls[t]
    if compensated and carry != 0.0 and math.isfinite(carry):
        total += carry
    return errors, covered, contributing, total, calls


def measure(tables: PlanTables, arrays: PlanArrays) -> Measures:
    """The figures of a decoded plan under its problem's tables."""
    cp = tables.compiled
    errors, covered, contributing, cost, calls = measure_kernel(
        arrays.tool, arrays.dep_ptr, arrays.dep_idx, arrays.succ_ptr, arrays.succ_idx, arrays.order,
        arrays.read_ptr, arrays.read_idx,
        arrays.made_ptr, arrays.made_idx, arrays.bad, arrays.intact, arrays.duplicate,
        arrays.template, cp.risk, cp.cost, cp.llm_calls, cp.initial, cp.criteria,
        arrays.gated, COMPENSATED_SUM, RISK_CODES["write"], RISK_CODES["approval"])
    return Measures(errors=arrays.errors + int(errors), covered=int(covered),
                    contributing=int(contributing), cost=float(cost) if tables.float_costs else None,
                    llm_calls=int(calls))


class CompiledContext(Context):
    """A context that also offers :attr:`measures`; what :func:`evaluate_plan` gives objectives.

    It is a :class:`Context` in every respect a plugin can see: ``errors`` is the
    validator's list (empty without running the validator when the compiled
    count is zero, which is then exactly what the validator would return) and
    ``schedule`` is unchanged.
    """

    @cached_property
    def decoded(self) -> PlanArrays | None:
        """The plan as arrays, decoded once for every compiled figure, or ``None`` for a plan
        whose task ids repeat (left to Python)."""
        return plan_arrays(self.problem, self.plan)

    @cached_property
    def measures(self) -> Measures | None:
        """The compiled figures, or ``None`` for a plan whose task ids repeat (left to Python)."""
        arrays = self.decoded
        return None if arrays is None else measure(self.problem.derived(PlanTables), arrays)

    @cached_property
    def makespan(self) -> float | None:
        """``schedule.makespan`` without the schedule's Python (``None``: left to Python, as
        :attr:`measures`); raises the scheduler's ``ValueError`` when a task never fits. A
        schedule some other objective has already asked for is read instead."""
        if "schedule" in self.__dict__:
            return self.schedule.makespan
        arrays = self.decoded
        return None if arrays is None else compiled_makespan(
            self.problem.derived(PlanTables).compiled, arrays)

    @cached_property
    def errors(self) -> list[PlanError]:
        measures = self.measures
        if measures is not None and measures.errors == 0:
            return []
        return validate(self.problem, self.plan)


def measures_of(context: Context) -> Measures | None:
    """The compiled figures when ``context`` offers them (and the plan compiles), else ``None``."""
    return context.measures if isinstance(context, CompiledContext) else None


def makespan_value(context: Context) -> float:
    """The makespan of the context's schedule: compiled when the context offers it."""
    fast = context.makespan if isinstance(context, CompiledContext) else None
    return context.schedule.makespan if fast is None else fast


def covered_count(problem: Problem, plan: Plan, context: Context) -> int:
    """How many criteria sound tasks cover: what ``completeness`` and feasibility both count."""
    fast = measures_of(context)
    return len(covered_criteria(problem, plan, context.errors)) if fast is None else fast.covered
