"""Random structural operators: the offline default way to make children.

Each mutation is a plain function ``(problem, plan, rng) -> Plan | None`` that
returns ``None`` when it does not apply to this parent; each crossover takes two
parents. They keep plans well-formed where they can (new tasks read only what
exists upstream, removals rewire their readers), but they do not have to be
perfect: the validator and the ranking are the judges.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

import numpy as np

from evolve import defaults
from evolve.model.coverage import contributing_tasks, data_sources, duplicates
from evolve.model.graph import successors, topological_order, upstream
from evolve.model.keys import write_key
from evolve.model.patch import renamed
from evolve.model.plan import Plan, Task, highest_task_number, parse_ref, task_refs_deps
from evolve.model.problem import Problem
from evolve.model.validate import approval_rule, produced_by
from evolve.search.chaining import Builder, construct

Mutation = Callable[[Problem, Plan, np.random.Generator], "Plan | None"]
Crossover = Callable[[Problem, Plan, Plan, np.random.Generator], "Plan | None"]


def template_ids(problem: Problem) -> set[str]:
    return {t.id for t in problem.template.tasks} if isinstance(problem.template, Plan) else set()


def descendants(plan: Plan | Sequence[Task], tid: str) -> set[str]:
    """Tasks downstream of ``tid`` (which may not feed it without closing a cycle): its
    :func:`~evolve.model.graph.upstream` in the plan's :func:`successor_map` (a caller asking of
    many tasks of one plan makes the map once and asks ``upstream`` itself)."""
    return upstream(tid, successor_map(plan))


def successor_map(plan: Plan | Sequence[Task]) -> dict[str, list[str]]:
    """Each task's direct successors (the tasks that name it among their deps)."""
    tasks = plan.tasks if isinstance(plan, Plan) else plan
    return successors({t.id: list(t.deps) for t in tasks})


def downstream_test(plan: Plan) -> Callable[[str, str], bool]:
    """``below(root, other)``: whether ``other`` is ``root`` or one of its :func:`descendants`.

    For an acyclic plan every task's descendants are one bitset, built in a single pass in
    reverse topological order (``n`` big-integer ors instead of a graph walk per task, which
    made asking it of every task quadratic); a plan with a cycle walks the graph per root."""
    deps = {t.id: list(t.deps) for t in plan.tasks}
    order = topological_order(deps)
    if len(order) < len(deps):
        walked: dict[str, set[str]] = {}

        def walk(root: str, other: str) -> bool:
            if root not in walked:
                walked[root] = descendants(plan, root) | {root}
            return other in walked[root]
        return walk
    bit = {tid: 1 << i for i, tid in enumerate(deps)}
    succ = successors(deps)
    below: dict[str, int] = {}
    for tid in reversed(order):
        acc = bit[tid]
        for nxt in succ[tid]:
            acc |= below[nxt]
        below[tid] = acc

    def test(root: str, other: str) -> bool:
        return other == root or bool(below[root] & bit[other])
    return test


def pick(rng: np.random.Generator, items: Sequence[str]) -> str:
    return items[int(rng.integers(len(items)))]


def with_data_deps(task: Task, old: Task) -> Task:
    """``task`` with deps = the tasks it reads, plus ``old``'s deps that carried no data."""
    carried = set(data_sources(old))
    kept = [d for d in old.deps if d not in carried]
    reads = task_refs_deps(task.inputs, task.when, task.assumes)
    return replace(task, deps=tuple(dict.fromkeys([*reads, *kept])))


def add_task(problem: Problem, plan: Plan, rng: np.random.Generator) -> Plan | None:
    """Add one task whose inputs are all available (initial facts or outputs already in the plan)."""
    builder = Builder(problem, plan, rng)
    available = builder.available()
    ready = next((t for t in builder.usable_tools(problem.tools.values())
                  if available.issuperset(t.inputs)), None)
    if ready is None:
        return None
    return builder.plan() if builder.add(ready) is not None else None


