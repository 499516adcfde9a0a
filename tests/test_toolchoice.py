"""The tool-choice search: greedy plans are complete whenever a complete plan exists, every
decoded plan is valid and minimal, its priority reproduces the kernel's schedule, the
hill-climb never makes a plan worse, and the annealing on work never makes its floor worse and
reports the floor a plain-Python computation gives."""

from __future__ import annotations

import pickle

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evolve import Plan, Problem, problem_from_dict, schedule, validate
from evolve.fitness.strategies import problems
from evolve.model.coverage import contributing_tasks, covered_criteria
from evolve.model.graph import longest_tails, successors, topological_order
from evolve.problems.synthetic import generate_problem, reachable_facts
from evolve.search import anneal_kernels
from evolve.search import toolchoice_kernels as k
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


def plan_floor(problem: Problem, plan: Plan) -> tuple[float, float]:
    """Plain Python: the plan's work on its busiest limited resource over the capacity, and its
    longest dependency path (durations summed): the oracle of the annealing's floor."""
    duration = {t.id: problem.tools[t.tool].duration for t in plan.tasks}
    limited = ([(float(problem.limits.max_parallel), {t.id: 1.0 for t in plan.tasks})]
               if problem.limits.max_parallel is not None else [])
    limited += [(float(cap), {t.id: float(problem.tools[t.tool].uses.get(name, 0.0)) for t in plan.tasks})
                for name, cap in problem.resources.items() if cap > 0]
    work = max((sum(duration[i] * use[i] for i in duration) / cap for cap, use in limited), default=0.0)
    deps = {t.id: list(t.deps) for t in plan.tasks}
    tails = longest_tails(topological_order(deps), successors(deps), duration, from_zero=True)
    return work, max(tails.values(), default=0.0)


@SETTINGS
@given(catalog_problems(), st.integers(0, 2**32 - 1), st.booleans())
def test_annealing_keeps_plans_sound_never_worse_and_says_their_floor(problem: Problem, seed: int,
                                                                        floor: bool) -> None:
    search = ToolChoice(problem)
    choice = search.greedy("earliest_finish")
    before = search.plan_of(choice)
    if before is None:
        return
    work0, path0 = plan_floor(problem, before)
    value, n, evals = anneal_kernels.work_anneal(search.tables, choice, np.random.default_rng(seed),
                                                 300, 1.5, 0.05, 3, floor)
    after = search.plan_of(choice)
    assert after is not None
    check_sound(problem, after)
    work, path = plan_floor(problem, after)
    expected = max(work, path) if floor else work
    assert len(after.tasks) == n and 1 <= evals <= 300
    assert abs(value - expected) <= 1e-6 * max(1.0, expected)
    assert expected <= (max(work0, path0) if floor else work0) + 1e-6
    again = search.greedy("earliest_finish")
    anneal_kernels.work_anneal(search.tables, again, np.random.default_rng(seed), 300, 1.5, 0.05, 3, floor)
    assert again.tolist() == choice.tolist()


@SETTINGS
@given(st.integers(8, 160), st.integers(0, 2**32 - 1))
def test_critical_length_is_the_longest_dependency_path(tools: int, seed: int) -> None:
    problem = generate_problem(tools, seed % 1000)
    search = ToolChoice(problem)
    choice = search.greedy("earliest_finish", np.random.default_rng(seed), 1.0)
    plan = search.plan_of(choice)
    if plan is None:
        return
    nt = len(search.compiled.tools)
    task_of, order, color = k.decode_buffers(nt)
    n = k.decode(search.tables, choice, task_of, order, color)
    length = anneal_kernels.critical_length(search.tables, choice, task_of, order, n, np.empty(nt))
    assert abs(length - plan_floor(problem, plan)[1]) <= 1e-6 * max(1.0, length)


@SETTINGS
@given(st.integers(8, 160), st.integers(0, 2**32 - 1))
def test_refreshing_the_dormant_facts_keeps_the_plan(tools: int, seed: int) -> None:
    """Only facts the plan does not need are re-pointed: it decodes to the same tasks."""
    problem = generate_problem(tools, seed % 1000)
    search = ToolChoice(problem)
    choice = search.greedy("bottleneck", np.random.default_rng(seed), 1.0)
    before = search.plan_of(choice)
    nt, nf = len(search.compiled.tools), len(choice)
    task_of, order, color = k.decode_buffers(nt)
    if k.decode(search.tables, choice, task_of, order, color) < 0:
        return
    needed, facts = np.zeros(nf, dtype=np.bool_), np.empty(nf, dtype=np.int64)
    k.needed_facts(search.tables, task_of, needed, facts)
    anneal_kernels.refresh_dormant(search.tables, choice, task_of, needed, np.empty(nt))
    assert search.plan_of(choice) == before


def test_big_generated_problems_anneal_their_first_plans_and_beat_greedy_work() -> None:
    """Past ``ANNEAL_MIN_TASKS`` the first plans are annealed: sound, deterministic, and with less
    work than the least-work greedy rule gives (on this problem by far: the rule counts a shared
    derivation once per reader)."""
    problem = generate_problem(600, seed=1)
    search = ToolChoice(problem)
    assert search.anneal_evals > 0 and search.probe == 0
    greedy = search.plan_of(search.greedy("least_work"))
    assert greedy is not None
    plans = [search.greedy_initial(problem, np.random.default_rng(i)) for i in range(2)]
    for plan in plans:
        check_sound(problem, plan)
        assert plan_floor(problem, plan)[0] < plan_floor(problem, greedy)[0]
    assert plans == [ToolChoice(problem).greedy_initial(problem, np.random.default_rng(i)) for i in range(2)]


def test_small_problems_are_not_annealed(refund: Problem) -> None:
    assert ToolChoice(refund).anneal_evals == 0


def test_plans_made_again_share_their_task_objects_and_equal_fresh_ones() -> None:
    """plan_of hands back a task it made before when it is made of the same things (what is kept
    on a task is then reused); the plan is the same value as one built from scratch, and a pickled
    ToolChoice (shipped to a worker) starts without those tasks."""
    problem = generate_problem(300, 3)
    choice = ToolChoice(problem)
    genome = choice.greedy("least_work")
    first, again = choice.plan_of(genome), choice.plan_of(genome)
    assert first is not None and again is not None and first.tasks
    assert all(a is b for a, b in zip(first.tasks, again.tasks))
    fresh = ToolChoice(problem).plan_of(genome)
    assert fresh == first and all(a is not b for a, b in zip(fresh.tasks, first.tasks))
    shipped = pickle.loads(pickle.dumps(choice))
    assert shipped.made == {} and choice.made
    assert shipped.plan_of(genome) == first
