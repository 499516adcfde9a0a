"""The scheduler: a worked example checked by hand, and properties over random DAGs with random
resource demands, including an independent time-indexed serial SGS to compare start times with.
Every test runs on both schedulers, the kernel-backed ``schedule`` and the Python oracle
``reference_schedule`` (that the two agree exactly is tests/test_schedule_kernel.py)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evolve.model.plan import Plan, Task
from evolve.model.problem import Limits, Problem, Tool
from evolve.scheduling import Schedule, reference_schedule, schedule

Scheduler = Callable[[Problem, Plan], Schedule]
both = pytest.mark.parametrize("scheduler", [schedule, reference_schedule], ids=["kernel", "reference"])


def worked_problem(max_parallel: int | None = None) -> Problem:
    tools = {
        "t1tool": Tool("t1tool", 150, outputs=("a",)),
        "t2tool": Tool("t2tool", 250, outputs=("b",)),
        "t3tool": Tool("t3tool", 180, inputs=("a",), outputs=("c",)),
    }
    return Problem(tools=tools, criteria=("b", "c"), limits=Limits(max_parallel=max_parallel))


WORKED = Plan(tasks=(
    Task("t1", "t1tool"),
    Task("t2", "t2tool"),
    Task("t3", "t3tool", deps=("t1",), inputs={"a": "$t1.a"}),
))


@both
def test_worked_example(scheduler: Scheduler) -> None:
    s = scheduler(worked_problem(), WORKED)
    assert dict(s.start) == {"t1": 0, "t2": 0, "t3": 150}
    assert dict(s.finish) == {"t1": 150, "t2": 250, "t3": 330}
    assert s.makespan == 330
    assert s.critical_path == ("t1", "t3")
    assert s.critical_path_length == 330
    assert dict(s.slack) == {"t1": 0, "t2": 80, "t3": 0}
    assert s.waves == (("t1", "t2"), ("t3",))
    assert s.unscheduled == ()
    assert s.to_dict()["t3"] == {"start": 150, "finish": 330}


@both
def test_worked_example_one_slot(scheduler: Scheduler) -> None:
    """Longest remaining path first: t1 (330 to go), then t2 (250) before t3 (180)."""
    s = scheduler(worked_problem(max_parallel=1), WORKED)
    assert s.makespan == 580
    assert dict(s.start) == {"t1": 0, "t2": 150, "t3": 400}
    assert s.critical_path_length == 330  # resources ignored: still a lower bound


@both
def test_priority_overrides_longest_path(scheduler: Scheduler) -> None:
    s = scheduler(worked_problem(max_parallel=1), replace(WORKED, priority=("t2", "t1", "t3")))
    assert dict(s.start) == {"t2": 0, "t1": 250, "t3": 400}
    assert s.makespan == 580


@both
def test_resource_capacity_serialises_tasks(scheduler: Scheduler) -> None:
    tools = {
        "llm": Tool("llm", 100, outputs=("x",), uses={"api": 1}),
        "cpu": Tool("cpu", 40, outputs=("y",)),
    }
    problem = Problem(tools=tools, criteria=("x",), resources={"api": 1})
    plan = Plan(tasks=(Task("a", "llm"), Task("b", "llm"), Task("c", "cpu")))
    s = scheduler(problem, plan)
    assert sorted((s.start["a"], s.start["b"])) == [0, 100]
    assert s.start["c"] == 0
    assert s.makespan == 200


@both
def test_cycle_tasks_are_unscheduled_not_fatal(scheduler: Scheduler) -> None:
    problem = worked_problem()
    plan = Plan(tasks=(Task("t1", "t1tool", deps=("t3",)), Task("t2", "t2tool"),
                       Task("t3", "t3tool", deps=("t1",))))
    s = scheduler(problem, plan)
    assert set(s.unscheduled) == {"t1", "t3"}
    assert dict(s.start) == {"t2": 0}
    assert s.makespan == 250


@both
def test_empty_plan(scheduler: Scheduler) -> None:
    s = scheduler(worked_problem(), Plan())
    assert s.makespan == 0 and s.critical_path == () and s.waves == ()


# -- properties over random instances --------------------------------------------------------

@st.composite
def instances(draw: st.DrawFn, full_priority: bool = False) -> tuple[Problem, Plan]:
    """A random DAG (tasks listed in a shuffled order), each task with its own tool, random
    durations (zero allowed) and random demands on up to three resources."""
    n = draw(st.integers(1, 10))
    capacities = {f"r{k}": draw(st.integers(1, 4)) for k in range(draw(st.integers(0, 3)))}
    tools, tasks = {}, []
    for i in range(n):
        uses = {r: draw(st.integers(0, cap)) for r, cap in capacities.items()}
        tools[f"k{i}"] = Tool(f"k{i}", draw(st.integers(0, 30)), uses={r: u for r, u in uses.items() if u})
        earlier = [f"t{j}" for j in range(i)]
        deps = sorted(set(draw(st.lists(st.sampled_from(earlier), max_size=3)))) if earlier else []
        tasks.append(Task(f"t{i}", f"k{i}", deps=tuple(deps)))
    order = draw(st.permutations(tasks))
    max_parallel = draw(st.one_of(st.none(), st.integers(1, 4)))
    ids = [t.id for t in tasks]
    if full_priority:
        priority: tuple[str, ...] | None = tuple(draw(st.permutations(ids)))
    else:
        priority = draw(st.one_of(st.none(), st.permutations(ids).map(tuple),
                                  st.lists(st.sampled_from(ids), unique=True).map(tuple)))
    problem = Problem(tools=tools, limits=Limits(max_parallel=max_parallel),
                      resources={r: float(c) for r, c in capacities.items()})
    return problem, Plan(tasks=tuple(order), priority=priority)


def demands(problem: Problem, plan: Plan) -> dict[str, dict[str, float]]:
    """Each task's demand per capacity, parallel slots included as ``slots``."""
    out = {}
    for task in plan.tasks:
        tool = problem.tools[task.tool]
        out[task.id] = {"slots": 1.0, **{r: float(tool.uses.get(r, 0)) for r in problem.resources}}
    return out


