"""Plan patches: diff_plans and apply_patch are inverse, and an untrusted patch is checked."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evolve.model.errors import InputError
from evolve.model.patch import apply_patch, diff_plans, renamed
from evolve.model.plan import Plan, Task
from evolve.model.problem import Problem
from evolve.search.chaining import construct
from evolve.search.operators import STRUCTURAL

A = Plan(tasks=(
    Task("t1", "orders.get", inputs={"order_id": "$order_id"}),
    Task("t2", "payments.lookup", deps=("t1",), inputs={"order": "$t1.order"}),
))


def test_diff_of_equal_plans_is_empty() -> None:
    assert diff_plans(A, A) == {}
    assert apply_patch(A, {}) == A


def test_diff_lists_only_changed_fields() -> None:
    b = Plan(tasks=(A.tasks[0], Task("t2", "payments.ledger_export", deps=("t1",),
                                      inputs={"order": "$t1.order"})))
    assert diff_plans(A, b) == {"update": [{"id": "t2", "tool": "payments.ledger_export"}]}


def test_diff_removes_optional_fields_with_none() -> None:
    a = Plan(tasks=(Task("t1", "w", idempotency_key="k", when="$x > 1"),))
    b = Plan(tasks=(Task("t1", "w"),))
    patch = diff_plans(a, b)
    assert patch == {"update": [{"id": "t1", "idempotency_key": None, "when": None}]}
    assert apply_patch(a, patch) == b


def test_patch_add_remove_priority() -> None:
    patch = {"remove": ["t2"], "add": [{"id": "t3", "tool": "policy.search",
                                        "inputs": {"complaint": "$complaint"}}],
             "priority": ["t3", "t1"], "reason": "faster"}
    child = apply_patch(A, patch)
    assert child.ids() == ["t1", "t3"]
    assert child.priority == ("t3", "t1")
    assert child.tasks[1] == Task("t3", "policy.search", inputs={"complaint": "$complaint"})


def random_plan(data: st.DataObject, ids: list[str]) -> Plan:
    """A random plan over a shared pool of ids, so pairs overlap, differ and reorder."""
    chosen = data.draw(st.lists(st.sampled_from(ids), unique=True, max_size=len(ids)))
    tasks = []
    for tid in chosen:
        tasks.append(Task(
            id=tid,
            tool=data.draw(st.sampled_from(["a", "b", "c"])),
            deps=tuple(data.draw(st.lists(st.sampled_from(ids), unique=True, max_size=2))),
            inputs=data.draw(st.dictionaries(st.sampled_from(["x", "y"]),
                                             st.sampled_from(["$x", "$t1.y", "lit"]), max_size=2)),
            outputs=tuple(data.draw(st.lists(st.sampled_from(["x", "y"]), unique=True, max_size=2))),
            when=data.draw(st.one_of(st.none(), st.just("$t1.y > 2"))),
            idempotency_key=data.draw(st.one_of(st.none(), st.just("key"))),
            name=data.draw(st.one_of(st.none(), st.just("named"))),
        ))
    priority = data.draw(st.one_of(st.none(), st.permutations(chosen).map(tuple)))
    return Plan(tasks=tuple(tasks), priority=priority)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_apply_diff_round_trip_random_pairs(data: st.DataObject) -> None:
    ids = ["t1", "t2", "t3", "t4", "t5"]
    a, b = random_plan(data, ids), random_plan(data, ids)
    patch = diff_plans(a, b)
    got = apply_patch(a, patch)
    # Task order: the patch keeps surviving tasks in the parent's order and appends new ones,
    # so compare the set of tasks and the priority; and the order when only edits happened.
    assert got.by_id() == b.by_id()
    assert len(got.tasks) == len(b.tasks)
    if b.priority is not None:
        assert got.priority == b.priority


def test_round_trip_when_child_drops_priority() -> None:
    a = Plan(tasks=A.tasks, priority=("t2", "t1"))
    b = Plan(tasks=A.tasks)
    assert apply_patch(a, diff_plans(a, b)) == b


def test_round_trip_keeps_task_order() -> None:
    b = Plan(tasks=(A.tasks[1], A.tasks[0]))
    assert apply_patch(A, diff_plans(A, b)) == b


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_round_trip_on_operator_children(refund: Problem, seed: int) -> None:
    """The engine records diff_plans(parent, child) for every child: it must rebuild the child."""
    rng = np.random.default_rng(seed)
    parent = construct(refund, rng)
    for mutate, _ in STRUCTURAL.mutations:
        child = mutate(refund, parent, rng)
        if child is None:
            continue
        rebuilt = apply_patch(parent, diff_plans(parent, child))
        assert rebuilt.by_id() == child.by_id(), mutate.__name__
        assert (rebuilt.priority or None) == (child.priority or None), mutate.__name__


MALFORMED: list[tuple[Any, str, str]] = [
    (["t1"], "", "expected a mapping"),
    ({"delete": ["t1"]}, "delete", "unknown key"),
    ({"remove": "t1"}, "remove", "list of strings"),
    ({"remove": ["t9"]}, "remove[0]", "no task 't9'"),
    ({"update": {"id": "t1"}}, "update", "list of task updates"),
    ({"update": [{"tool": "x"}]}, "update[0].id", "non-empty string"),
    ({"update": [{"id": "t9", "tool": "x"}]}, "update[0].id", "no task 't9'"),
    ({"update": [{"id": "t1", "colour": "red"}]}, "update[0].colour", "unknown key"),
    ({"update": [{"id": "t1", "deps": "t2"}]}, "update[0].deps", "list of strings"),
    ({"add": {"id": "t3"}}, "add", "list of tasks"),
    ({"add": [{"id": "t3"}]}, "add[0].tool", "missing"),
    ({"add": [{"id": "t1", "tool": "x"}]}, "add[0].id", "already exists"),
    ({"add": [{"id": "t.3", "tool": "x"}]}, "add[0].id", "is not a valid name"),
    ({"priority": [1, 2]}, "priority[0]", "non-empty string"),
]


@pytest.mark.parametrize(("patch", "key_path", "words"), MALFORMED,
                         ids=[f"{i}-{case[1]}" for i, case in enumerate(MALFORMED)])
def test_malformed_patch_is_rejected(patch: Any, key_path: str, words: str) -> None:
    with pytest.raises(InputError) as info:
        apply_patch(A, patch, source="llm-reply")
    assert info.value.source == "llm-reply"
    assert info.value.path == key_path
    assert words in info.value.message


def test_rejected_patch_leaves_the_plan_untouched() -> None:
    before = A.to_dict()
    with pytest.raises(InputError):
        apply_patch(A, {"remove": ["t1"], "add": [{"id": "t2", "tool": "x"}]})
    assert A.to_dict() == before


def test_renamed_rewrites_id_deps_inputs_and_when() -> None:
    task = Task("t2", "b", deps=("t1",), inputs={"y": "$t1.y", "x": "$x"}, when="$t1.y > $t10.z")
    out = renamed(task, {"t1": "t5", "t2": "t6"})
    assert out.id == "t6" and out.deps == ("t5",)
    assert dict(out.inputs) == {"y": "$t5.y", "x": "$x"}
    assert out.when == "$t5.y > $t10.z"
