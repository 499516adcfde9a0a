"""The structural operators on refund.yaml plans: what each one does, that none closes a cycle
or mutates its parent, and that crossover keeps renamed references wired."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pytest
from evolved_plans import evolved
from hypothesis import given, settings
from hypothesis import strategies as st

from evolve.fitness.strategies import problems, valid_plans
from evolve.model.coverage import contributing_tasks, covered_criteria
from evolve.model.patch import renamed
from evolve.model.plan import Plan, Task, parse_ref
from evolve.model.problem import Problem
from evolve.model.validate import validate
from evolve.search.chaining import Builder, construct
from evolve.search.operators import (
    STRUCTURAL,
    add_dep,
    add_task,
    complete,
    crossover,
    descendants,
    names_any,
    prune,
    remove_dep,
    remove_task,
    reorder_priority,
    rewire,
    swap_tool,
    with_data_deps,
    without,
)

MUTATIONS = [fn for fn, _ in STRUCTURAL.mutations]
SEEDS = st.integers(0, 2**32 - 1)
WIRING = {"ref-task", "dep-exists", "unique-id", "no-cycle"}
"""Rules about the graph's wiring, as opposed to the catalog or the policy."""


def rules(problem: Problem, plan: Plan) -> set[str]:
    return {e.rule for e in validate(problem, plan)}


def valid_parent(problem: Problem, seed: int) -> Plan:
    plan = construct(problem, np.random.default_rng(seed))
    assert validate(problem, plan) == []
    return plan


@pytest.mark.parametrize("mutate", MUTATIONS, ids=lambda fn: fn.__name__)
@settings(max_examples=25, deadline=None)
@given(seed=SEEDS, steps=st.integers(0, 5))
def test_mutation_returns_none_or_an_acyclic_plan_and_leaves_parent_alone(
        refund: Problem, mutate: Callable[..., Plan | None], seed: int, steps: int) -> None:
    rng = np.random.default_rng(seed)
    parent = evolved(refund, rng, steps)
    before = parent.to_dict()
    child = mutate(refund, parent, rng)
    assert parent.to_dict() == before  # plans are values: the parent is untouched
    if child is None:
        return
    assert isinstance(child, Plan)
    new = rules(refund, child) - rules(refund, parent)
    assert "no-cycle" not in new and "unique-id" not in new
    if child.priority is not None:
        assert set(child.priority) <= {t.id for t in child.tasks}


@pytest.mark.parametrize("mutate", [add_task, swap_tool, rewire, add_dep, reorder_priority],
                         ids=lambda fn: fn.__name__)
@settings(max_examples=25, deadline=None)
@given(seed=SEEDS)
def test_mutation_keeps_a_valid_plan_valid(refund: Problem, mutate: Callable[..., Plan | None],
                                           seed: int) -> None:
    parent = valid_parent(refund, seed % 1000)
    child = mutate(refund, parent, np.random.default_rng(seed))
    if child is not None:
        assert [str(e) for e in validate(refund, child)] == []


def test_remove_dep_keeps_write_approval(refund: Problem) -> None:
    for seed in range(20):
        parent = valid_parent(refund, seed)
        child = remove_dep(refund, parent, np.random.default_rng(seed))
        assert child is None or "write-approval" not in rules(refund, child)


def test_remove_task_leaves_no_dangling_reference(refund: Problem) -> None:
    for seed in range(20):
        parent = valid_parent(refund, seed)
        child = remove_task(refund, parent, np.random.default_rng(seed))
        assert child is not None
        assert not rules(refund, child) & {"ref-task", "dep-exists"}


def test_add_task_adds_one_task_with_available_inputs(refund: Problem) -> None:
    for seed in range(10):
        parent = valid_parent(refund, seed)
        child = add_task(refund, parent, np.random.default_rng(seed))
        assert child is not None
        assert child.tasks[: len(parent.tasks)] == parent.tasks
        added = child.tasks[len(parent.tasks):]
        assert len(added) >= 1  # one task, plus an approval when it is a write
        assert not rules(refund, child) & {"ref-task", "ref-initial", "ref-dep", "input-bound"}


