"""The planning problem: a catalog of tools and what a plan must achieve.

Every class here is a frozen dataclass: a problem is built once, pickled once and
shared by every worker; nothing in the engine changes it (the mappings inside are
plain dicts only so that they pickle under every joblib backend).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, TypeVar, get_args

from evolve.model.plan import FailurePolicy

if TYPE_CHECKING:
    from evolve.model.plan import Plan

Risk = Literal["read", "write", "approval"]
RISKS: tuple[Risk, ...] = get_args(Risk)
By = Literal["tool", "human"]
BY: tuple[By, ...] = get_args(By)
"""Who does a tool's work: its callable, or a person (the run waits for their decision or answer)."""

T = TypeVar("T")

MEMO = "_memo"
"""The instance attribute holding :meth:`Problem.derived` values; never pickled, compared or shown."""

BUILDING = threading.RLock()
"""Held while a derived index is built: development threads that all start with a fresh problem
would otherwise each build the same index at once (under the GIL, one after the other). Reentrant,
as one index is built from another."""


def _unlocked_after_fork() -> None:
    """A forked child gets a fresh lock: one held by a thread of the parent at the fork would
    never be released there (that thread does not exist in the child)."""
    global BUILDING
    BUILDING = threading.RLock()


os.register_at_fork(after_in_child=_unlocked_after_fork)


@dataclass(frozen=True)
class Tool:
    """One entry of the catalog: what a task running this tool needs, makes and costs."""

    name: str
    duration: float
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    scope: str | None = None
    risk: Risk = "read"
    cost: float = 0.0
    uses: Mapping[str, float] = field(default_factory=dict)
    llm_calls: int = 0
    description: str = ""
    by: By = "tool"
    on_failure: FailurePolicy | None = None
    """What a failed call of a task of this tool leads to, unless the task says
    (``None``: :data:`evolve.defaults.ON_FAILURE`); the search copies it into its plans."""
    retries: int | None = None
    """Further attempts after a failed first call, unless the task says (``None``:
    :data:`evolve.defaults.RETRIES`); the search copies it into its plans."""
    idempotency: str | None = None
    """The idempotency key template of this tool's writes (a business key such as
    ``refund:{order_id}``, see :mod:`evolve.model.keys`); ``None``: the default template."""
    writes: str | None = None
    """The object a write tool writes, a template over its inputs (``"order:$order_id"``): two
    tasks that may write the same object must be ordered by an edge (validator rule
    ``write-order``)."""
    params: Mapping[str, str] = field(default_factory=dict)
    """Parameter -> the fact it reads, for a tool whose callable names its parameters otherwise
    than the facts (``inputs: {text: logs}``; empty: each input is a parameter of its own name).
    Plans, the validator and the search see facts only; the callable is given its own names."""
    arguments: Mapping[str, Any] = field(default_factory=dict)
    """Literal arguments every call gets (an optional parameter a recorded session gave,
    ``lines: 500``); a task's own literal input of the same name wins."""

    def __hash__(self) -> int:
        return hash((self.name, self.duration, self.inputs, self.outputs, self.scope, self.risk))

    def call_arguments(self, bound: Mapping[str, Any]) -> dict[str, Any]:
        """What the tool's callable is given for a task whose inputs are ``bound`` (fact ->
        value, plus the task's literal inputs): its literal arguments, then each fact under the
        parameter name that reads it (a fact read by two parameters is given to both)."""
        if not self.params and not self.arguments:
            return dict(bound)
        out = dict(self.arguments)
        renamed = {fact for param, fact in self.params.items() if param != fact}
        out.update({key: value for key, value in bound.items() if key not in renamed})
        out.update({param: bound[fact] for param, fact in self.params.items() if fact in bound})
        return out


@dataclass(frozen=True)
class Limits:
    """Run limits; ``None`` means unlimited."""

    max_parallel: int | None = None
    max_tasks: int | None = None
    deadline_s: float | None = None
    """Seconds of wall clock a run of a plan may take (``evolve execute`` stops with the reason
    ``deadline``; whether waiting for people counts is the run's option)."""
    max_llm_calls: int | None = None
    """Model calls a run of a plan may make, its tools' ``llm_calls`` and the LLM replanner's
    together (reason ``llm_budget``)."""


@dataclass(frozen=True)
class Policy:
    """Rules the validator enforces on top of the data contracts."""

    write_requires_approval: bool = False
    require_evidence: bool = False
    """Every task must cite repository ``evidence`` and give a ``proof`` command (evidence plans)."""
    approval_required: tuple[tuple[str, str], ...] = ()
    """Thresholds: (write tool, condition over its bound inputs) pairs, e.g.
    ``("payments.issue_refund", "$decision.refund_inr > 1000")``: where the condition can hold
    the write needs an approval upstream (the validator), and the executor checks it again at
    dispatch with the actual values."""

    def threshold(self, tool: str) -> str | None:
        """The condition under which a call of ``tool`` needs an approval (``None``: none)."""
        return next((cond for name, cond in self.approval_required if name == tool), None)


