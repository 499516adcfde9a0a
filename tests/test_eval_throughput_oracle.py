"""The fast paths of evaluation give exactly the numbers of the plain-Python definitions.

Two oracles: the plain-Python functions as they were before they were made
linear (copied here verbatim, quadratic and obviously right), and the
plain-Python functions as they are (which the compiled path must equal). Plans
are random and often broken: missing deps, cycles, ungranted scopes, unknown
tools, repeated ids, dangling or misbound references, literals, templates.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evolve.fitness.base import Context
from evolve.fitness.builtin import BUILTINS
from evolve.fitness.compiled import CompiledContext, Measures
from evolve.fitness.evaluation import Evaluation, evaluate_plan
from evolve.fitness.registry import resolve_all
from evolve.fitness.strategies import BREAKERS, fresh_id, mutations, plans, problems, valid_plans
from evolve.model import plan_arrays
from evolve.model.coverage import (
    contributing_tasks,
    covered_criteria,
    data_sources,
    duplicates,
    sound_tasks,
)
from evolve.model.graph import upstream
from evolve.model.plan import Plan, Task
from evolve.model.plan_file import plan_from_dict
from evolve.model.problem import Problem, Tool
from evolve.model.problem_file import problem_from_dict
from evolve.model.validate import PlanError, may_collide, produced_by, validate, written_object

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])
FITNESSES = resolve_all(fn.__fitness__.name for fn in BUILTINS)  # type: ignore[attr-defined]


# --- the definitions as they were: the oracle of the linear Python ---------------------------


def old_producers_of(problem: Problem, plan: Plan, fact: str,
                     among: Iterable[str] | None = None) -> list[Task]:
    allowed = None if among is None else set(among)
    return [t for t in plan.tasks
            if (allowed is None or t.id in allowed) and fact in (produced_by(problem, t) or ())]


def old_covered_criteria(problem: Problem, plan: Plan, errors: Sequence[PlanError]) -> list[str]:
    sound = sound_tasks(plan, errors)
    return [c for c in problem.criteria
            if c in problem.initial or old_producers_of(problem, plan, c, sound)]


def old_duplicates(plan: Plan) -> dict[str, str]:
    first: dict[tuple[str, str, str | None], str] = {}
    copies: dict[str, str] = {}
    for task in plan.tasks:
        key = (task.tool, repr(sorted(task.inputs.items())), task.when)
        if key in first:
            copies[task.id] = first[key]
        else:
            first[key] = task.id
    return copies


def old_contributing_tasks(problem: Problem, plan: Plan) -> set[str]:
    tasks = plan.by_id()
    deps = {tid: [d for d in t.deps if d in tasks] for tid, t in tasks.items()}
    todo: list[str] = []
    for criterion in problem.criteria:
        found = old_producers_of(problem, plan, criterion)
        if found:
            todo.append(found[0].id)
    template = problem.template
    if isinstance(template, Plan):
        todo.extend(t.id for t in template.tasks if t.id in tasks)
    serving: set[str] = set()
    while todo:
        tid = todo.pop()
        if tid in serving or tid not in tasks:
            continue
        serving.add(tid)
        task = tasks[tid]
        todo.extend(data_sources(task))
        tool = problem.tools.get(task.tool)
        if tool is not None and tool.risk == "write":
            todo.extend(up for up in upstream(tid, deps)
                        if (t := problem.tools.get(tasks[up].tool)) is not None and t.risk == "approval")
    return serving - set(old_duplicates(plan))


def old_write_approval_errors(problem: Problem, plan: Plan) -> list[str | None]:
    if not problem.policy.write_requires_approval:
        return []
    tasks = plan.by_id()
    deps = {tid: [d for d in t.deps if d in tasks] for tid, t in tasks.items()}
    unapproved: list[str | None] = []
    for task in plan.tasks:
        tool = problem.tools.get(task.tool)
        if tool is None or tool.risk != "write":
            continue
        if not any((up_tool := problem.tools.get(tasks[up].tool)) is not None
                   and up_tool.risk == "approval" for up in upstream(task.id, deps)):
            unapproved.append(task.id)
    return unapproved


def old_approved(problem: Problem, tasks: Mapping[str, Task], deps: Mapping[str, Sequence[str]],
                 tid: str) -> bool:
    return any(risk_of(problem, tasks[up]) == "approval" for up in upstream(tid, deps))


def risk_of(problem: Problem, task: Task) -> str | None:
    tool = problem.tools.get(task.tool)
    return None if tool is None else tool.risk


def old_risk(problem: Problem, plan: Plan) -> float:
    tasks, deps = plan.by_id(), plan.dependency_map()
    return float(sum(1 for task in plan.tasks if risk_of(problem, task) == "write"
                     and not old_approved(problem, tasks, deps, task.id)))


def old_redundant_deps(problem: Problem, plan: Plan) -> float:
    tasks, deps = plan.by_id(), plan.dependency_map()
    template = problem.template
    required = ({(t.id, d) for t in template.tasks for d in t.deps}
                if isinstance(template, Plan) else set())
    count = 0
    for task in plan.tasks:
        reads = set(data_sources(task))
        seen: set[str] = set()
        for dep in task.deps:
            if dep == task.id or dep not in tasks:
                continue
            if dep in seen:
                count += 1
                continue
            seen.add(dep)
            carries_approval = risk_of(problem, task) == "write" and (
                risk_of(problem, tasks[dep]) == "approval" or old_approved(problem, tasks, deps, dep))
            if dep not in reads and not carries_approval and (task.id, dep) not in required \
                    and not old_orders_writes(problem, plan, task, dep):
                count += 1
    return float(count)


def old_orders_writes(problem: Problem, plan: Plan, task: Task, dep: str) -> bool:
    """Whether the edge ``task -> dep`` orders ``task``'s write after one that may write the same
    object, or the validator reports more ``write-order`` errors once the edge is gone."""
    deps = plan.dependency_map()
    mine = written_object(problem, task)
    if mine is not None and any(
            (other := written_object(problem, t)) is not None and may_collide(mine, other)
            for t in plan.tasks if t.id != task.id and (t.id == dep or t.id in upstream(dep, deps))):
        return True
    cut = plan.with_tasks([replace(t, deps=tuple(d for d in t.deps if d != dep)) if t.id == task.id
                           else t for t in plan.tasks])
    def write_order(p: Plan) -> int:
        return sum(1 for e in validate(problem, p) if e.rule == "write-order")
    return write_order(cut) > write_order(plan)


# --- more ways to break a plan than the kit's breakers ----------------------------------------


LITERALS = st.sampled_from((1, 1.0, True, None, "plain", "$", [1, 2], {"a": 1}))


def edit_plan(draw: st.DrawFn, problem: Problem, plan: Plan) -> Plan:
    """One break the kit's breakers do not make: outputs the tool lacks, literal inputs (equal
    but differently written: 1, 1.0, True), references to unknown facts and tasks, copies of a
    task under a new id (duplicates), `when` conditions, self-references, writes cut off from
    their approvals, template tasks retooled or cut loose, many extra tasks."""
    tasks = list(plan.tasks)
    ids = [t.id for t in tasks]
    edit = draw(st.sampled_from(("output", "literal", "unknown-ref", "copy", "when", "self-ref",
                                 "unapprove", "retool", "cut", "grow", "untemplate", "unkey")))
    template = problem.template.tasks if isinstance(problem.template, Plan) else ()
    kept = [k for k, t in enumerate(tasks) if t.id in {t.id for t in template}]
    if edit == "untemplate" and kept:
        i = draw(st.sampled_from(kept))
        if draw(st.booleans()):
            return plan.with_tasks(t for k, t in enumerate(tasks) if k != i)
        edit = draw(st.sampled_from(("retool", "cut")))
    if edit == "unkey":
        return plan.with_tasks(replace(t, idempotency_key=draw(st.sampled_from((None, "")))) for t in tasks)
    if edit == "grow" or not tasks:
        tool = draw(st.sampled_from(sorted(problem.tools)))
        extra = [Task(id=fresh_id(ids, "g") + str(k), tool=tool) for k in range(draw(st.integers(1, 6)))]
        return plan.with_tasks([*tasks, *extra])
    i = draw(st.integers(0, len(tasks) - 1))
    task = tasks[i]
    if edit == "output":
        task = replace(task, outputs=(*task.outputs, draw(st.sampled_from(("zz", "f0", "f1")))))
    elif edit == "literal":
        key = draw(st.sampled_from(("k", "f0", "f1", *task.inputs)))
        task = replace(task, inputs={**task.inputs, key: draw(LITERALS)})
    elif edit == "unknown-ref":
        other = draw(st.sampled_from([*ids, "ghost"]))
        fact = draw(st.sampled_from(("f0", "f1", "nope")))
        ref = draw(st.sampled_from((f"${other}.{fact}", f"${fact}")))
        task = replace(task, inputs={**task.inputs, fact: ref})
    elif edit == "copy":
        return plan.with_tasks([*tasks, replace(task, id=fresh_id(ids, "c"))])
    elif edit == "when":
        other = draw(st.sampled_from([*ids, "ghost"]))
        task = replace(task, when=draw(st.sampled_from((f"${other}.f1 > 1", "$f0 == 2", "$nope", ""))))
    elif edit == "self-ref":
        task = replace(task, inputs={**task.inputs, "f1": f"${task.id}.f1"}, deps=(*task.deps, task.id))
    elif edit == "unapprove":
        writes = [k for k, t in enumerate(tasks) if risk_of(problem, t) == "write"]
        if writes:
            i = draw(st.sampled_from(writes))
            task = replace(tasks[i], deps=())
    elif edit == "retool":
        task = replace(task, tool=draw(st.sampled_from(sorted(problem.tools))))
    else:  # cut
        task = replace(task, deps=task.deps[:-1])
    tasks[i] = task
    return plan.with_tasks(tasks)


@st.composite
def broken_plans(draw: st.DrawFn, problem: Problem) -> Plan:
    """A kit plan (valid, broken or mutated) with up to five more breaks, the kit's or ours."""
    plan = draw(plans(problem, max_tasks=8))
    for _ in range(draw(st.integers(0, 5))):
        if draw(st.booleans()):
            plan = edit_plan(draw, problem, plan)
        else:
            plan = draw(st.sampled_from(BREAKERS))(draw, problem, plan) or plan
    return plan