def test_remove_task_removes_and_rewires_to_a_remaining_producer(refund: Problem) -> None:
    # Two producers of `order`: removing t1 must rebind t2 to t9, not leave it dangling.
    plan = Plan(tasks=(
        Task("t1", "orders.get", inputs={"order_id": "$order_id"}),
        Task("t9", "orders.search", inputs={"complaint": "$complaint"}),
        Task("t2", "payments.lookup", deps=("t1",), inputs={"order": "$t1.order"}),
    ))
    for seed in range(30):
        child = remove_task(refund, plan, np.random.default_rng(seed))
        assert child is not None and len(child.tasks) == 2
        if "t1" not in child.by_id():
            t2 = child.by_id()["t2"]
            assert dict(t2.inputs) == {"order": "$t9.order"} and t2.deps == ("t9",)
            assert validate(refund, child) == []
            return
    pytest.fail("remove_task never picked t1 in 30 seeds")


def test_remove_task_never_removes_template_tasks(refund: Problem) -> None:
    template = Plan(tasks=(Task("t1", "orders.get", inputs={"order_id": "$order_id"}),))
    problem = replace(refund, template=template)
    for seed in range(20):
        plan = construct(problem, np.random.default_rng(seed))
        child = remove_task(problem, plan, np.random.default_rng(seed))
        assert child is not None and "t1" in child.by_id()
    assert remove_task(problem, template, np.random.default_rng(0)) is None


def test_swap_tool_changes_one_tool_for_one_making_the_same_facts(refund: Problem) -> None:
    for seed in range(15):
        parent = valid_parent(refund, seed)
        child = swap_tool(refund, parent, np.random.default_rng(seed))
        assert child is not None
        before, after = parent.by_id(), child.by_id()
        changed = [tid for tid in before if tid in after and before[tid].tool != after[tid].tool]
        assert len(changed) == 1
        old, new = refund.tools[before[changed[0]].tool], refund.tools[after[changed[0]].tool]
        # any risk may replace any other (examples/refund.yaml has a read that makes a receipt),
        # but an approval is only replaced by an approval, and a new write gets its key
        assert (old.risk == "approval") == (new.risk == "approval")
        assert new.risk != "write" or after[changed[0]].idempotency_key
        refs = [parse_ref(v) for t in child.tasks for v in t.inputs.values()]
        readers_need = {r.fact for r in refs if r is not None and r.task == changed[0]}
        assert readers_need <= set(new.outputs)


def test_rewire_rebinds_one_input_to_the_same_fact(refund: Problem) -> None:
    plan = Plan(tasks=(
        Task("t1", "orders.get", inputs={"order_id": "$order_id"}),
        Task("t9", "orders.search", inputs={"complaint": "$complaint"}),
        Task("t2", "payments.lookup", deps=("t1",), inputs={"order": "$t1.order"}),
    ))
    child = rewire(refund, plan, np.random.default_rng(0))
    assert child is not None
    t2 = child.by_id()["t2"]
    assert dict(t2.inputs) == {"order": "$t9.order"} and t2.deps == ("t9",)
    assert validate(refund, child) == []


def test_add_dep_and_reorder_priority(refund: Problem) -> None:
    parent = valid_parent(refund, 3)
    child = add_dep(refund, parent, np.random.default_rng(3))
    assert child is not None
    assert sum(len(t.deps) for t in child.tasks) == sum(len(t.deps) for t in parent.tasks) + 1
    reordered = reorder_priority(refund, parent, np.random.default_rng(3))
    assert reordered is not None and reordered.tasks == parent.tasks
    assert sorted(reordered.priority or ()) == sorted(parent.ids())


