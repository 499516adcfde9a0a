"""The validator: one test per rule, each breaking exactly that rule in an otherwise valid plan,
plus a property over random graphs: any plan with a dependency cycle is rejected."""

from __future__ import annotations

import itertools
import re
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from evolve.model.graph import topological_order
from evolve.model.plan import Plan, Task
from evolve.model.problem import Limits, Policy, Problem, Tool
from evolve.model.validate import PlanError, validate

TOOLS = {
    "a": Tool("a", 100, inputs=("x",), outputs=("y",), scope="s1"),
    "b": Tool("b", 100, inputs=("y",), outputs=("z",)),
    "secret": Tool("secret", 10, inputs=("x",), outputs=("y",), scope="s2"),
    "ok": Tool("ok", 50, inputs=("x",), outputs=("approval",), risk="approval"),
    "w": Tool("w", 30, inputs=("z",), outputs=("done",), scope="s1", risk="write"),
    "free": Tool("free", 5, outputs=("y",)),
}
PROBLEM = Problem(
    tools=TOOLS, initial=("x",), criteria=("done",), scopes=("s1",),
    limits=Limits(max_tasks=5), policy=Policy(write_requires_approval=True),
)
T1 = Task("t1", "a", inputs={"x": "$x"})
T2 = Task("t2", "b", deps=("t1",), inputs={"y": "$t1.y"})
T3 = Task("t3", "ok", inputs={"x": "$x"})
T4 = Task("t4", "w", deps=("t2", "t3"), inputs={"z": "$t2.z"}, idempotency_key="w:t4")
VALID = Plan(tasks=(T1, T2, T3, T4))


def rules(errors: list[PlanError]) -> set[str]:
    return {e.rule for e in errors}


def with_task(plan: Plan, task: Task) -> Plan:
    """``plan`` with the task of the same id replaced by ``task``."""
    return Plan(tasks=tuple(task if t.id == task.id else t for t in plan.tasks), priority=plan.priority)


def only_error(plan: Plan, rule: str, problem: Problem = PROBLEM) -> PlanError:
    """The single error of ``plan``; the test fails if there are others, so each test pins one rule."""
    errors = validate(problem, plan)
    assert [e.rule for e in errors] == [rule], [str(e) for e in errors]
    return errors[0]


def test_valid_plan_has_no_errors() -> None:
    assert validate(PROBLEM, VALID) == []


def test_unique_id() -> None:
    plan = Plan(tasks=(*VALID.tasks, Task("t3", "ok", inputs={"x": "$x"})))
    error = only_error(plan, "unique-id")
    assert error.task == "t3" and "'t3'" in error.message


def test_dep_exists_missing_task() -> None:
    error = only_error(with_task(VALID, replace(T3, deps=("t9",))), "dep-exists")
    assert error.task == "t3" and "t9" in error.message


def test_self_dependency_is_a_cycle_of_one() -> None:
    error = only_error(with_task(VALID, replace(T3, deps=("t3",))), "no-cycle")
    assert "itself" in error.message and error.task == "t3"


def test_no_cycle_names_tasks_on_and_behind_it() -> None:
    # t1 -> t2 -> t5 -> t1 is the cycle; t4 waits on t2, so it is stuck behind it.
    t1 = replace(T1, deps=("t5",))
    t5 = Task("t5", "free", deps=("t2",))
    problem = replace(PROBLEM, limits=Limits())
    plan = Plan(tasks=(t1, T2, T3, T4, t5))
    error = only_error(plan, "no-cycle", problem)
    assert error.task is None
    cycle_text, _, behind = error.message.partition("(blocked behind it:")
    on_cycle = re.findall(r"t\d", cycle_text)
    assert set(on_cycle) == {"t1", "t2", "t5"}
    assert on_cycle[0] == on_cycle[-1]  # the cycle is closed in the message
    assert re.findall(r"t\d", behind) == ["t4"]


def test_tool_registered() -> None:
    error = only_error(Plan(tasks=(*VALID.tasks, Task("t5", "nope"))), "tool-registered")
    assert error.task == "t5" and "'nope'" in error.message


def test_scope_granted() -> None:
    error = only_error(with_task(VALID, replace(T1, tool="secret")), "scope-granted")
    assert error.task == "t1" and "s2" in error.message


def test_scope_none_grants_everything() -> None:
    plan = with_task(VALID, replace(T1, tool="secret"))
    assert validate(replace(PROBLEM, scopes=None), plan) == []


def test_output_declared() -> None:
    error = only_error(with_task(VALID, replace(T1, outputs=("y", "z"))), "output-declared")
    assert error.task == "t1" and "'z'" in error.message


def test_input_bound_missing() -> None:
    error = only_error(with_task(VALID, replace(T3, inputs={})), "input-bound")
    assert error.task == "t3" and "'x'" in error.message


def test_input_bound_to_wrong_fact_or_literal() -> None:
    for value in ("$t1.other", "literal", 42):
        plan = with_task(VALID, replace(T2, inputs={"y": value}))
        assert "input-bound" in rules(validate(PROBLEM, plan)), value


def test_idempotency_key() -> None:
    error = only_error(with_task(VALID, replace(T4, idempotency_key=None)), "idempotency-key")
    assert error.task == "t4"


def test_ref_initial() -> None:
    plan = with_task(VALID, replace(T3, inputs={"x": "$x", "note": "$unknown"}))
    error = only_error(plan, "ref-initial")
    assert error.task == "t3" and "$unknown" in error.message