@st.composite
def template_problems(draw: st.DrawFn) -> Problem:
    """A generated problem whose template is the first tasks of one of its valid plans."""
    problem, base = draw(problems().flatmap(lambda p: st.tuples(st.just(p), valid_plans(p, max_tasks=5)))
                         .filter(lambda pair: len(pair[1].tasks) > 0))
    kept = base.tasks[: draw(st.integers(1, len(base.tasks)))]
    return replace(problem, template=Plan(tasks=kept))


@st.composite
def cases(draw: st.DrawFn) -> tuple[Problem, Plan]:
    problem = draw(problems() | template_problems())
    return problem, draw(broken_plans(problem))


# --- the properties -------------------------------------------------------------------------


@SETTINGS
@given(case=cases())
def test_linear_python_equals_the_old_definitions(case: tuple[Problem, Plan]) -> None:
    problem, plan = case
    errors = validate(problem, plan)
    assert covered_criteria(problem, plan, errors) == old_covered_criteria(problem, plan, errors)
    assert contributing_tasks(problem, plan) == old_contributing_tasks(problem, plan)
    assert duplicates(plan) == old_duplicates(plan)
    assert [e.task for e in errors if e.rule == "write-approval"] == \
        old_write_approval_errors(problem, plan)
    context = Context(problem, plan)
    by_name = {f.name: f for f in FITNESSES}
    assert by_name["risk"](problem, plan, context) == old_risk(problem, plan)
    assert by_name["redundant_deps"](problem, plan, context) == old_redundant_deps(problem, plan)
    for fact in {f for tool in problem.tools.values() for f in tool.outputs} | {"nothing"}:
        assert problem.producers(fact) == [t for t in problem.tools.values() if fact in t.outputs]