@dataclass(frozen=True)
class Problem:
    """A planning problem. Build it with :func:`evolve.load_problem` or directly."""

    tools: Mapping[str, Tool]
    initial: tuple[str, ...] = ()
    criteria: tuple[str, ...] = ()
    scopes: tuple[str, ...] | None = None
    limits: Limits = Limits()
    resources: Mapping[str, float] = field(default_factory=dict)
    policy: Policy = Policy()
    template: object | None = None  # a Plan; typed loosely to avoid an import cycle
    name: str = "problem"
    objective: str = ""

    def __hash__(self) -> int:
        return hash((self.name, tuple(self.tools), self.initial, self.criteria))

    def with_catalog_failure(self, plan: Plan) -> Plan:
        """``plan`` with each task's unset ``on_failure`` and ``retries`` taken from its tool's
        catalog entry (what the executor runs: the catalog's are defaults, a task's own win)."""
        tasks = []
        for task in plan.tasks:
            tool = self.tools.get(task.tool)
            if tool is not None and ((task.on_failure is None and tool.on_failure is not None)
                                     or (task.retries is None and tool.retries is not None)):
                task = replace(task, on_failure=task.on_failure or tool.on_failure,
                               retries=tool.retries if task.retries is None else task.retries)
            tasks.append(task)
        return plan.with_tasks(tasks)

    def scope_granted(self, scope: str | None) -> bool:
        """A tool without a scope needs no grant; ``scopes: None`` grants everything."""
        return scope is None or self.scopes is None or scope in self.scopes

    def producers(self, fact: str) -> list[Tool]:
        """Tools whose outputs include ``fact``, in catalog order (a fresh list: callers may keep it)."""
        return list(self.derived(producer_index).get(fact, ()))

    def goal_unmet(self, plan: Plan) -> list[str]:
        """Why ``plan`` would not meet the goal beyond making every criterion (empty: nothing
        more to check). A catalog problem's goal is its criteria; a problem with a goal of its
        own (an HTN domain's) judges it here, apart from the code that built the plan."""
        return []

    def initial_set(self) -> frozenset[str]:
        """:attr:`initial` as a set, built once, so a membership test is not a scan of the tuple."""
        return self.derived(initial_facts)

    def derived(self, build: Callable[[Problem], T]) -> T:
        """``build(self)``, computed once per problem object and kept on it.

        Indexes (producers per fact, the compiled arrays) are pure functions of
        the problem, which nothing changes after it is built, so the first
        answer stays right. They live in the instance's ``__dict__`` under
        :data:`MEMO`, outside the dataclass fields: equality, hashing and
        ``repr`` ignore them, ``dataclasses.replace`` starts a new problem
        without them, and :meth:`__getstate__` leaves them out of pickles, so
        a problem pickles to the same bytes before and after it is used (the
        purity check of :func:`evolve.fitness.testing.check_fitness` compares
        exactly that) and each worker rebuilds what it needs. Keyed by the
        ``build`` function itself, so two modules can never collide on a name.
        """
        memo: dict[Callable[[Problem], Any], Any] | None = self.__dict__.get(MEMO)
        if memo is not None and build in memo:
            value: T = memo[build]
            return value
        with BUILDING:
            memo = self.__dict__.get(MEMO)
            if memo is None:
                memo = {}
                object.__setattr__(self, MEMO, memo)  # a cache, not a change: see the docstring
            if build not in memo:
                memo[build] = build(self)
            value = memo[build]
        return value

    def __getstate__(self) -> dict[str, Any]:
        """The fields only: derived indexes are rebuilt where they are needed (see :meth:`derived`)."""
        state = dict(self.__dict__)
        state.pop(MEMO, None)
        return state


def initial_facts(problem: Problem) -> frozenset[str]:
    """The facts known from the start, as a set (what :meth:`Problem.initial_set` keeps)."""
    return frozenset(problem.initial)


def producer_index(problem: Problem) -> dict[str, tuple[Tool, ...]]:
    """Each fact's producing tools, in catalog order: one pass over the catalog instead of one per
    question (a tool listing a fact twice is still listed once, as the scan found it once)."""
    index: dict[str, list[Tool]] = {}
    for tool in problem.tools.values():
        for fact in dict.fromkeys(tool.outputs):
            index.setdefault(fact, []).append(tool)
    return {fact: tuple(tools) for fact, tools in index.items()}
