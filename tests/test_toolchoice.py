"""The tool-choice search: greedy plans are complete whenever a complete plan exists, every
decoded plan is valid and minimal, its priority reproduces the kernel's schedule, and the
hill-climb never makes a plan worse."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evolve import Plan, Problem, problem_from_dict, schedule, validate
from evolve.fitness.strategies import problems
from evolve.model.coverage import contributing_tasks, covered_criteria
from evolve.problems.synthetic import generate_problem, reachable_facts
from evolve.search.toolchoice import GREEDY_RULES, ToolChoice

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def catalog_problems() -> st.SearchStrategy[Problem]:
    return problems(max_facts=7, max_tools=8).filter(lambda p: p.template is None and bool(p.criteria))


def complete_plan_exists(problem: Problem) -> bool:
    return set(problem.criteria) <= reachable_facts(problem)


def check_sound(problem: Problem, plan: Plan) -> None:
    assert validate(problem, plan) == []
    assert covered_criteria(problem, plan, []) == list(problem.criteria)
    assert contributing_tasks(problem, plan) == {t.id for t in plan.tasks}


@SETTINGS
@given(catalog_problems(), st.sampled_from(GREEDY_RULES))
def test_greedy_plan_is_complete_whenever_one_exists(problem: Problem, rule: str) -> None:
    search = ToolChoice(problem)
    plan = search.plan_of(search.greedy(rule))
    if problem.limits.max_tasks is not None and plan is None:
        return  # reachable, but not within max_tasks by this rule: the search must find another
    if complete_plan_exists(problem):
        assert plan is not None
        check_sound(problem, plan)
    else:
        assert plan is None


@SETTINGS
@given(catalog_problems(), st.integers(0, 2**32 - 1))
def test_climbing_keeps_plans_sound_and_never_worse(problem: Problem, seed: int) -> None:
    search = ToolChoice(problem)
    choice = search.greedy("earliest_finish")
    before = search.plan_of(choice)
    if before is None:
        return
    rng = np.random.default_rng(seed)
    ms, n = search.climb(choice, rng)
    after = search.plan_of(choice, search.polish(choice, rng))
    assert after is not None
    check_sound(problem, after)
    assert len(after.tasks) == n
    assert schedule(problem, after).makespan <= ms + 1e-9
    assert ms <= schedule(problem, before).makespan + 1e-9


def test_a_tool_that_makes_two_facts_replaces_two_tools() -> None:
    problem = problem_from_dict({
        "initial": ["x"], "criteria": ["a", "b"],
        "tools": {
            "make_a": {"duration": 10, "inputs": ["x"], "outputs": ["a"]},
            "make_b": {"duration": 10, "inputs": ["x"], "outputs": ["b"]},
            "make_ab": {"duration": 12, "inputs": ["x"], "outputs": ["a", "b"]},
        },
        "limits": {"max_parallel": 1},
    })
    search = ToolChoice(problem)
    plan = search.improve(problem, search.plan_of(search.greedy("earliest_finish")) or Plan(),
                          np.random.default_rng(0))
    assert plan is not None
    assert [t.tool for t in plan.tasks] == ["make_ab"]
    assert schedule(problem, plan).makespan == 12


def test_generated_problem_initial_plans_are_sound_and_deterministic() -> None:
    problem = generate_problem(120, seed=3)
    search = ToolChoice(problem)
    plans = [search.greedy_initial(problem, np.random.default_rng(i)) for i in range(4)]
    for plan in plans:
        check_sound(problem, plan)
    again = [ToolChoice(problem).greedy_initial(problem, np.random.default_rng(i)) for i in range(4)]
    assert plans == again