def python_measures(problem: Problem, plan: Plan) -> Measures:
    errors = validate(problem, plan)
    tools = [problem.tools[t.tool] for t in plan.tasks if t.tool in problem.tools]
    return Measures(errors=len(errors), covered=len(covered_criteria(problem, plan, errors)),
                    contributing=len(contributing_tasks(problem, plan)),
                    cost=sum((tool.cost for tool in tools), 0.0)
                    if all(type(tool.cost) is float for tool in problem.tools.values()) else None,
                    llm_calls=sum(tool.llm_calls for tool in tools))


def repeats_ids(plan: Plan) -> bool:
    return len(set(plan.ids())) != len(plan.tasks)


@SETTINGS
@given(case=cases(), data=st.data())
def test_compiled_measures_equal_the_python_ones(case: tuple[Problem, Plan], data: st.DataObject) -> None:
    problem, plan = case
    # a child sharing most task objects with its parent reads the parent's cached task records
    child = data.draw(mutations(problem, plan), label="child")
    for each in (plan, child, plan):
        fast = CompiledContext(problem, each).measures
        if repeats_ids(each):
            assert fast is None
        else:
            assert fast == python_measures(problem, each)


def reference_evaluation(problem: Problem, plan: Plan) -> Evaluation:
    """:func:`evaluate_plan` as it was: a plain context, the validator always run."""
    context = Context(problem, plan)
    errors = context.errors
    feasible = not errors and len(covered_criteria(problem, plan, errors)) == len(problem.criteria)
    values = {f.name: f(problem, plan, context) for f in FITNESSES}
    return Evaluation(values=values, feasible=feasible, errors=tuple(str(e) for e in errors))


