"""Hypothesis strategies for problems and plans, built without any problem file.

:func:`problems` and :func:`problem_dicts` generate problems through the real
loader; :func:`valid_plans`, :func:`invalid_plans` (one rule broken on purpose,
by one of :data:`BREAKERS`) and :func:`mutations` (the edits a search makes)
generate plans for them, :func:`plans` and :func:`cases` mix the three, and
:func:`renamings` with :func:`rename_ids` rename task ids. The conformance check
in :mod:`evolve.fitness.testing` is built on them; they are re-exported there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from hypothesis import strategies as st

from evolve.model.plan import REF, Plan, Task, parse_ref, task_refs_deps
from evolve.model.problem import RISKS, Problem
from evolve.model.problem_file import problem_from_dict
from evolve.model.validate import approval_rule, bound_object, may_collide, written_object

SCOPES = ("alpha", "beta", "gamma")
RESOURCES = ("gpu", "llm_api")
DURATIONS = st.integers(0, 20).map(float) | st.sampled_from((0.25, 0.5, 1.5, 100.0))
COSTS = st.sampled_from((0.0, 0.001, 0.5, 2.0, 10.0))


# --- problems -------------------------------------------------------------------------------


@st.composite
def problem_dicts(draw: st.DrawFn, *, max_facts: int = 8, max_tools: int = 8,
                  unlimited: bool = False) -> dict[str, Any]:
    """A problem as the parsed YAML a user would write, so it goes through the real loader.

    Facts are ``f0, f1, ...``; the first few are known from the start. Criteria
    are chosen among facts the granted tools can reach, when there are any, so
    that most problems have complete plans. ``unlimited`` leaves out parallel
    limits and resources, so every task may start as soon as its deps finish.
    """
    facts = [f"f{i}" for i in range(draw(st.integers(2, max_facts)))]
    initial = facts[: draw(st.integers(1, len(facts) - 1))]
    scopes = draw(st.none() | st.lists(st.sampled_from(SCOPES), unique=True))
    resources: dict[str, int] = {} if unlimited else draw(
        st.dictionaries(st.sampled_from(RESOURCES), st.integers(1, 3), max_size=2))
    tools: dict[str, dict[str, Any]] = {}
    for i in range(draw(st.integers(1, max_tools))):
        tool: dict[str, Any] = {
            "duration": draw(DURATIONS),
            "inputs": draw(st.lists(st.sampled_from(facts), max_size=3, unique=True)),
            "outputs": draw(st.lists(st.sampled_from(facts), min_size=1, max_size=2, unique=True)),
            "risk": draw(st.sampled_from(RISKS)),
            "cost": draw(COSTS),
            "llm_calls": draw(st.integers(0, 3)),
        }
        scope = draw(st.none() | st.sampled_from(SCOPES))
        if scope is not None:
            tool["scope"] = scope
        if resources:
            tool["uses"] = {name: draw(st.integers(0, cap)) for name, cap in resources.items()
                            if draw(st.booleans())}
        tools[f"tool_{i}"] = tool
    writers = [name for name, tool in tools.items() if tool["risk"] == "write"]
    for name in writers:  # what a write writes: often the same object, so write-order matters
        if draw(st.booleans()):
            tools[name]["writes"] = draw(st.sampled_from(
                ["row:1", "row:2", *(f"row:${fact}" for fact in tools[name]["inputs"])]))
    thresholds = {name: draw(st.sampled_from(["true", "false", *(f"${fact} > 1" for fact in
                                                               tools[name]["inputs"])]))
                  for name in writers if draw(st.booleans())}
    reachable = reachable_facts(initial, tools, scopes)
    goals = [f for f in facts if f in reachable and f not in initial] or facts
    data: dict[str, Any] = {
        "name": "generated",
        "initial": initial,
        "criteria": draw(st.lists(st.sampled_from(goals), min_size=1, max_size=3, unique=True)),
        "tools": tools,
        "policy": {"write_requires_approval": draw(st.booleans()), "approval_required": thresholds},
        "limits": {"max_tasks": draw(st.none() | st.integers(4, 12))},
    }
    if scopes is not None:
        data["scopes"] = scopes
    if not unlimited:
        data["limits"]["max_parallel"] = draw(st.none() | st.integers(1, 3))
        data["resources"] = resources
    return data


def reachable_facts(initial: Sequence[str], tools: Mapping[str, Mapping[str, Any]],
                    scopes: Sequence[str] | None) -> set[str]:
    """Facts that chaining the granted tools can make from the initial ones."""
    known = set(initial)
    usable = [t for t in tools.values() if scopes is None or t.get("scope") in (None, *scopes)]
    grew = True
    while grew:
        grew = False
        for tool in usable:
            if set(tool["inputs"]) <= known and not set(tool["outputs"]) <= known:
                known |= set(tool["outputs"])
                grew = True
    return known


def problems(*, max_facts: int = 8, max_tools: int = 8,
             unlimited: bool = False) -> st.SearchStrategy[Problem]:
    """Random valid problems (each one accepted by
    :func:`evolve.model.problem_file.problem_from_dict`)."""
    return problem_dicts(max_facts=max_facts, max_tools=max_tools, unlimited=unlimited).map(
        lambda data: problem_from_dict(data, "<generated>"))


# --- plans ----------------------------------------------------------------------------------


@st.composite
def valid_plans(draw: st.DrawFn, problem: Problem, *, max_tasks: int = 8,
                extra_deps: bool = True) -> Plan:
    """A plan the validator accepts, built forwards from the facts known so far.

    Each task runs a granted tool whose inputs are available, binds every input
    to the initial fact or to an earlier task's output, depends on the tasks it
    reads, on an approval for a write the policy gates (``write_requires_approval``, an
    ``approval_required`` threshold that can hold) and on every earlier write of an object it
    may write too (rule ``write-order``).
    ``extra_deps`` adds dependencies that carry nothing, which are legal.
    Template problems start from the template's tasks.
    """
    template = problem.template if isinstance(problem.template, Plan) else Plan()
    tasks = list(template.tasks)
    limit = max_tasks if problem.limits.max_tasks is None else min(max_tasks, problem.limits.max_tasks)
    sources: dict[str, list[str]] = {fact: [f"${fact}"] for fact in problem.initial}
    approvals: list[str] = []
    for task in tasks:
        record(problem, task, sources, approvals)
    usable = [t for t in problem.tools.values() if problem.scope_granted(t.scope)]
    used = {t.id for t in tasks}
    for _ in range(draw(st.integers(0, max(0, limit - len(tasks))))):
        ready = [t for t in usable if all(f in sources for f in t.inputs)
                 and not (approval_rule(problem.policy, t) is not None and not approvals)]
        if not ready:
            break
        tool = draw(st.sampled_from(ready))
        tid = fresh_id(used)
        inputs = {fact: draw(st.sampled_from(sources[fact])) for fact in tool.inputs}
        when: str | None = None
        readable = [ref for refs in sources.values() for ref in refs if "." in ref]
        if readable:
            when = draw(st.none() | st.sampled_from(readable).map(lambda ref: f"{ref} > 0"))
        deps = list(task_refs_deps(inputs, when))
        if approval_rule(problem.policy, tool, inputs) is not None:
            deps.append(draw(st.sampled_from(approvals)))
        if tool.risk == "write" and tool.writes is not None:
            mine = bound_object(tool.writes, inputs)
            deps += [t.id for t in tasks
                     if (other := written_object(problem, t)) is not None and may_collide(mine, other)]
        if extra_deps and tasks:
            deps += draw(st.lists(st.sampled_from([t.id for t in tasks]), max_size=2))
        outputs = draw(st.just(()) | st.lists(st.sampled_from(tool.outputs), min_size=1, unique=True))
        task = Task(id=tid, tool=tool.name, deps=tuple(dict.fromkeys(deps)), inputs=inputs,
                    outputs=tuple(outputs), when=when,
                    idempotency_key=f"{tid}-once" if tool.risk == "write" else None)
        tasks.append(task)
        used.add(tid)
        record(problem, task, sources, approvals)
    ids = [t.id for t in tasks]
    priority = draw(st.none() | st.permutations(ids).map(tuple))
    return Plan(tasks=tuple(tasks), priority=priority)


def record(problem: Problem, task: Task, sources: dict[str, list[str]], approvals: list[str]) -> None:
    """Note what ``task`` makes available to later tasks."""
    tool = problem.tools.get(task.tool)
    if tool is None:
        return
    for fact in task.outputs or tool.outputs:
        sources.setdefault(fact, []).append(f"${task.id}.{fact}")
    if tool.risk == "approval":
        approvals.append(task.id)


def fresh_id(used: set[str] | Sequence[str], prefix: str = "t") -> str:
    """The first ``<prefix><n>`` not in ``used``."""
    n = 1
    while f"{prefix}{n}" in used:
        n += 1
    return f"{prefix}{n}"


Breaker = Callable[[st.DrawFn, Problem, Plan], "Plan | None"]


def pick(draw: st.DrawFn, tasks: Sequence[Task]) -> tuple[int, Task]:
    index = draw(st.integers(0, len(tasks) - 1))
    return index, tasks[index]


def put(plan: Plan, index: int, task: Task) -> Plan:
    tasks = list(plan.tasks)
    tasks[index] = task
    return plan.with_tasks(tasks)


def break_unknown_tool(draw: st.DrawFn, problem: Problem, plan: Plan) -> Plan | None:
    name = "no_such_tool"
    while name in problem.tools:
        name += "_"
    return plan.with_tasks([*plan.tasks, Task(id=fresh_id(plan.ids()), tool=name)])


def break_missing_dep(draw: st.DrawFn, problem: Problem, plan: Plan) -> Plan | None:
    if not plan.tasks:
        return None
    i, task = pick(draw, plan.tasks)
    return put(plan, i, replace(task, deps=(*task.deps, fresh_id(plan.ids(), "ghost"))))


def break_self_dep(draw: st.DrawFn, problem: Problem, plan: Plan) -> Plan | None:
    if not plan.tasks:
        return None
    i, task = pick(draw, plan.tasks)
    return put(plan, i, replace(task, deps=(*task.deps, task.id)))


def break_duplicate_id(draw: st.DrawFn, problem: Problem, plan: Plan) -> Plan | None:
    if not plan.tasks:
        return None
    _, task = pick(draw, plan.tasks)
    return plan.with_tasks([*plan.tasks, replace(task, deps=())])


def break_cycle(draw: st.DrawFn, problem: Problem, plan: Plan) -> Plan | None:
    if len(plan.tasks) < 2:
        return None
    i, a = pick(draw, plan.tasks)
    j = draw(st.integers(0, len(plan.tasks) - 2))
    j = j + 1 if j >= i else j
    b = plan.tasks[j]
    first = put(plan, i, replace(a, deps=tuple(dict.fromkeys((*a.deps, b.id)))))
    return put(first, j, replace(b, deps=tuple(dict.fromkeys((*b.deps, a.id)))))


def break_unbound_input(draw: st.DrawFn, problem: Problem, plan: Plan) -> Plan | None:
    bound = [(i, t) for i, t in enumerate(plan.tasks) if t.inputs]
    if not bound:
        return None
    i, task = bound[draw(st.integers(0, len(bound) - 1))]
    key = draw(st.sampled_from(sorted(task.inputs)))
    return put(plan, i, replace(task, inputs={k: v for k, v in task.inputs.items() if k != key}))


def break_dropped_data_dep(draw: st.DrawFn, problem: Problem, plan: Plan) -> Plan | None:
    reading = [(i, t) for i, t in enumerate(plan.tasks) if task_refs_deps(t.inputs, t.when)]
    if not reading:
        return None
    i, task = reading[draw(st.integers(0, len(reading) - 1))]
    dropped = draw(st.sampled_from(task_refs_deps(task.inputs, task.when)))
    return put(plan, i, replace(task, deps=tuple(d for d in task.deps if d != dropped)))


def break_idempotency(draw: st.DrawFn, problem: Problem, plan: Plan) -> Plan | None:
    writes = [(i, t) for i, t in enumerate(plan.tasks)
              if (tool := problem.tools.get(t.tool)) is not None and tool.risk == "write"]
    if not writes:
        return None
    i, task = writes[draw(st.integers(0, len(writes) - 1))]
    return put(plan, i, replace(task, idempotency_key=None))


def break_priority(draw: st.DrawFn, problem: Problem, plan: Plan) -> Plan | None:
    return replace(plan, priority=(*(plan.priority or plan.ids()), fresh_id(plan.ids(), "ghost")))


def break_scope(draw: st.DrawFn, problem: Problem, plan: Plan) -> Plan | None:
    denied = [t for t in problem.tools.values() if not problem.scope_granted(t.scope)]
    if not denied:
        return None
    tool = draw(st.sampled_from(denied))
    return plan.with_tasks([*plan.tasks, Task(id=fresh_id(plan.ids()), tool=tool.name)])


BREAKERS: tuple[Breaker, ...] = (
    break_unknown_tool, break_missing_dep, break_self_dep, break_duplicate_id, break_cycle,
    break_unbound_input, break_dropped_data_dep, break_idempotency, break_priority, break_scope,
)
"""Edits that each make a valid plan invalid (unknown tool always applies, so one always does)."""


@st.composite
def invalid_plans(draw: st.DrawFn, problem: Problem, *, max_tasks: int = 8) -> Plan:
    """A plan the validator rejects: a valid plan with one rule broken on purpose."""
    plan = draw(valid_plans(problem, max_tasks=max_tasks))
    for breaker in draw(st.permutations(BREAKERS)):
        broken = breaker(draw, problem, plan)
        if broken is not None:
            return broken
    raise AssertionError("break_unknown_tool always applies")  # pragma: no cover


def without_task(plan: Plan, tid: str) -> Plan:
    """``plan`` minus task ``tid``; its dependents inherit its deps, so no ordering is lost.

    References to the removed task's outputs are left as they are (and dangle):
    this is the removal the minimality property talks about, not a repair.
    """
    gone = [t for t in plan.tasks if t.id == tid]
    inherited = tuple(d for t in gone for d in t.deps if d != tid)
    kept = []
    for task in plan.tasks:
        if task.id == tid:
            continue
        if tid in task.deps:
            deps = [d for d in task.deps if d != tid] + [d for d in inherited if d != task.id]
            task = replace(task, deps=tuple(dict.fromkeys(deps)))
        kept.append(task)
    return plan.with_tasks(kept)


@st.composite
def mutations(draw: st.DrawFn, problem: Problem, plan: Plan, *, max_edits: int = 3) -> Plan:
    """``plan`` after a few random edits of the kind a search makes; it may or may not stay valid."""
    for _ in range(draw(st.integers(1, max_edits))):
        ids = plan.ids()
        edit = draw(st.sampled_from(("remove", "add_dep", "drop_dep", "swap_tool", "rebind",
                                     "shuffle", "priority")))
        if edit == "remove" and ids:
            plan = without_task(plan, draw(st.sampled_from(ids)))
        elif edit == "add_dep" and ids:
            i, task = pick(draw, plan.tasks)
            plan = put(plan, i, replace(task, deps=(*task.deps, draw(st.sampled_from(ids)))))
        elif edit == "drop_dep" and any(t.deps for t in plan.tasks):
            i, task = draw(st.sampled_from([(i, t) for i, t in enumerate(plan.tasks) if t.deps]))
            gone = draw(st.sampled_from(task.deps))
            plan = put(plan, i, replace(task, deps=tuple(d for d in task.deps if d != gone)))
        elif edit == "swap_tool" and ids:
            i, task = pick(draw, plan.tasks)
            plan = put(plan, i, replace(task, tool=draw(st.sampled_from(sorted(problem.tools)))))
        elif edit == "rebind" and any(t.inputs for t in plan.tasks):
            i, task = draw(st.sampled_from([(i, t) for i, t in enumerate(plan.tasks) if t.inputs]))
            key = draw(st.sampled_from(sorted(task.inputs)))
            source = draw(st.sampled_from([f"${key}", *(f"${other}.{key}" for other in ids)]))
            plan = put(plan, i, replace(task, inputs={**task.inputs, key: source}))
        elif edit == "shuffle" and ids:
            plan = plan.with_tasks(draw(st.permutations(plan.tasks)))
        elif edit == "priority":
            plan = replace(plan, priority=draw(st.none() | st.permutations(ids).map(tuple)))
    return plan


def plans(problem: Problem, *, max_tasks: int = 8) -> st.SearchStrategy[Plan]:
    """Plans for ``problem``: valid, deliberately invalid, and mutations of valid ones."""
    valid = valid_plans(problem, max_tasks=max_tasks)
    return st.one_of(valid, invalid_plans(problem, max_tasks=max_tasks),
                     valid.flatmap(lambda plan: mutations(problem, plan)))


def cases(
    problem_strategy: st.SearchStrategy[Problem] | None = None,
) -> st.SearchStrategy[tuple[Problem, Plan]]:
    """``(problem, plan)`` pairs: a generated problem and one plan for it from :func:`plans`."""
    base = problems() if problem_strategy is None else problem_strategy
    return base.flatmap(lambda problem: st.tuples(st.just(problem), plans(problem)))


# --- renaming -------------------------------------------------------------------------------


def referenced_ids(plan: Plan) -> list[str]:
    """Every task id the plan mentions (tasks, deps, references, priority), in first-seen order."""
    seen: dict[str, None] = {}
    for task in plan.tasks:
        seen[task.id] = None
    for task in plan.tasks:
        for dep in task.deps:
            seen[dep] = None
        for ref in task.refs():
            if ref.task is not None:
                seen[ref.task] = None
    for tid in plan.priority or ():
        seen[tid] = None
    return list(seen)


@st.composite
def renamings(draw: st.DrawFn, problem: Problem, plan: Plan) -> dict[str, str]:
    """A one-to-one renaming of every id in ``plan`` except the template's (those are fixed)."""
    fixed = {t.id for t in problem.template.tasks} if isinstance(problem.template, Plan) else set()
    ids = [tid for tid in referenced_ids(plan) if tid not in fixed]
    taken = set(referenced_ids(plan))
    prefix = draw(st.sampled_from(("r", "node_", "Z", "step-")))
    while any(f"{prefix}{i}" in taken for i in range(len(ids))):
        prefix += "_"
    order = draw(st.permutations(range(len(ids))))
    return {old: f"{prefix}{n}" for old, n in zip(ids, order)}


def rename_ids(plan: Plan, mapping: Mapping[str, str]) -> Plan:
    """``plan`` with task ids renamed everywhere they occur: ids, deps, references, priority."""
    def new(tid: str) -> str:
        return mapping.get(tid, tid)

    def in_text(text: str) -> str:
        def swap(match: Any) -> str:
            head, tail = match.group(1), match.group(2)
            if tail is None or head not in mapping:
                return str(match.group(0))
            return "$" + mapping[head] + str(match.group(0))[1 + len(head):]
        return REF.sub(swap, text)

    def in_input(value: object) -> object:
        # Only a whole-value reference is one (``parse_ref``); a literal mentioning ``$a.b`` is text.
        ref = parse_ref(value)
        if ref is None or ref.task is None or not isinstance(value, str):
            return value
        return in_text(value)

    tasks = [
        replace(task, id=new(task.id), deps=tuple(new(d) for d in task.deps),
                inputs={k: in_input(v) for k, v in task.inputs.items()},
                when=None if task.when is None else in_text(task.when))
        for task in plan.tasks
    ]
    priority = None if plan.priority is None else tuple(new(t) for t in plan.priority)
    return Plan(tasks=tuple(tasks), priority=priority)

