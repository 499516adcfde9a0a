"""A plan as integer arrays over the compiled problem, for the compiled objectives.

Every name in a plan (task ids, tools, facts) is a string; kernels want
indices. Resolving names costs Python a few microseconds a task, which at a
few hundred tasks is more than everything else an evaluation does, so the work
is split by what it depends on:

* what depends on one task alone (its tool, the validator errors that concern
  it alone: unknown tool, scope, declared outputs, bound inputs, idempotency
  key, ``$fact`` not initial, depending on itself; the names it mentions) is a
  *task record*: a short run of int64 with every name replaced by a number.
  A record is kept on its task object (:data:`~evolve.model.plan.TASK_MEMO`):
  plans are immutable and a child shares all but a few task objects with its
  parent, so a search pays for a task once, not once per plan it appears in,
  and a record lives exactly as long as its task;
* what depends on the whole plan (which names are tasks of this plan, which
  references and dependencies dangle, which tasks repeat another) is resolved
  in :func:`decode_plan`, compiled, from the records laid end to end.

The numbers come from a :class:`Numbering`; a problem keeps one (see
:meth:`~evolve.model.problem.Problem.derived`) and starts a fresh one, with a
new token, once it has numbered :data:`MAX_NUMBERS` names and unknown facts,
so memory stays bounded on long runs; records made under an older numbering
no longer match its token and are rebuilt when next needed. A compile takes
the current numbering once and uses only it, so a renewal by another thread
never mixes two numberings in one plan.

Tasks are numbered by position. A plan whose ids repeat is reported as such
(``repeated``): which of the same-named tasks a dependency means is a question
only the plain-Python rules answer, and the search almost never makes such plans.
"""

from __future__ import annotations

import itertools
from array import array
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit

from evolve.model.compiled import RISK_CODES, BoolArray, CompiledProblem, IntArray, compile_problem
from evolve.model.coverage import DuplicateKey, duplicate_key
from evolve.model.graph_kernels import topological_order, transpose
from evolve.model.keys import unknown_fields
from evolve.model.plan import TASK_MEMO, Plan, Task, parse_ref
from evolve.model.problem import Policy, Problem, Tool
from evolve.model.validate import (
    approval_rule,
    check_conditions,
    check_limits,
    check_template,
    check_write_order,
    missing_evidence,
)

MAX_NUMBERS = 1 << 16
"""Names (task ids) and facts outside the catalog a numbering holds before a fresh one replaces it."""

TOKENS = itertools.count()
"""Tokens of numberings: unique in the process, so a record from another numbering never matches."""

ToolEntry = tuple[int, bool, tuple[str, ...], frozenset[str], tuple[str, ...], bool, Tool]
"""What a task record needs of a tool: its index, whether its scope is granted, its inputs,
its outputs as a set and as a tuple, whether it writes, and the tool."""

# Layout of a task record (all int64): the fixed head, then three counted lists.
TOKEN, ID, TOOL, ERRORS, INTACT, KEY, GATED = range(7)
HEAD = 7
"""``[token, id, tool, errors, intact, key, gated, n_deps, deps..., n_refs, (task, fact, in_deps)...,
n_made, made...]``: ``token`` is the numbering's (the record is only valid in it); ``tool`` is -1
when unknown; ``errors`` counts the validator errors of the task alone;
``intact`` is 1 when its deps hold no repeat and not itself; ``key`` is a non-negative hash of
what :func:`evolve.model.coverage.duplicates` compares (equal keys, equal hashes; the rare equal
hash of unequal keys is sorted out in :func:`plan_arrays`); ``gated`` is 1 when the task needs
an approval upstream (:func:`~evolve.model.validate.approval_rule`); the refs are those to tasks;
``made`` are the facts it produces (none for an unknown tool)."""

HASH_BITS = (1 << 63) - 1
"""Keeps a key's hash non-negative (the kernel's tables mark empty slots with -1)."""

MISSING: Any = object()
"""Stands for an unbound input (``Mapping.get`` default), never equal to a bound value."""



@dataclass(frozen=True)
class ProblemParts:
    """What task records read of a problem: not the problem itself (see :class:`PlanTables`)."""

    tools: Mapping[str, Tool]
    initial: frozenset[str]
    policy: Policy