@SETTINGS
@given(case=cases())
def test_evaluate_plan_equals_the_plain_evaluation(case: tuple[Problem, Plan]) -> None:
    problem, plan = case
    try:
        expected = reference_evaluation(problem, plan)
    except ValueError:  # a task needing more than a resource's capacity: both paths fail
        assert evaluate_plan(problem, plan, FITNESSES).failed is not None
        return
    assert evaluate_plan(problem, plan, FITNESSES) == expected


@settings(max_examples=60, deadline=None)
@given(case=cases())
def test_decoded_arrays_are_the_plan_graph(case: tuple[Problem, Plan]) -> None:
    problem, plan = case
    arrays = plan_arrays.plan_arrays(problem, plan)
    if repeats_ids(plan):
        assert arrays is None
        return
    assert arrays is not None
    ids = plan.ids()
    deps = plan.dependency_map()
    for i, tid in enumerate(ids):
        assert [ids[j] for j in arrays.dep_idx[arrays.dep_ptr[i]:arrays.dep_ptr[i + 1]]] == deps[tid]
        reads = [r for r in data_sources(plan.tasks[i]) if r in deps]
        assert [ids[j] for j in arrays.read_idx[arrays.read_ptr[i]:arrays.read_ptr[i + 1]]] == reads
    assert {ids[i] for i in np.flatnonzero(arrays.duplicate)} == set(duplicates(plan))
    known = [t.tool in problem.tools for t in plan.tasks]
    assert list(arrays.tool >= 0) == known


@settings(max_examples=40, deadline=None)
@given(case=cases())
def test_renewed_numberings_and_colliding_key_hashes_give_the_same_figures(
        case: tuple[Problem, Plan]) -> None:
    problem, plan = case
    expected = CompiledContext(problem, plan).measures
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(plan_arrays, "MAX_NUMBERS", 1)  # every compile starts a fresh numbering
        assert CompiledContext(problem, plan).measures == expected
        patch.setattr(plan_arrays, "HASH_BITS", 0)  # every duplicate key hashes to 0
        assert CompiledContext(problem, plan).measures == expected