def test_prune_removes_exactly_the_useless_tasks(refund: Problem) -> None:
    parent = valid_parent(refund, 0)
    assert prune(refund, parent, np.random.default_rng(0)) is None  # constructed plans are lean
    useless = Task("x1", "analytics.log_contact", inputs={"complaint": "$complaint"})
    padded = Plan(tasks=(*parent.tasks, useless))
    assert "x1" not in contributing_tasks(refund, padded)
    child = prune(refund, padded, np.random.default_rng(0))
    assert child is not None and child.tasks == parent.tasks


def test_complete_chains_the_missing_criteria(refund: Problem) -> None:
    partial = Plan(tasks=(Task("t1", "orders.get", inputs={"order_id": "$order_id"}),))
    child = complete(refund, partial, np.random.default_rng(0))
    assert child is not None and child.tasks[0] == partial.tasks[0]
    errors = validate(refund, child)
    assert errors == [] and covered_criteria(refund, child, errors) == list(refund.criteria)
    assert complete(refund, child, np.random.default_rng(0)) is None


@settings(max_examples=60, deadline=None)
@given(seed=SEEDS, steps_a=st.integers(0, 4), steps_b=st.integers(0, 4))
def test_crossover_keeps_references_wired(refund: Problem, seed: int, steps_a: int,
                                          steps_b: int) -> None:
    rng = np.random.default_rng(seed)
    a, b = evolved(refund, rng, steps_a), evolved(refund, rng, steps_b)
    child = crossover(refund, a, b, rng)
    assert child is not None
    # Renaming never breaks wiring: no wiring error the parents did not already have.
    assert not (rules(refund, child) & WIRING) - rules(refund, a) - rules(refund, b)
    tools = {t.tool for t in (*a.tasks, *b.tasks)}
    assert {t.tool for t in child.tasks} <= tools
    if "dep-exists" not in rules(refund, a) | rules(refund, b):
        for task in child.tasks:
            assert set(task.deps) <= set(child.by_id())


def test_crossover_renames_clashing_ids_and_their_references(refund: Problem) -> None:
    """Both parents call their first task t1, but with different tools: the one from b must be
    renamed, and whoever reads it must follow the new name."""
    a = Plan(tasks=(
        Task("t1", "policy.search", inputs={"complaint": "$complaint"}),
        Task("t2", "orders.get", inputs={"order_id": "$order_id"}),
        Task("t3", "payments.lookup", deps=("t2",), inputs={"order": "$t2.order"}),
        Task("t4", "runtime.compare_captures", deps=("t2", "t3"),
             inputs={"order": "$t2.order", "captures": "$t3.captures"}),
    ))
    b = Plan(tasks=(
        Task("t1", "orders.get", inputs={"order_id": "$order_id"}),
        Task("t2", "payments.lookup", deps=("t1",), inputs={"order": "$t1.order"}),
        Task("t3", "runtime.compare_captures", deps=("t1", "t2"),
             inputs={"order": "$t1.order", "captures": "$t2.captures"}),
    ))
    problem = replace(refund, criteria=("policy", "finding"), policy=replace(refund.policy))
    seen_b = False
    for seed in range(40):
        child = crossover(problem, a, b, np.random.default_rng(seed))
        assert child is not None
        assert not rules(problem, child) & WIRING, [str(e) for e in validate(problem, child)]
        assert validate(problem, child) == []
        ids = child.ids()
        assert len(ids) == len(set(ids))
        seen_b |= any(t.tool == "orders.get" and t.id != "t2" for t in child.tasks)
    assert seen_b, "crossover never inherited b's finding in 40 seeds"


def test_crossover_without_criteria_is_not_applicable(refund: Problem) -> None:
    problem = replace(refund, criteria=())
    plan = valid_parent(refund, 0)
    assert crossover(problem, plan, plan, np.random.default_rng(0)) is None