def test_ref_task() -> None:
    plan = with_task(VALID, replace(T3, inputs={"x": "$x", "note": "$t9.y"}))
    error = only_error(plan, "ref-task")
    assert error.task == "t3" and "t9" in error.message


def test_ref_task_in_when_condition() -> None:
    plan = with_task(VALID, replace(T3, when="$t9.y > 3"))
    assert only_error(plan, "ref-task").task == "t3"


def test_ref_dep() -> None:
    error = only_error(with_task(VALID, replace(T2, deps=())), "ref-dep")
    assert error.task == "t2" and "t1" in error.message


def test_ref_output() -> None:
    plan = with_task(VALID, replace(T2, inputs={"y": "$t1.y", "extra": "$t1.z"}))
    error = only_error(plan, "ref-output")
    assert error.task == "t2" and "'z'" in error.message


def test_ref_output_respects_declared_outputs() -> None:
    """A task that declares a subset of its tool's outputs makes only those."""
    t5 = Task("t5", "free", outputs=("y",))
    plan = Plan(tasks=(t5, Task("t6", "b", deps=("t5",), inputs={"y": "$t5.y"})))
    free = replace(TOOLS["free"], outputs=("y", "q"))
    problem = replace(PROBLEM, policy=Policy(), tools={**TOOLS, "free": free})
    assert validate(problem, plan) == []
    bad = Plan(tasks=(t5, Task("t6", "b", deps=("t5",), inputs={"y": "$t5.y", "q": "$t5.q"})))
    assert only_error(bad, "ref-output", problem).task == "t6"


def test_write_approval() -> None:
    error = only_error(with_task(VALID, replace(T4, deps=("t2",))), "write-approval")
    assert error.task == "t4"


def test_write_approval_may_be_transitive() -> None:
    plan = Plan(tasks=(replace(T1, deps=("t3",)), T2, T3, replace(T4, deps=("t2",))))
    assert validate(PROBLEM, plan) == []


def test_write_approval_not_required_without_policy() -> None:
    plan = with_task(VALID, replace(T4, deps=("t2",)))
    assert validate(replace(PROBLEM, policy=Policy()), plan) == []


def test_max_tasks() -> None:
    plan = Plan(tasks=(*VALID.tasks, Task("t5", "free"), Task("t6", "free")))
    error = only_error(plan, "max-tasks")
    assert "6" in error.message and "5" in error.message


def test_template_task_missing() -> None:
    problem = replace(PROBLEM, template=Plan(tasks=(T3,)))
    assert validate(problem, VALID) == []
    plan = Plan(tasks=(T1, T2, replace(T3, id="t7"), replace(T4, deps=("t2", "t7"))))
    error = only_error(plan, "template", problem)
    assert error.task == "t3"


def test_template_dependency_dropped() -> None:
    problem = replace(PROBLEM, template=Plan(tasks=(T1, replace(T3, deps=("t1",)))))
    error = only_error(VALID, "template", problem)
    assert error.task == "t3" and "t1" in error.message


def test_priority() -> None:
    plan = replace(VALID, priority=("t1", "t9"))
    error = only_error(plan, "priority")
    assert "t9" in error.message


def test_every_error_is_reported_not_just_the_first() -> None:
    plan = Plan(tasks=(replace(T1, tool="nope"), replace(T4, deps=(), idempotency_key=None)))
    found = rules(validate(PROBLEM, plan))
    assert {"tool-registered", "idempotency-key", "write-approval", "ref-task"} <= found


@st.composite
def cyclic_plans(draw: st.DrawFn) -> Plan:
    """Random DAG over t0..tn-1 plus a cycle of length >= 2 through a random subset."""
    n = draw(st.integers(2, 12))
    deps: list[set[str]] = []
    for i in range(n):
        earlier = [f"t{j}" for j in range(i)]
        deps.append(set(draw(st.lists(st.sampled_from(earlier), max_size=3))) if earlier else set())
    members = draw(st.lists(st.integers(0, n - 1), min_size=2, max_size=n, unique=True))
    for prev, cur in zip(members, members[1:] + members[:1]):
        deps[cur].add(f"t{prev}")
    order = draw(st.permutations(range(n)))
    return Plan(tasks=tuple(Task(f"t{i}", "free", deps=tuple(sorted(deps[i]))) for i in order))


@settings(max_examples=150, deadline=None)
@given(cyclic_plans())
def test_any_plan_with_a_cycle_is_rejected(plan: Plan) -> None:
    problem = Problem(tools={"free": TOOLS["free"]})
    errors = [e for e in validate(problem, plan) if e.rule == "no-cycle"]
    assert len(errors) == 1
    message = errors[0].message
    cycle_text, _, behind_text = message.partition("(blocked behind it:")
    cycle = re.findall(r"t\d+", cycle_text)
    by_id = plan.by_id()
    # The named cycle is a real one, in dependency order: each task depends on the one before.
    assert cycle[0] == cycle[-1] and len(cycle) >= 3
    for before, after in itertools.pairwise(cycle):
        assert before in by_id[after].deps
    # Tasks named on or behind it are exactly those no topological order can place.
    stuck = set(by_id) - set(topological_order({t.id: list(t.deps) for t in plan.tasks}))
    assert set(cycle) | set(re.findall(r"t\d+", behind_text)) == stuck