def remove_task(problem: Problem, plan: Plan, rng: np.random.Generator) -> Plan | None:
    """Remove one task and rewire its readers to another producer of what they read, if any."""
    candidates = [t.id for t in plan.tasks if t.id not in template_ids(problem)]
    if not candidates:
        return None
    return without(problem, plan, {pick(rng, candidates)}, rng)


def without(problem: Problem, plan: Plan, removed: set[str], rng: np.random.Generator) -> Plan:
    """``plan`` minus ``removed``; readers of removed outputs are rebound where possible."""
    kept = Plan(tasks=tuple(t for t in plan.tasks if t.id not in removed), priority=plan.priority)
    builder = Builder(problem, kept, rng)
    # the builder only appends tasks (which read existing ones), so the successor map is made
    # once and kept up to date edge by edge rather than rebuilt for every rewired task
    succ = successor_map(builder.tasks)
    position = {t.id: i for i, t in enumerate(builder.tasks)}
    for task in kept.tasks:
        if not any(d in removed for d in task.deps):
            continue
        builder.excluded = {task.id} | upstream(task.id, succ)
        size = len(builder.tasks)
        inputs = dict(task.inputs)
        for key, value in task.inputs.items():
            ref = parse_ref(value)
            if ref is not None and ref.task in removed:
                inputs[key] = builder.provide(ref.fact) or value
        new = replace(task, inputs=inputs, deps=tuple(d for d in task.deps if d not in removed))
        rebuilt = with_data_deps(new, new)
        builder.tasks[position[task.id]] = rebuilt
        for added in builder.tasks[size:]:
            succ[added.id] = []
            link(succ, added)
        for dep in task.deps:
            if dep in succ and task.id in succ[dep]:
                succ[dep].remove(task.id)
        link(succ, rebuilt)
    return builder.plan()


def link(succ: dict[str, list[str]], task: Task) -> None:
    """Add ``task``'s incoming edges to a successor map (edges from unknown tasks ignored, as
    :func:`~evolve.model.graph.successors` does)."""
    for dep in task.deps:
        if dep in succ:
            succ[dep].append(task.id)


def swap_tool(problem: Problem, plan: Plan, rng: np.random.Generator) -> Plan | None:
    """Run one task with another tool that makes the same facts, chaining its inputs anew.

    Any tool that makes them will do, whatever its risk (a new write gets an idempotency key
    and, under the policy, an approval upstream), except that an approval is only replaced by
    another approval, since the writes downstream rely on it.
    """
    fixed = template_ids(problem)
    order = [int(i) for i in rng.permutation(len(plan.tasks))]
    succ: dict[str, list[str]] | None = None  # the plan's, made once for every task tried
    for i in order:
        task = plan.tasks[i]
        current = problem.tools.get(task.tool)
        if task.id in fixed or current is None:
            continue
        needed = set(produced_by(problem, task) or ()) & read_facts(problem, plan, task.id)
        # the makers of one needed fact, in catalog order, hold every tool that makes them all
        makers = problem.producers(min(needed)) if needed else problem.tools.values()
        options = [
            t for t in makers
            if t.name != task.tool and needed <= set(t.outputs)
            and (current.risk != "approval" or t.risk == "approval")
        ]
        if not options:
            continue
        succ = succ if succ is not None else successor_map(plan)
        builder = Builder(problem, plan, rng, excluded={task.id} | upstream(task.id, succ))
        for tool in builder.usable_tools(options):
            inputs = {}
            for fact in tool.inputs:
                ref = builder.provide(fact)
                if ref is None:
                    break
                inputs[fact] = ref
            else:
                extra = {k: v for k, v in task.inputs.items() if k not in current.inputs}
                new = replace(task, tool=tool.name, inputs={**extra, **inputs},
                              outputs=tuple(o for o in task.outputs if o in tool.outputs))
                new = with_data_deps(new, task)
                if (task.on_failure, task.retries) == (current.on_failure, current.retries):
                    new = replace(new, on_failure=tool.on_failure, retries=tool.retries)  # the catalog's
                if tool.risk == "write":
                    gated = approval_rule(problem.policy, tool, new.inputs) is not None
                    approval = builder.approval(frozenset()) if gated else None
                    if gated and approval is None:
                        continue
                    new = replace(new, idempotency_key=new.idempotency_key or write_key(tool),
                                  deps=tuple(dict.fromkeys([*new.deps, *([approval] if approval else [])])))
                builder.tasks[builder.tasks.index(task)] = new
                return builder.plan()
    return None