def test_problem_and_plan_pickle_the_same_before_and_after_their_caches_are_built(
        refund: Problem) -> None:
    fresh = pickle.loads(pickle.dumps(refund))
    plan = Plan(tasks=(Task(id="t1", tool=next(iter(fresh.tools))),))
    before = pickle.dumps((fresh, plan))
    assert CompiledContext(fresh, plan).measures is not None  # builds every cache
    fresh.producers(fresh.criteria[0])
    assert pickle.dumps((fresh, plan)) == before
    assert pickle.loads(before) == (fresh, plan)
    assert replace(fresh, name="other").__dict__.get("_memo") is None
    assert replace(plan.tasks[0], name="other").__dict__.get("_memo") is None


@pytest.mark.parametrize("costs", [(0.1, 1e16, 0.3, -1e16, 0.7, 2.5e-3), (0.1, 1e16, 3, -1e16, 0.3)])
def test_cost_is_summed_in_plan_order_like_python(costs: tuple[float, ...]) -> None:
    """Costs whose float sum depends on the order and on how Python's ``sum`` adds (3.12 on:
    compensated for floats, not for ints): the compiled cost must be Python's, bit for bit."""
    tools = {f"x{i}": Tool(name=f"x{i}", duration=1.0, outputs=("out",), cost=c)
             for i, c in enumerate(costs)}
    problem = Problem(tools=tools, criteria=("out",))
    plan = Plan(tasks=tuple(Task(id=f"t{i}", tool=f"x{i}") for i in range(len(costs))))
    cost = next(f for f in FITNESSES if f.name == "cost")
    expected = sum((t.cost for t in tools.values()), 0.0)
    assert cost(problem, plan, CompiledContext(problem, plan)) == expected
    assert cost(problem, plan, Context(problem, plan)) == expected


APPROVAL_CHAIN = {
    "name": "chain", "objective": "refund", "initial": ["i"], "criteria": ["done", "told"],
    "policy": {"write_requires_approval": True},
    "tools": {
        "approve": {"duration": 1, "risk": "approval", "outputs": ["ok"]},
        "note": {"duration": 1, "outputs": ["n"]},
        "fetch": {"duration": 1, "inputs": ["i"], "outputs": ["x"]},
        "refund": {"duration": 1, "risk": "write", "inputs": ["x"], "outputs": ["done"]},
        "tell": {"duration": 1, "risk": "write", "outputs": ["told"]},
    }}


@pytest.mark.parametrize(("deps", "contributing", "errors"), [
    ({"r": ["m", "f"], "t": ["r"]}, 4, 0),  # the approval two deps up both writes, climbed to once
    ({"r": ["f"], "t": ["m"]}, 4, 1),       # only the second write climbs to it; the first lacks one
    ({"r": ["f"], "t": []}, 3, 2),          # no approval upstream of either write
])
def test_an_approval_only_upstream_by_deps_serves_its_write(
        deps: dict[str, list[str]], contributing: int, errors: int) -> None:
    """The climb from a write to the approvals behind it (no data read from them), which the
    generated plans above rarely need, in both the compiled figures and the Python definition:
    the approval serves (the note between is only a dep, so it does not)."""
    problem = problem_from_dict(APPROVAL_CHAIN)
    plan = plan_from_dict({"tasks": [
        {"id": "a", "tool": "approve"},
        {"id": "m", "tool": "note", "deps": ["a"]},
        {"id": "f", "tool": "fetch", "inputs": {"i": "$i"}},
        {"id": "r", "tool": "refund", "deps": deps["r"], "inputs": {"x": "$f.x"}, "idempotency_key": "k"},
        {"id": "t", "tool": "tell", "deps": deps["t"], "idempotency_key": "k2"},
    ]})
    measures = CompiledContext(problem, plan).measures
    assert measures == python_measures(problem, plan)
    assert measures is not None and (measures.contributing, measures.errors) == (contributing, errors)