def without_rebuilding(problem: Problem, plan: Plan, removed: set[str], rng: np.random.Generator) -> Plan:
    """The reference ``without``: each rewired task's descendants walked in a successor map
    made afresh from the builder's tasks (what the incremental map must always equal)."""
    kept = Plan(tasks=tuple(t for t in plan.tasks if t.id not in removed), priority=plan.priority)
    builder = Builder(problem, kept, rng)
    for task in kept.tasks:
        if not any(d in removed for d in task.deps):
            continue
        builder.excluded = {task.id} | descendants(builder.tasks, task.id)
        inputs = dict(task.inputs)
        for key, value in task.inputs.items():
            ref = parse_ref(value)
            if ref is not None and ref.task in removed:
                inputs[key] = builder.provide(ref.fact) or value
        new = replace(task, inputs=inputs, deps=tuple(d for d in task.deps if d not in removed))
        builder.tasks[builder.tasks.index(task)] = with_data_deps(new, new)
    return builder.plan()


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_without_keeps_its_successor_map_as_a_rebuild_would(data: st.DataObject) -> None:
    problem = data.draw(problems(max_facts=7, max_tools=8))
    plan = data.draw(valid_plans(problem, max_tasks=9))
    ids = [t.id for t in plan.tasks]
    if not ids:
        return
    removed = set(data.draw(st.lists(st.sampled_from(ids), min_size=1, max_size=3)))
    seed = data.draw(st.integers(0, 2**16))
    got = without(problem, plan, removed, np.random.default_rng(seed))
    assert got == without_rebuilding(problem, plan, removed, np.random.default_rng(seed))


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_a_task_naming_no_renamed_id_is_left_as_it_is(data: st.DataObject) -> None:
    """crossover keeps a task from ``b`` itself when :func:`names_any` says renaming would not
    touch it: then renaming gives an equal task."""
    problem = data.draw(problems(max_facts=7, max_tools=8))
    plan = data.draw(valid_plans(problem, max_tasks=9))
    ids = [t.id for t in plan.tasks]
    if not ids:
        return
    chosen = data.draw(st.lists(st.sampled_from(ids), max_size=3))
    moved = {old: f"t{100 + i}" for i, old in enumerate(chosen)}
    for task in plan.tasks:
        if not names_any(task, moved):
            assert renamed(task, moved) == task
        elif any(d in moved for d in task.deps):
            assert renamed(task, moved) != task


def add_task_scanning(problem: Problem, plan: Plan, rng: np.random.Generator) -> Plan | None:
    """:func:`add_task` as it was: every usable tool asked, input by input, whether the builder
    finds it a reference (the oracle of the one-set version)."""
    builder = Builder(problem, plan, rng)
    ready = [t for t in builder.usable_tools(problem.tools.values())
             if all(builder.existing(f) is not None for f in t.inputs)]
    if not ready:
        return None
    return builder.plan() if builder.add(ready[0]) is not None else None


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_add_task_picks_what_asking_every_tool_would(data: st.DataObject) -> None:
    problem = data.draw(problems(max_facts=7, max_tools=8))
    plan = data.draw(valid_plans(problem, max_tasks=9))
    seed = data.draw(st.integers(0, 2**16))
    got = add_task(problem, plan, np.random.default_rng(seed))
    assert got == add_task_scanning(problem, plan, np.random.default_rng(seed))


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_swap_tool_options_are_those_of_the_whole_catalog(data: st.DataObject) -> None:
    """swap_tool looks for replacements among the makers of one needed fact: the same tools, in
    the same (catalog) order, as a scan of the catalog finds."""
    problem = data.draw(problems(max_facts=7, max_tools=8))
    for fact in {f for tool in problem.tools.values() for f in tool.outputs}:
        for needed in ({fact}, {fact, *list(problem.criteria)[:1]}):
            scanned = [t for t in problem.tools.values() if needed <= set(t.outputs)]
            among = [t for t in problem.producers(min(needed)) if needed <= set(t.outputs)]
            assert among == scanned