def capacities(problem: Problem) -> dict[str, float]:
    slots = problem.limits.max_parallel
    return {"slots": math.inf if slots is None else float(slots), **problem.resources}


@both
@settings(max_examples=200, deadline=None)
@given(instances())
def test_schedule_properties(scheduler: Scheduler, instance: tuple[Problem, Plan]) -> None:
    problem, plan = instance
    s = scheduler(problem, plan)
    duration = {t.id: problem.tools[t.tool].duration for t in plan.tasks}
    need, caps = demands(problem, plan), capacities(problem)
    assert set(s.start) == set(duration) and s.unscheduled == ()
    for tid in duration:
        assert s.finish[tid] == s.start[tid] + duration[tid]
        assert s.start[tid] >= 0
    # Lower bounds: the critical path, and the total work each capacity must carry.
    assert s.makespan >= s.critical_path_length - 1e-9
    assert s.makespan == max(s.finish.values())
    for res, cap in caps.items():
        work = sum(duration[t] * need[t][res] for t in duration)
        if math.isfinite(cap):
            assert s.makespan >= work / cap - 1e-9, res
    # Dependencies: a task starts after every dep has finished.
    for task in plan.tasks:
        for dep in task.deps:
            assert s.start[task.id] >= s.finish[dep] - 1e-9, (task.id, dep)
    # Capacity: at every start instant, running tasks fit (usage only changes at starts).
    for t in {s.start[x] for x in duration}:
        running = [x for x in duration if s.start[x] <= t < s.finish[x]]
        for res, cap in caps.items():
            assert sum(need[x][res] for x in running) <= cap + 1e-9, (t, res, running)
    # The critical path is a real dependency chain of that length.
    chain = s.critical_path
    assert sum(duration[t] for t in chain) == s.critical_path_length or not chain
    by_id = plan.by_id()
    for before, after in itertools.pairwise(chain):
        assert before in by_id[after].deps
    # Slack: a task delayed by its slack still ends by the makespan and before each successor's
    # latest start; and it is the largest such delay (some bound is met exactly).
    for task in plan.tasks:
        successors = [t for t in plan.tasks if task.id in t.deps]
        bounds = [s.start[x.id] + s.slack[x.id] for x in successors] or [s.makespan]
        assert s.slack[task.id] >= 0
        assert math.isclose(s.finish[task.id] + s.slack[task.id], min(bounds), abs_tol=1e-9)
    # Waves: every task once, each after all its deps' waves.
    wave_of = {tid: i for i, wave in enumerate(s.waves) for tid in wave}
    assert sorted(wave_of) == sorted(duration)
    for task in plan.tasks:
        assert all(wave_of[d] < wave_of[task.id] for d in task.deps)


def reference_sgs(problem: Problem, plan: Plan) -> dict[str, float]:
    """Serial SGS written the slow, obvious way: each step takes the eligible task first in
    ``priority`` and puts it at the first integer time where all capacities hold throughout."""
    assert plan.priority is not None
    position = {tid: i for i, tid in enumerate(plan.priority)}
    by_id = plan.by_id()
    duration = {t.id: int(problem.tools[t.tool].duration) for t in plan.tasks}
    need, caps = demands(problem, plan), capacities(problem)
    horizon = sum(duration.values()) + 1
    usage = {res: [0.0] * horizon for res in caps}
    start: dict[str, float] = {}
    while len(start) < len(by_id):
        eligible = [t for t in by_id if t not in start and all(d in start for d in by_id[t].deps)]
        tid = min(eligible, key=position.__getitem__)
        t = max((start[d] + duration[d] for d in by_id[tid].deps), default=0)
        while not all(usage[r][u] + need[tid][r] <= caps[r]
                      for u in range(int(t), int(t) + duration[tid]) for r in caps):
            t += 1
        for u in range(int(t), int(t) + duration[tid]):
            for r in caps:
                usage[r][u] += need[tid][r]
        start[tid] = t
    return start


@both
@settings(max_examples=200, deadline=None)
@given(instances(full_priority=True))
def test_priority_order_is_serial_sgs(scheduler: Scheduler, instance: tuple[Problem, Plan]) -> None:
    problem, plan = instance
    assert dict(scheduler(problem, plan).start) == reference_sgs(problem, plan)


@both
def test_schedule_is_deterministic_on_ties(scheduler: Scheduler) -> None:
    tools = {"k": Tool("k", 10)}
    problem = Problem(tools=tools, limits=Limits(max_parallel=1))
    plan = Plan(tasks=tuple(Task(f"t{i}", "k") for i in range(5)))
    first: Schedule = scheduler(problem, plan)
    assert [first.start[f"t{i}"] for i in range(5)] == [0, 10, 20, 30, 40]
    assert scheduler(problem, plan) == first