def read_facts(problem: Problem, plan: Plan, tid: str) -> set[str]:
    """Facts of task ``tid`` that matter: read by other tasks, or criteria."""
    facts = set(problem.criteria)
    for task in plan.tasks:
        for value in task.inputs.values():
            ref = parse_ref(value)
            if ref is not None and ref.task == tid:
                facts.add(ref.fact)
    return facts


def rewire(problem: Problem, plan: Plan, rng: np.random.Generator) -> Plan | None:
    """Rebind one input to another producer of the same fact (never a descendant)."""
    options = []
    makers: dict[str, list[str]] = {}  # per fact, the tasks making it, in plan order
    for t in plan.tasks:
        for fact in dict.fromkeys(produced_by(problem, t) or ()):
            makers.setdefault(fact, []).append(t.id)
    below = downstream_test(plan)
    for i, task in enumerate(plan.tasks):
        for key, value in task.inputs.items():
            ref = parse_ref(value)
            if ref is None:
                continue
            refs = [f"${ref.fact}"] if ref.fact in problem.initial else []
            refs += [f"${tid}.{ref.fact}" for tid in makers.get(ref.fact, ())
                     if not below(task.id, tid)]
            options += [(i, key, r) for r in refs if r != value]
    if not options:
        return None
    i, key, ref_text = options[int(rng.integers(len(options)))]
    task = plan.tasks[i]
    new = replace(task, inputs={**task.inputs, key: ref_text})
    tasks = list(plan.tasks)
    tasks[i] = with_data_deps(new, task)
    return plan.with_tasks(tasks)


def add_dep(problem: Problem, plan: Plan, rng: np.random.Generator) -> Plan | None:
    """Make one task wait for another that it does not already follow (no cycle is created)."""
    if len(plan.tasks) < 2:
        return None
    i = int(rng.integers(len(plan.tasks)))
    task = plan.tasks[i]
    below = descendants(plan, task.id) | {task.id} | set(task.deps)
    options = [t.id for t in plan.tasks if t.id not in below]
    if not options:
        return None
    tasks = list(plan.tasks)
    tasks[i] = replace(task, deps=(*task.deps, pick(rng, options)))
    return plan.with_tasks(tasks)


def remove_dep(problem: Problem, plan: Plan, rng: np.random.Generator) -> Plan | None:
    """Drop one dependency that carries no data (it only serialises the plan)."""
    fixed = {(t.id, d) for t in (problem.template.tasks if isinstance(problem.template, Plan) else ())
             for d in t.deps}
    by_id = plan.by_id()
    options = [
        (i, d) for i, t in enumerate(plan.tasks)
        for d in t.deps
        if d not in data_sources(t) and (t.id, d) not in fixed and not approval_link(problem, t, by_id.get(d))
    ]
    if not options:
        return None
    i, dep = options[int(rng.integers(len(options)))]
    tasks = list(plan.tasks)
    tasks[i] = replace(tasks[i], deps=tuple(d for d in tasks[i].deps if d != dep))
    return plan.with_tasks(tasks)


def approval_link(problem: Problem, task: Task, dep: Task | None) -> bool:
    """Whether ``dep`` is the approval a write ``task`` needs under the run's policy."""
    if dep is None:
        return False
    tool, dep_tool = problem.tools.get(task.tool), problem.tools.get(dep.tool)
    return (tool is not None and dep_tool is not None and dep_tool.risk == "approval"
            and approval_rule(problem.policy, tool, task.inputs) is not None)


def reorder_priority(problem: Problem, plan: Plan, rng: np.random.Generator) -> Plan | None:
    """Move one task to another place in the scheduling priority (an activity list)."""
    if len(plan.tasks) < 2:
        return None
    current = list(plan.priority) if plan.priority is not None else topological_order(
        {t.id: list(t.deps) for t in plan.tasks})
    listed = set(current)
    current += [t.id for t in plan.tasks if t.id not in listed]
    moved = current.pop(int(rng.integers(len(current))))
    current.insert(int(rng.integers(len(current) + 1)), moved)
    return Plan(tasks=plan.tasks, priority=tuple(current))


