"""The faster paths taken for plans of thousands of tasks give what the simple ones gave.

``downstream_test`` (one bitset pass) against :func:`descendants` (a walk per task), on evolved
plans and on plans with cycles; checkpoint encodings reused through an ``EncodeMemo`` against
fresh ones; crossover's counted fresh ids against a rescan of the child; the tool-choice climb
that skips hopeless schedules against the one that schedules every move."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
from evolved_plans import evolved
from hypothesis import given, settings
from hypothesis import strategies as st

from evolve.fitness.strategies import problems, valid_plans
from evolve.model.plan import Plan, Task, next_task_id
from evolve.model.problem import Problem
from evolve.problems.synthetic import generate_problem
from evolve.run.state_codec import EncodeMemo, decode, encode
from evolve.search import toolchoice_kernels as k
from evolve.search.operators import crossover, descendants, downstream_test
from evolve.search.toolchoice import GREEDY_RULES, ToolChoice

SEEDS = st.integers(0, 2**32 - 1)


def agrees_with_walks(plan: Plan) -> None:
    below = downstream_test(plan)
    ids = [t.id for t in plan.tasks]
    for root in ids:
        walked = descendants(plan, root) | {root}
        assert {other for other in ids if below(root, other)} == walked & set(ids)


@settings(max_examples=40, deadline=None)
@given(seed=SEEDS, steps=st.integers(0, 8))
def test_downstream_test_is_the_descendant_walk(refund: Problem, seed: int, steps: int) -> None:
    agrees_with_walks(evolved(refund, seed, steps))


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 12), edges=st.lists(st.tuples(st.integers(0, 11), st.integers(0, 11)),
                                            max_size=30))
def test_downstream_test_on_any_graph_cycles_included(n: int, edges: list[tuple[int, int]]) -> None:
    deps: dict[int, list[str]] = {i: [] for i in range(n)}
    for a, b in edges:
        if a < n:
            deps[a].append(f"t{b}")  # b may be missing from the plan (a dangling dep) or be a itself
    agrees_with_walks(Plan(tasks=tuple(Task(id=f"t{i}", tool="x", deps=tuple(d))
                                       for i, d in deps.items())))


@settings(max_examples=30, deadline=None)
@given(seed=SEEDS, steps=st.integers(0, 6))
def test_memoised_checkpoint_encoding_is_the_fresh_one(refund: Problem, seed: int, steps: int) -> None:
    first = [evolved(refund, seed, k) for k in range(steps + 1)]
    second = [*first[1:], evolved(refund, seed + 1, steps)]  # shares most objects with the first
    memo = EncodeMemo()
    for state in ({"plans": first}, {"plans": second, "again": first[-1]}):
        reused = json.dumps(encode(state, memo))
        memo.rotate()
        assert reused == json.dumps(encode(state))
        assert decode(json.loads(reused)) == state


def test_a_memo_keeps_only_what_the_last_state_held(refund: Problem) -> None:
    memo = EncodeMemo()
    old, new = evolved(refund, 1, 0), evolved(refund, 2, 0)
    encode({"p": old}, memo)
    memo.rotate()
    encode({"p": new}, memo)
    memo.rotate()
    assert memo.get(old) is None and memo.get(new) is not None


def rescanned_crossover(problem: Problem, a: Plan, b: Plan, rng: np.random.Generator) -> Plan | None:
    """The crossover as it was, fresh ids by a rescan of everything the child may hold.

    A deliberate, independent copy of :func:`evolve.search.operators.crossover` (a test
    oracle, not duplicated logic to share): the project keeps no reference version of it, and
    the property below is that the counter the fast one keeps gives exactly the ids this
    rescan (:func:`next_task_id` over ``a``, the child and the mapping) gives. Calling the
    production code here would compare it with itself. Written for problems without a template
    (the test's refund problem has none), whose ids the production one seeds the child with."""
    from evolve.model.graph import upstream
    from evolve.model.patch import renamed
    from evolve.model.validate import produced_by

    take_b = rng.random(len(problem.criteria)) < 0.5
    in_a = a.by_id()
    child: dict[str, Task] = {}
    mapping: dict[str, str] = {}
    for criterion, from_b in zip(problem.criteria, take_b):
        parent = b if from_b else a
        producers = [t for t in parent.tasks if criterion in (produced_by(problem, t) or ())]
        if not producers:
            continue
        wanted = {producers[0].id} | upstream(producers[0].id, parent.dependency_map())
        closure = [t for t in parent.tasks if t.id in wanted]
        if parent is a:
            for task in closure:
                child.setdefault(task.id, task)
            continue
        fresh = [t for t in closure if t.id not in mapping]
        for task in fresh:
            if in_a.get(task.id) == task:
                mapping[task.id] = task.id
            else:
                taken = Plan(tasks=(*child.values(), *a.tasks, *(Task(i, "") for i in mapping.values())))
                mapping[task.id] = next_task_id(taken)
        for task in fresh:
            child[mapping[task.id]] = renamed(task, mapping)
    tasks = [child[t.id] for t in a.tasks if t.id in child]
    tasks += [t for tid, t in child.items() if tid not in in_a]
    plan = Plan(tasks=tuple(tasks), priority=a.priority)
    return plan.with_tasks(plan.tasks)


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_crossover_on_any_plans_is_the_rescanning_walk_of_every_sub_plan(data: st.DataObject) -> None:
    """Also on generated problems and plans: crossover, which walks a criterion's sub-plan only
    beyond what its parent gave already, makes what walking all of it again makes."""
    problem = data.draw(problems(max_facts=7, max_tools=8))
    a = data.draw(valid_plans(problem, max_tasks=9))
    b = data.draw(valid_plans(problem, max_tasks=9))
    seed = data.draw(st.integers(0, 2**16))
    assert crossover(problem, a, b, np.random.default_rng(seed)) == \
        rescanned_crossover(problem, a, b, np.random.default_rng(seed))


@settings(max_examples=40, deadline=None)
@given(seed=SEEDS, steps_a=st.integers(0, 5), steps_b=st.integers(0, 5))
def test_crossover_counts_the_ids_a_rescan_would_give(refund: Problem, seed: int, steps_a: int,
                                                      steps_b: int) -> None:
    a, b = evolved(refund, seed, steps_a), evolved(refund, seed + 1, steps_b)
    b = replace(b, tasks=tuple(replace(t, id=f"t{int(t.id[1:]) + 3}") if t.id[1:].isdigit() else t
                               for t in b.tasks))  # ids shifted, so many clash with a's
    assert crossover(refund, a, b, np.random.default_rng(seed)) == \
        rescanned_crossover(refund, a, b, np.random.default_rng(seed))


@settings(max_examples=40, deadline=None)
@given(tools=st.integers(8, 240), seed=SEEDS, rule=st.sampled_from(GREEDY_RULES),
       probe=st.sampled_from([0, 12]), near=st.sampled_from([0.0, 0.05, 0.5]),
       evals=st.integers(1, 400))
def test_the_bounded_climb_is_the_plain_climb(tools: int, seed: int, rule: str, probe: int,
                                              near: float, evals: int) -> None:
    """Skipping the schedules of moves whose work bound cannot win changes nothing: the same
    choice, makespan, tasks, evaluations and random stream after, probing on and off."""
    problem = generate_problem(tools, seed % 1000)
    search = ToolChoice(problem)
    results = []
    for bound in (False, True):
        choice = search.greedy(rule, np.random.default_rng(seed), 0.3)
        rng = np.random.default_rng(seed)
        ms, n, used = k.hill_climb(search.tables, choice, rng, evals, probe, near, bound)
        results.append((float(ms), int(n), int(used), choice.tolist(), int(rng.integers(1 << 40))))
    assert results[0] == results[1]


@settings(max_examples=40, deadline=None)
@given(tools=st.integers(8, 160), seed=SEEDS, calls=st.integers(1, 12),
       max_tasks=st.sampled_from([None, 3, 10]))
def test_decode_into_is_decode_call_after_call(tools: int, seed: int, calls: int,
                                               max_tasks: int | None) -> None:
    """Random producer choices (many cyclic or incomplete, some over ``max_tasks``) decoded one
    after the other into the same scratch, resetting only what the last one marked: each gives
    :func:`decode`'s count, order and positions on fresh arrays, and a failure leaves the
    scratch clean."""
    problem = generate_problem(tools, seed % 1000)
    search = ToolChoice(problem)
    tables = search.tables if max_tasks is None else (*search.tables[:-1], max_tasks)
    rng = np.random.default_rng(seed)
    nt, nf = len(search.compiled.tools), len(search.compiled.facts) + 1
    prod_ptr, prod_idx = tables[7], tables[8]
    task_of, order, color = (np.empty(nt, dtype=np.int64) for _ in range(3))
    stack_t, stack_q = np.empty(nt + 1, dtype=np.int64), np.empty(nt + 1, dtype=np.int64)
    prev = -1
    for _ in range(calls):
        choice = search.greedy("earliest_finish")
        for f in range(nf):
            options = prod_idx[prod_ptr[f]:prod_ptr[f + 1]]
            if len(options) and rng.random() < 0.5:
                choice[f] = int(options[int(rng.integers(len(options)))])
        fresh = [np.empty(nt, dtype=np.int64) for _ in range(3)]
        n = int(k.decode(tables, choice, *fresh))
        got = int(k.decode_into(tables, choice, task_of, order, color, stack_t, stack_q, prev))
        assert got == n
        if n >= 0:
            assert order[:n].tolist() == fresh[1][:n].tolist()
            assert task_of.tolist() == fresh[0].tolist()
        else:
            assert (task_of == -1).all() and (color == 0).all()
        prev = max(got, 0)