class Numbering:
    """Numbers for names (task ids) and facts, and the task records built with them.

    Catalog facts keep their :class:`CompiledProblem` index; any other fact a plan
    mentions is numbered after them, so an index below ``len(compiled.facts)``
    is always a catalog fact.
    """

    def __init__(self, problem: ProblemParts, compiled: CompiledProblem) -> None:
        self.token = next(TOKENS)
        self.prefix = array("q", [self.token]).tobytes()
        """How every record of this numbering starts."""
        self.names: dict[str, int] = {}
        self.facts: dict[str, int] = compiled.fact_id
        self.catalog = len(self.facts)
        self.tools: dict[str, ToolEntry] = {
            name: (t, bool(compiled.granted[t]), tool.inputs, frozenset(tool.outputs), tool.outputs,
                   int(compiled.risk[t]) == RISK_CODES["write"], tool)
            for t, (name, tool) in enumerate(problem.tools.items())
        }
        self.initial = problem.initial
        self.require_evidence = problem.policy.require_evidence
        self.policy = problem.policy

    @property
    def size(self) -> int:
        """How much it has numbered beyond the catalog (what :data:`MAX_NUMBERS` bounds)."""
        return len(self.names) + len(self.facts) - self.catalog

    def record(self, task: Task) -> bytes:
        """The task's record, built on first sight of this task object under this numbering and
        kept on it (:data:`~evolve.model.plan.TASK_MEMO`). A record is one ``bytes``, its
        numbering's token first: a cache of objects the garbage collector need not track."""
        held: bytes | None = task.__dict__.get(TASK_MEMO)
        if held is not None and held.startswith(self.prefix):
            return held
        record = self.build(task)
        object.__setattr__(task, TASK_MEMO, record)  # a cache, not a change: see TASK_MEMO
        return record

    def build(self, task: Task) -> bytes:
        """The rules of :func:`evolve.model.validate.check_task` that need no other task, counted;
        what needs the others (the referenced task exists, is a dep, outputs the fact) is left
        to :func:`decode_plan`, with ``in_deps`` precomputed."""
        names, facts = self.names, self.facts
        errors = 0
        deps = task.deps
        if task.id in deps:
            errors += 1  # no-cycle: depends on itself
        intact = task.id not in deps and len(set(deps)) == len(deps)
        entry = self.tools.get(task.tool)
        inputs = task.inputs
        made: tuple[str, ...] = ()
        gated = False
        if entry is None:
            errors += 1  # tool-registered
            tool = -1
        else:
            tool, granted, tool_inputs, outset, outputs, writes, spec = entry
            if not granted:
                errors += 1  # scope-granted
            for out in task.outputs:
                if out not in outset:
                    errors += 1  # output-declared
            for fact in tool_inputs:
                value = inputs.get(fact, MISSING)
                if value is MISSING:
                    errors += 1  # input-bound: not bound
                    continue
                ref = parse_ref(value)
                if ref is None or ref.fact != fact:
                    errors += 1  # input-bound: bound to something else
            if writes:
                if not task.idempotency_key or unknown_fields(task.idempotency_key, spec):
                    errors += 1  # idempotency-key
                gated = approval_rule(self.policy, spec, inputs) is not None
            made = task.outputs or outputs
        if task.when is not None or task.assumes:
            errors += len(check_conditions(task))  # expression
        if self.require_evidence:
            errors += len(missing_evidence(task))  # evidence, proof
        refs: list[int] = []
        for ref in task.refs():
            if ref.task is None:
                if ref.fact not in self.initial:
                    errors += 1  # ref-initial
                continue
            refs += (names.setdefault(ref.task, len(names)), facts.setdefault(ref.fact, len(facts)),
                     ref.task in deps)
        key = hash(duplicate_key(task)) & HASH_BITS
        record = [self.token, names.setdefault(task.id, len(names)), tool, errors, intact, key,
                  int(gated), len(deps)]
        record += [names.setdefault(d, len(names)) for d in deps]
        record.append(len(refs) // 3)
        record += refs
        record.append(len(made))
        record += [facts.setdefault(f, len(facts)) for f in made]
        return array("q", record).tobytes()


class PlanTables:
    """What a problem keeps for compiling plans: its compiled arrays and the current numbering
    (built by ``problem.derived(PlanTables)``, once per problem object)."""

    def __init__(self, problem: Problem) -> None:
        # Not the problem itself: the problem holds these tables, and a cycle would keep a
        # problem alive until the garbage collector's next full pass.
        self.tools = problem.tools
        self.initial = problem.initial_set()
        self.compiled = problem.derived(compile_problem)
        self.require_evidence = problem.policy.require_evidence
        self.problem_parts = ProblemParts(problem.tools, self.initial, problem.policy)
        self.numbering = Numbering(self.problem_parts, self.compiled)
        self.named_writes = any(tool.risk == "write" and tool.writes is not None
                                for tool in problem.tools.values())
        """Whether two writes can name one object (rule ``write-order``, checked in Python)."""
        self.float_costs = all(type(tool.cost) is float for tool in problem.tools.values())
        """Whether every cost is a ``float``: from Python 3.12 on, ``sum`` compensates float
        terms only, so a sum mixing ints is only reproduced by the plain-Python definition."""

    def current(self) -> Numbering:
        """The numbering to compile the next plan with, renewed when it has grown too big."""
        numbering = self.numbering
        if numbering.size >= MAX_NUMBERS:
            numbering = self.numbering = Numbering(self.problem_parts, self.compiled)
        return numbering


@dataclass(frozen=True, eq=False)
class CompiledPlan:
    """A plan as :func:`decode_plan` takes it: its task records end to end, and what is plan-wide.

    ``priority`` numbers the names of the plan's priority (-1: a name no task of
    this numbering has, hence not a task of the plan). ``template`` holds the positions
    of template tasks present in the plan and ``template_bad`` those of the tasks a
    plan-wide rule checked in Python faults (template, ``write-order``); ``errors``
    counts the plan-wide errors found in Python (``max_tasks``, template, ``write-order``).
    """

    records: IntArray
    count: int
    priority: IntArray
    template: IntArray
    template_bad: IntArray
    errors: int


NO_POSITIONS = np.zeros(0, dtype=np.int64)


def compile_plan(problem: Problem, plan: Plan) -> CompiledPlan:
    """``plan``'s records and plan-wide parts under ``problem``; see the module's docstring.

    The template rule needs tasks by id, so it is checked here, with the
    validator's own :func:`~evolve.model.validate.check_template`, only for a
    problem that has a template; so is ``write-order``
    (:func:`~evolve.model.validate.check_write_order`), only for a problem whose writes name
    what they write.
    """
    numbering = problem.derived(PlanTables).current()
    prefix = numbering.prefix
    tasks = plan.tasks
    # Numbering.record, inlined for the hit: at a few hundred tasks a call per task would cost
    # as much as the whole kernel.
    records = [held if (held := task.__dict__.get(TASK_MEMO)) is not None and held.startswith(prefix)
               else numbering.record(task) for task in tasks]
    names = numbering.names
    priority = NO_POSITIONS if plan.priority is None else np.array(
        [names.get(tid, -1) for tid in plan.priority], dtype=np.int64)
    errors = sum(1 for _ in check_limits(problem, plan))
    template, template_bad = NO_POSITIONS, NO_POSITIONS
    templated = isinstance(problem.template, Plan)
    ordered = problem.derived(PlanTables).named_writes
    if templated or ordered:
        position = {task.id: i for i, task in enumerate(tasks)}
        by_id = {task.id: task for task in tasks}
        faulted = []
        found = [*(check_template(problem, by_id) if templated else ()),
                 *(check_write_order(problem, plan, by_id) if ordered and len(by_id) == len(tasks)
                   else ())]  # repeated ids: the whole plan is left to Python
        for error in found:
            errors += 1
            if error.task in position:
                faulted.append(position[error.task])
        if isinstance(problem.template, Plan):
            template = np.array([position[t.id] for t in problem.template.tasks if t.id in position],
                                dtype=np.int64)
        template_bad = np.array(faulted, dtype=np.int64)
    return CompiledPlan(records=np.frombuffer(b"".join(records), dtype=np.int64), count=len(tasks),
                        priority=priority, template=template, template_bad=template_bad,
                        errors=errors)


@njit(cache=True, nogil=True)  # type: ignore[misc]
def _table(size: int) -> IntArray:
    """An empty open-addressing table (a power of two, at least twice ``size``) of int keys."""
    capacity = 2
    while capacity < 2 * size + 1:
        capacity *= 2
    return np.full(capacity, -1, dtype=np.int64)


@njit(cache=True, nogil=True)  # type: ignore[misc]
def _slot(keys: IntArray, key: int) -> int:
    """Where ``key`` is in ``keys``, or the empty slot where it would go (keys are >= 0)."""
    mask = keys.shape[0] - 1
    h = (key * 2654435761) & mask
    while keys[h] != -1 and keys[h] != key:
        h = (h + 1) & mask
    return int(h)


@njit(cache=True, nogil=True)  # type: ignore[misc]
def decode_plan(records: IntArray, n: int, priority: IntArray, template_bad: IntArray
                ) -> tuple[bool, int, IntArray, IntArray, IntArray, IntArray, IntArray, IntArray,
                           IntArray, BoolArray, BoolArray, BoolArray, IntArray, IntArray, IntArray,
                           IntArray, BoolArray]:
    """The plan's arrays from its records, tasks numbered by position:
    ``(repeated, errors, tool, dep_ptr, dep_idx, read_ptr, read_idx, made_ptr, made_idx, bad,
    intact, duplicate, rank, succ_ptr, succ_idx, order, gated)``: ``succ_ptr, succ_idx, order``
    are the successors in plan order (repeats kept) and Kahn's order, FIFO and stable in plan
    order, with the tasks on or behind a cycle left out, exactly
    :func:`evolve.model.graph.topological_order`, computed once per plan, here, for every kernel
    that walks the graph in order (the compiled figures and the compiled makespan).

    ``repeated`` is true when two tasks share an id (then nothing else is
    meaningful). ``deps`` holds each task's dependencies that exist and are not
    itself, in order with repeats (what :meth:`Plan.dependency_map` gives);
    ``reads`` the existing tasks it references; ``made`` the facts it produces.
    ``bad`` marks tasks with a validator error of their own, ``intact`` those
    whose deps all exist, none twice and none itself, ``duplicate`` those that
    repeat an earlier task. ``errors`` counts every validator error these
    reveal: the records' own, dangling deps and references, references to a
    task that is no dep or does not output the fact, priority names that are no
    task; what needs the graph (a cycle, unapproved writes) is not counted here. ``rank`` is
    each task's place in the priority (the last one when its id repeats there, as
    :func:`evolve.scheduling.base.priority_positions` has it), -1 for a task it does not name.
    ``gated`` marks the tasks that need an approval upstream.
    """
    start = np.empty(n + 1, dtype=np.int64)
    at = 0
    for i in range(n):
        start[i] = at
        at += HEAD
        at += 1 + records[at]
        at += 1 + 3 * records[at]
        at += 1 + records[at]
    start[n] = at

    tool = np.empty(n, dtype=np.int64)
    bad = np.zeros(n, dtype=np.bool_)
    intact = np.zeros(n, dtype=np.bool_)
    duplicate = np.zeros(n, dtype=np.bool_)
    gated = np.zeros(n, dtype=np.bool_)
    empty = np.zeros(0, dtype=np.int64)
    rank = np.full(n, -1, dtype=np.int64)
    keys = _table(n)
    where = np.empty(keys.shape[0], dtype=np.int64)
    for i in range(n):
        s = _slot(keys, records[start[i] + ID])
        if keys[s] != -1:
            return (True, 0, tool, empty, empty, empty, empty, empty, empty, bad, intact, duplicate,
                    rank, empty, empty, empty, gated)
        keys[s] = records[start[i] + ID]
        where[s] = i

    errors = 0
    seen = _table(n)
    total = records.shape[0]
    dep_ptr = np.zeros(n + 1, dtype=np.int64)
    dep_idx = np.empty(total, dtype=np.int64)
    read_ptr = np.zeros(n + 1, dtype=np.int64)
    read_idx = np.empty(total, dtype=np.int64)
    made_ptr = np.zeros(n + 1, dtype=np.int64)
    made_idx = np.empty(total, dtype=np.int64)
    deps_n = 0
    reads_n = 0
    made_n = 0
    for i in range(n):
        r = start[i]
        tool[i] = records[r + TOOL]
        gated[i] = records[r + GATED] == 1
        own = records[r + ERRORS]
        whole = records[r + INTACT] == 1
        k = _slot(seen, records[r + KEY])
        if seen[k] == -1:
            seen[k] = records[r + KEY]
        else:
            duplicate[i] = True
        at = r + HEAD
        for q in range(at + 1, at + 1 + records[at]):
            s = _slot(keys, records[q])
            if keys[s] == -1:
                own += 1  # dep-exists
                whole = False
            elif where[s] != i:
                dep_idx[deps_n] = where[s]
                deps_n += 1
        dep_ptr[i + 1] = deps_n
        at += 1 + records[at]
        for q in range(at + 1, at + 1 + 3 * records[at], 3):
            s = _slot(keys, records[q])
            if keys[s] == -1:
                own += 1  # ref-task
                continue
            j = where[s]
            read_idx[reads_n] = j
            reads_n += 1
            if records[q + 2] == 0:
                own += 1  # ref-dep
            source = start[j] + HEAD
            source += 1 + records[source]
            source += 1 + 3 * records[source]
            if records[start[j] + TOOL] >= 0:
                found = False
                for p in range(source + 1, source + 1 + records[source]):
                    if records[p] == records[q + 1]:
                        found = True
                        break
                if not found:
                    own += 1  # ref-output
        read_ptr[i + 1] = reads_n
        at += 1 + 3 * records[at]
        for q in range(at + 1, at + 1 + records[at]):
            made_idx[made_n] = records[q]
            made_n += 1
        made_ptr[i + 1] = made_n
        intact[i] = whole
        bad[i] = own > 0
        errors += own
    for v in template_bad:
        bad[v] = True
    for k in range(priority.shape[0]):
        name = priority[k]
        s = _slot(keys, name) if name >= 0 else 0
        if name < 0 or keys[s] == -1:
            errors += 1  # priority
        else:
            rank[where[s]] = k
    succ_ptr, succ_idx = transpose(dep_ptr, dep_idx, n)
    order = topological_order(dep_ptr, succ_ptr, succ_idx)
    return (False, errors, tool, dep_ptr, dep_idx[:deps_n], read_ptr, read_idx[:reads_n],
            made_ptr, made_idx[:made_n], bad, intact, duplicate, rank, succ_ptr, succ_idx, order, gated)


@dataclass(frozen=True, eq=False)
class PlanArrays:
    """The decoded arrays of one plan (see :func:`decode_plan`), for Python callers and tests."""

    errors: int
    tool: IntArray
    dep_ptr: IntArray
    dep_idx: IntArray
    read_ptr: IntArray
    read_idx: IntArray
    made_ptr: IntArray
    made_idx: IntArray
    bad: BoolArray
    intact: BoolArray
    duplicate: BoolArray
    template: IntArray
    rank: IntArray
    """Each task's place in the plan's priority, -1 where it names none (see :func:`decode_plan`)."""
    succ_ptr: IntArray
    succ_idx: IntArray
    order: IntArray
    """The tasks not on or behind a cycle, in Kahn's order (see :func:`decode_plan`)."""
    gated: BoolArray
    """The tasks that need an approval upstream (:func:`~evolve.model.validate.approval_rule`)."""
    ranked: int
    """How many distinct ids the priority names (tasks of the plan or not): the place every
    task it does not name shares, as in :func:`evolve.scheduling.base.priority_positions`."""


def plan_arrays(problem: Problem, plan: Plan) -> PlanArrays | None:
    """``plan`` decoded, or ``None`` when its task ids repeat; ``errors`` includes the plan-wide
    errors found in Python.

    The kernel tells duplicates by the hash of their keys; when it finds any, the
    keys themselves decide (as :func:`evolve.model.coverage.duplicates` does), so
    a collision of hashes can never make a task a duplicate.
    """
    compiled = compile_plan(problem, plan)
    (repeated, errors, tool, dep_ptr, dep_idx, read_ptr, read_idx, made_ptr, made_idx, bad, intact,
     duplicate, rank, succ_ptr, succ_idx, order, gated) = decode_plan(
        compiled.records, compiled.count, compiled.priority, compiled.template_bad)
    if repeated:
        return None
    if duplicate.any():
        seen: set[DuplicateKey] = set()
        for i, task in enumerate(plan.tasks):
            key = duplicate_key(task)
            duplicate[i] = key in seen
            seen.add(key)
    return PlanArrays(errors=int(errors) + compiled.errors, tool=tool, dep_ptr=dep_ptr,
                      dep_idx=dep_idx, read_ptr=read_ptr, read_idx=read_idx, made_ptr=made_ptr,
                      made_idx=made_idx, bad=bad, intact=intact, duplicate=duplicate,
                      template=compiled.template, rank=rank, succ_ptr=succ_ptr,
                      succ_idx=succ_idx, order=order, gated=gated,
                      ranked=0 if plan.priority is None else len(set(plan.priority)))
