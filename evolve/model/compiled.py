"""The problem as integer arrays: built once per run, shipped once per worker, read by the kernels.

The :class:`~evolve.model.problem.Problem` is for people and files (names,
mappings); the hot paths (schedule generation, tool-choice search, compiled
objectives) need every lookup to be an array index. Facts and tools are
numbered in a fixed order (facts as they first appear: initial facts,
criteria, then each tool's inputs and outputs in catalog order; tools in
catalog order), so the same problem always compiles to the same arrays.
Adjacency lists are CSR pairs: the items of ``i`` are ``idx[ptr[i]:ptr[i+1]]``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from evolve.model.problem import RISKS, Problem, Risk
from evolve.model.validate import approval_rule

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

RISK_CODES: dict[Risk, int] = {risk: code for code, risk in enumerate(RISKS)}
"""How :attr:`CompiledProblem.risk` encodes a tool's risk (read 0, write 1, approval 2)."""


@dataclass(frozen=True, eq=False)
class CompiledProblem:
    """Every fact of the problem an index, every tool an index, every relation an array.

    ``need[t]`` is what tool ``t`` holds while it runs: column 0 is one
    ``max_parallel`` slot, the others the named resources in ``resources``
    order; ``cap`` is the matching capacity (``inf`` when unlimited).
    ``producers`` lists, per fact, only the tools whose scope is granted.
    """

    facts: tuple[str, ...]
    tools: tuple[str, ...]
    resources: tuple[str, ...]
    dur: FloatArray
    need: FloatArray
    cap: FloatArray
    granted: BoolArray
    risk: IntArray
    cost: FloatArray
    llm_calls: IntArray
    in_ptr: IntArray
    in_idx: IntArray
    out_ptr: IntArray
    out_idx: IntArray
    prod_ptr: IntArray
    prod_idx: IntArray
    initial: BoolArray
    criteria: IntArray
    gated: BoolArray
    """``gated[t]``: a task of tool ``t`` needs an approval upstream
    (:func:`~evolve.model.validate.approval_rule`: every write under ``write_requires_approval``,
    a write whose ``approval_required`` threshold can hold)."""
    max_tasks: int
    """``-1`` when the problem sets no limit."""

    @property
    def fact_id(self) -> dict[str, int]:
        return {f: i for i, f in enumerate(self.facts)}

    @property
    def tool_id(self) -> dict[str, int]:
        return {t: i for i, t in enumerate(self.tools)}

    def inputs(self, tool: int) -> IntArray:
        return self.in_idx[self.in_ptr[tool]:self.in_ptr[tool + 1]]

    def outputs(self, tool: int) -> IntArray:
        return self.out_idx[self.out_ptr[tool]:self.out_ptr[tool + 1]]

    def producers(self, fact: int) -> IntArray:
        return self.prod_idx[self.prod_ptr[fact]:self.prod_ptr[fact + 1]]


def csr(lists: Sequence[Iterable[int]]) -> tuple[IntArray, IntArray]:
    """``(ptr, idx)`` of a list of integer lists."""
    ptr = np.zeros(len(lists) + 1, dtype=np.int64)
    flat: list[int] = []
    for i, items in enumerate(lists):
        flat.extend(items)
        ptr[i + 1] = len(flat)
    return ptr, np.asarray(flat, dtype=np.int64)


def compile_problem(problem: Problem) -> CompiledProblem:
    """The arrays of ``problem``; linear in the size of the catalog."""
    fact_id: dict[str, int] = {}

    def number(fact: str) -> int:
        return fact_id.setdefault(fact, len(fact_id))

    for fact in (*problem.initial, *problem.criteria):
        number(fact)
    tools = list(problem.tools.values())
    inputs = [[number(f) for f in tool.inputs] for tool in tools]
    outputs = [[number(f) for f in tool.outputs] for tool in tools]
    resources = tuple(problem.resources)
    slots = problem.limits.max_parallel
    cap = np.array([math.inf if slots is None else float(slots),
                    *(float(problem.resources[r]) for r in resources)], dtype=np.float64)
    need = np.zeros((len(tools), 1 + len(resources)), dtype=np.float64)
    need[:, 0] = 1.0
    for t, tool in enumerate(tools):
        for r, name in enumerate(resources):
            need[t, 1 + r] = float(tool.uses.get(name, 0.0))
    granted = np.array([problem.scope_granted(tool.scope) for tool in tools], dtype=np.bool_)
    producers: list[list[int]] = [[] for _ in fact_id]
    for t, outs in enumerate(outputs):
        if granted[t]:
            for f in dict.fromkeys(outs):
                producers[f].append(t)
    initial = np.zeros(len(fact_id), dtype=np.bool_)
    initial[[fact_id[f] for f in problem.initial]] = True
    in_ptr, in_idx = csr(inputs)
    out_ptr, out_idx = csr(outputs)
    prod_ptr, prod_idx = csr(producers)
    return CompiledProblem(
        facts=tuple(fact_id), tools=tuple(problem.tools), resources=resources,
        dur=np.array([tool.duration for tool in tools], dtype=np.float64), need=need, cap=cap,
        granted=granted, risk=np.array([RISK_CODES[tool.risk] for tool in tools], dtype=np.int64),
        cost=np.array([tool.cost for tool in tools], dtype=np.float64),
        llm_calls=np.array([tool.llm_calls for tool in tools], dtype=np.int64),
        in_ptr=in_ptr, in_idx=in_idx, out_ptr=out_ptr, out_idx=out_idx,
        prod_ptr=prod_ptr, prod_idx=prod_idx, initial=initial,
        criteria=np.array([fact_id[f] for f in problem.criteria], dtype=np.int64),
        gated=np.array([approval_rule(problem.policy, tool) is not None for tool in tools], dtype=np.bool_),
        max_tasks=-1 if problem.limits.max_tasks is None else int(problem.limits.max_tasks),
    )
