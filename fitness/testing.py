"""Hypothesis strategies for problems and plans, and the conformance check for fitness plugins.

A plugin author proves their objective keeps the contract with one test::

    from fitness.testing import check_fitness
    from my_objectives import dollars

    def test_dollars_keeps_the_fitness_contract() -> None:
        check_fitness(dollars)

The check runs the function over many generated problems and plans (valid ones,
broken ones and mutations of both) because the engine will: a search spends
most of its time on plans that are wrong in some way, and an objective that only
works on tidy plans fails there. The strategies build their own problems, so a
test never depends on a particular problem file.
"""

from __future__ import annotations

import copy
import json
import math
import pickle
import sys
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import replace
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Flaky

from evolve.load import problem_from_dict
from evolve.plan import REF, Plan, Task, parse_ref, task_refs_deps
from evolve.problem import RISKS, Problem
from fitness.base import Context, Fitness, FitnessError, as_fitness

SCOPES = ("alpha", "beta", "gamma")
RESOURCES = ("gpu", "llm_api")
DURATIONS = st.integers(0, 20).map(float) | st.sampled_from((0.25, 0.5, 1.5, 100.0))
COSTS = st.sampled_from((0.0, 0.001, 0.5, 2.0, 10.0))


class ConformanceError(AssertionError):
    """A fitness function broke the contract; the message names the rule and the function."""


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
    reachable = reachable_facts(initial, tools, scopes)
    goals = [f for f in facts if f in reachable and f not in initial] or facts
    data: dict[str, Any] = {
        "name": "generated",
        "initial": initial,
        "criteria": draw(st.lists(st.sampled_from(goals), min_size=1, max_size=3, unique=True)),
        "tools": tools,
        "policy": {"write_requires_approval": draw(st.booleans())},
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
    """Random valid problems (every one is accepted by :func:`evolve.load.problem_from_dict`)."""
    return problem_dicts(max_facts=max_facts, max_tools=max_tools, unlimited=unlimited).map(
        lambda data: problem_from_dict(data, "<generated>"))


# --- plans ----------------------------------------------------------------------------------


@st.composite
def valid_plans(draw: st.DrawFn, problem: Problem, *, max_tasks: int = 8,
                extra_deps: bool = True) -> Plan:
    """A plan the validator accepts, built forwards from the facts known so far.

    Each task runs a granted tool whose inputs are available, binds every input
    to the initial fact or to an earlier task's output, depends on the tasks it
    reads, and (under ``write_requires_approval``) on an approval for a write.
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
    gated = problem.policy.write_requires_approval
    usable = [t for t in problem.tools.values() if problem.scope_granted(t.scope)]
    used = {t.id for t in tasks}
    for _ in range(draw(st.integers(0, max(0, limit - len(tasks))))):
        ready = [t for t in usable if all(f in sources for f in t.inputs)
                 and not (gated and t.risk == "write" and not approvals)]
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
        if gated and tool.risk == "write":
            deps.append(draw(st.sampled_from(approvals)))
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


# --- the conformance check ------------------------------------------------------------------


def check_fitness(fn: Callable[..., float] | Fitness, *,
                  problem_strategy: st.SearchStrategy[Problem] | None = None,
                  max_examples: int = 60, worker: bool = True, worker_cases: int = 20,
                  executor: Executor | None = None, rel_tol: float = 0.0,
                  shrink: bool = True) -> Fitness:
    """Check that ``fn`` keeps the fitness contract; raise :class:`ConformanceError` if not.

    Over ``max_examples`` generated (problem, plan) pairs: the value is a finite
    number in the declared range; the problem, the plan and the shared context
    are left exactly as they were; a second call on deep copies gives the same
    value; renaming every task id gives the same value. Then the function must
    pickle by reference and, when ``worker`` is true, give the same values for
    ``worker_cases`` of those pairs in a fresh worker process (by default a
    joblib loky worker, the engine's own backend; pass ``executor`` to use
    another, e.g. a ``ProcessPoolExecutor``). Values are compared exactly unless
    ``rel_tol`` is set: the engine promises the same result for any ``--jobs``.
    ``shrink=False`` reports the first failing case as found instead of the
    smallest one, which is faster when only pass or fail matters.
    Returns the checked :class:`Fitness`.
    """
    fit = fn if isinstance(fn, Fitness) else conforming(fn)
    check_pickles(fit)
    passed: list[tuple[Problem, Plan, float]] = []

    phases = tuple(p for p in Phase if shrink or p not in (Phase.shrink, Phase.explain))

    @settings(max_examples=max_examples, deadline=None, phases=phases, suppress_health_check=[
        HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
    @given(case=cases(problem_strategy), data=st.data())
    def conforms(case: tuple[Problem, Plan], data: st.DataObject) -> None:
        problem, plan = case
        mapping = data.draw(renamings(problem, plan), label="renaming")
        passed.append((problem, plan, check_case(fit, problem, plan, mapping, rel_tol)))

    try:
        conforms()
    except Flaky as exc:
        raise ConformanceError(
            f"{fit.label} failed on an input and then passed on the same input: "
            f"it is not deterministic ({exc})") from exc
    if worker:
        check_in_worker(fit, passed[-worker_cases:], executor, rel_tol)
    return fit


def conforming(fn: Callable[..., float]) -> Fitness:
    """Wrap a marked function as the engine would; an unmarked one fails the check."""
    source = f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', repr(fn))}"
    try:
        return as_fitness(fn, source=source)
    except FitnessError as exc:
        raise ConformanceError(str(exc)) from None


def check_pickles(fit: Fitness) -> None:
    """Workers receive the function pickled, by reference, with the standard library's pickle."""
    try:
        restored = pickle.loads(pickle.dumps(fit))
    except Exception as exc:
        raise ConformanceError(
            f"{fit.label} does not pickle ({type(exc).__name__}: {exc}): define it with "
            f"def at module level, not as a lambda, a closure or a method") from None
    if restored.spec != fit.spec:
        raise ConformanceError(f"{fit.label} loses its @fitness spec when pickled")


def snapshot(value: object) -> bytes:
    """Bytes that change when anything reachable from ``value`` changes."""
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def describe(plan: Plan) -> str:
    text = json.dumps(plan.to_dict(), sort_keys=True, default=str)
    return text if len(text) <= 400 else text[:397] + "..."


def same(a: float, b: float, rel_tol: float) -> bool:
    return a == b or (rel_tol > 0 and math.isclose(a, b, rel_tol=rel_tol))


def score(fit: Fitness, problem: Problem, plan: Plan, context: Context | None = None) -> float:
    """One call as the engine makes it, a contract violation turned into a failed check."""
    try:
        return fit(problem, plan, Context(problem, plan) if context is None else context)
    except FitnessError as exc:
        raise ConformanceError(f"{exc}, for plan {describe(plan)}") from exc


def check_case(fit: Fitness, problem: Problem, plan: Plan, mapping: Mapping[str, str],
               rel_tol: float = 0.0) -> float:
    """Every in-process rule on one (problem, plan) pair; returns the value."""
    problem_before, plan_before = snapshot(problem), snapshot(plan)
    context = Context(problem, plan)
    shared_before = snapshot((context.errors, context.schedule))
    value = score(fit, problem, plan, context)
    for what, before, after in (("plan", plan_before, snapshot(plan)),
                                ("problem", problem_before, snapshot(problem)),
                                ("shared context", shared_before,
                                 snapshot((context.errors, context.schedule)))):
        if before != after:
            raise ConformanceError(
                f"{fit.label} modified the {what} it was given (fitness functions must be pure: "
                f"the engine shares them across objectives and candidates), on plan {describe(plan)}")
    again = score(fit, copy.deepcopy(problem), copy.deepcopy(plan))
    if not same(value, again, rel_tol):
        raise ConformanceError(
            f"{fit.label} is not deterministic: {value!r}, then {again!r} for the same input, "
            f"on plan {describe(plan)}")
    renamed = score(fit, problem, rename_ids(plan, mapping))
    if not same(value, renamed, rel_tol):
        raise ConformanceError(
            f"{fit.label} depends on task ids: {value!r}, but {renamed!r} after renaming "
            f"{dict(mapping)}, on plan {describe(plan)}")
    return value


def score_pickled(blob: bytes) -> list[float | str]:
    """Worker side: unpickle the fitness and the cases and score each (errors come back as text)."""
    fit, pairs = pickle.loads(blob)
    out: list[float | str] = []
    for problem, plan in pairs:
        try:
            out.append(fit(problem, plan, Context(problem, plan)))
        except Exception as exc:
            out.append(f"{type(exc).__name__}: {exc}")
    return out


def default_executor() -> Executor:
    """The engine's own worker pool: joblib's reusable loky executor, a fresh interpreter.

    Its workers copy ``sys.path`` when they start, so the current path is part of
    the key: after a test adds a plugin's folder, a new worker is started that
    can import the plugin, as a new run's pool would.
    """
    from joblib.externals.loky import get_reusable_executor

    executor: Executor = get_reusable_executor(
        max_workers=1, initializer=use_path, initargs=(tuple(sys.path),))
    return executor


def use_path(path: tuple[str, ...]) -> None:
    """Worker initializer: the parent's ``sys.path`` (loky copies it already; this keys the pool)."""
    sys.path[:] = list(path)


def check_in_worker(fit: Fitness, passed: Sequence[tuple[Problem, Plan, float]],
                    executor: Executor | None, rel_tol: float = 0.0) -> None:
    """Score ``passed`` again in another process and require the very same values."""
    if not passed:
        return
    blob = pickle.dumps((fit, [(problem, plan) for problem, plan, _ in passed]))
    pool = executor if executor is not None else default_executor()
    try:
        values = pool.submit(score_pickled, blob).result(timeout=300)
    except Exception as exc:
        raise ConformanceError(
            f"{fit.label} cannot be run in a worker process ({type(exc).__name__}: {exc}): "
            f"is its module importable there?") from exc
    for (_, plan, expected), got in zip(passed, values):
        if isinstance(got, str) or not same(expected, got, rel_tol):
            raise ConformanceError(
                f"{fit.label} gives {got!r} in a worker process but {expected!r} here, on plan "
                f"{describe(plan)} (does it read global state, the process id, or iterate a set "
                f"of strings, whose order changes between processes?)")


__all__ = [
    "BREAKERS",
    "ConformanceError",
    "cases",
    "check_case",
    "check_fitness",
    "invalid_plans",
    "mutations",
    "plans",
    "problem_dicts",
    "problems",
    "referenced_ids",
    "rename_ids",
    "renamings",
    "valid_plans",
    "without_task",
]