def prune(problem: Problem, plan: Plan, rng: np.random.Generator) -> Plan | None:
    """Remove every task that serves no criterion."""
    serving = contributing_tasks(problem, plan) | template_ids(problem)
    useless = {t.id for t in plan.tasks if t.id not in serving}
    return without(problem, plan, useless, rng) if useless else None


def merge_duplicates(problem: Problem, plan: Plan, rng: np.random.Generator) -> Plan | None:
    """Point the readers of a task that repeats an earlier one at the original, then drop it."""
    copies = duplicates(plan)
    fixed = template_ids(problem)
    succ = successor_map(plan) if copies else {}
    for copy, original in copies.items():
        if copy in fixed:
            continue
        readers = upstream(copy, succ)
        if original in readers or original in set().union(*(upstream(r, succ) for r in readers)):
            continue
        mapping = {copy: original}
        tasks = [
            with_data_deps(renamed(t, mapping), t) if t.id in readers else t
            for t in plan.tasks if t.id != copy
        ]
        return plan.with_tasks(tasks)
    return None


def complete(problem: Problem, plan: Plan, rng: np.random.Generator) -> Plan | None:
    """Chain producers for every criterion the plan does not yet make."""
    child = construct(problem, rng, base=plan)
    return child if len(child.tasks) != len(plan.tasks) else None


def crossover(problem: Problem, a: Plan, b: Plan, rng: np.random.Generator) -> Plan | None:
    """Per criterion, inherit the sub-plan that makes it from one parent or the other.

    Tasks taken from ``b`` are renamed when their id is used in the child for
    something else, with every reference rewritten, so the halves stay wired.
    """
    if not problem.criteria:
        return None
    take_b = rng.random(len(problem.criteria)) < 0.5
    in_a = a.by_id()
    child: dict[str, Task] = {t.id: t for t in a.tasks if t.id in template_ids(problem)}
    mapping: dict[str, str] = {}
    # Every id the child can hold is one of a's or a fresh one, and each fresh id is the next
    # above all of them: a counter gives the ids a rescan of a, the child and the mapping would.
    highest = highest_task_number(a.tasks)
    # each parent's graph and first producer of each fact, read once, not once per criterion
    graphs = {id(parent): (parent.dependency_map(), first_producers(problem, parent)) for parent in (a, b)}
    # what each parent has given so far is closed under "depends on", so a criterion's sub-plan
    # is only walked beyond it (the rest was taken, and taking it again changes nothing)
    taken_a: set[str] = set()
    for criterion, from_b in zip(problem.criteria, take_b):
        parent = b if from_b else a
        deps, first = graphs[id(parent)]
        producer = first.get(criterion)
        given: Collection[str] = taken_a if parent is a else mapping.keys()
        if producer is None or producer in given:
            continue
        wanted = {producer} | upstream(producer, deps, given)
        closure = [t for t in parent.tasks if t.id in wanted]
        if parent is a:
            taken_a |= wanted
            for task in closure:
                child.setdefault(task.id, task)
            continue
        for task in closure:  # none of it is mapped yet: the walk stopped at what is
            if in_a.get(task.id) == task:
                mapping[task.id] = task.id
            else:
                highest += 1
                mapping[task.id] = f"t{highest}"
        moved = {old: new for old, new in mapping.items() if old != new}
        for task in closure:
            child[mapping[task.id]] = renamed(task, moved) if names_any(task, moved) else task
    # a's tasks keep a's order and the rest follow, so the recorded patch rebuilds this child exactly
    tasks = [child[t.id] for t in a.tasks if t.id in child]
    tasks += [t for tid, t in child.items() if tid not in in_a]
    plan = Plan(tasks=tuple(tasks), priority=a.priority)
    return plan.with_tasks(plan.tasks)


def names_any(task: Task, ids: Mapping[str, str]) -> bool:
    """Whether ``task`` is, depends on or reads one of ``ids`` (else renaming them leaves it
    equal, and the task itself, with its memoized text, is kept)."""
    if not ids:
        return False
    if task.id in ids or task.when or task.assumes or any(d in ids for d in task.deps):
        return True
    for value in task.inputs.values():
        if isinstance(value, str) and value.startswith("$") and value[1:].partition(".")[0] in ids:
            return True
    return False


def first_producers(problem: Problem, plan: Plan) -> dict[str, str]:
    """Each fact the plan makes, mapped to the first task (in plan order) that makes it."""
    first: dict[str, str] = {}
    for task in plan.tasks:
        for fact in produced_by(problem, task) or ():
            first.setdefault(fact, task.id)
    return first


Initializer = Callable[[Problem, np.random.Generator], Plan]
Improver = Callable[[Problem, Plan, np.random.Generator], "Plan | None"]
Warmer = Callable[[Problem], "Plan | None"]
Kind = Callable[[Problem, "Plan | None", np.random.Generator], str]


Marked = TypeVar("Marked", bound=Callable[..., object])


def thread_safe(fn: Marked) -> Marked:
    """Mark an initializer or improver as safe to run side by side in threads of one process:
    it shares no mutable state and spends its time in compiled kernels that release the GIL
    (the tool-choice search), so threads spread it over the cores without the start, imports
    and shipping a worker process costs. Plain-Python operators gain nothing from threads and
    may not be safe in them, so nothing is marked by default."""
    fn.thread_safe = True  # type: ignore[attr-defined]
    return fn


def runs_in_threads(initial: Initializer, improve: Improver | None) -> bool:
    """Whether an initializer and an improver (if any) may run side by side in threads: both
    marked :func:`thread_safe`. Read from the operators themselves, so replacing one with a
    function of one's own never sends the new one into threads unasked."""
    return all(getattr(fn, "thread_safe", False) is True for fn in (initial, improve) if fn is not None)


@dataclass(frozen=True)
class OperatorSet:
    """The operators a search draws from, with their relative weights, how the first
    population is made (``initial``, called with a fresh random stream per plan), and the
    local improvement applied to every child and initial plan (``improve``; ``None``: none)."""

    mutations: tuple[tuple[Mutation, float], ...]
    crossovers: tuple[tuple[Crossover, float], ...] = ()
    crossover_rate: float = defaults.CROSSOVER_RATE
    initial: Initializer = construct
    improve: Improver | None = None
    warm: Warmer | None = None
    """A development at the smallest budget, made only so that the compiled kernels developing
    a child calls are loaded (numba loads each on its first call in a process, holding its lock):
    run beside the first children when they develop in threads, it loads the kernels they call
    next while theirs run. What it makes never reaches the search."""
    kind: Kind | None = None
    """The name of the development a child will get (its plan, ``None`` for a first plan, and
    its stream, which this must not draw from), for developers that place children by how
    long each kind took (see :mod:`evolve.run.lanes`): it decides when a child runs, never
    what it makes."""

    @property
    def threads(self) -> bool:
        """Whether ``initial`` and ``improve`` may run side by side in threads of one process
        (see :func:`runs_in_threads`; ``dataclasses.replace(ops, improve=mine)`` turns it off)."""
        return runs_in_threads(self.initial, self.improve)


STRUCTURAL = OperatorSet(
    mutations=(
        (add_task, 1.0), (remove_task, 1.0), (swap_tool, 2.0), (rewire, 1.0), (add_dep, 0.5),
        (remove_dep, 1.0), (reorder_priority, 1.0), (prune, 1.0), (merge_duplicates, 0.5),
        (complete, 1.0),
    ),
    crossovers=((crossover, 1.0),),
)
"""The default, offline operator mix for agent plans."""


def operator_name(fn: Callable[..., object]) -> str:
    """How events, checkpoints and reports name an operator: its ``name`` attribute if it has
    one, else the function's name (a ``functools.partial`` is named for the function it wraps)."""
    named = getattr(fn, "name", None)
    if isinstance(named, str):
        return named
    inner = getattr(fn, "func", fn)
    return str(getattr(inner, "__name__", type(inner).__name__))
