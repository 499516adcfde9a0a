"""The planner on deep recursions: a method's last subtask takes its task's place (no deeper
nesting), a method that cannot start is no node, and the verifier checks decompositions
thousands deep."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evolve.cli.htn import hddl_document
from evolve.problems.htn import Decomposition, NoPlan, Planner, htn_problem_from_dict
from evolve.problems.htn.decomposition import replay
from evolve.problems.htn.domain import TRUE, Method
from evolve.problems.htn.hddl_plans import ipc_plan
from evolve.problems.htn.hddl_syntax import read_files
from evolve.problems.htn.hddl_verify import verify
from evolve.problems.htn.planner import components

IPC = Path(os.environ.get("EVOLVE_IPC_HTN_DIR", Path(__file__).resolve().parents[1].parent / "shared"
                          / "data" / "ipc2020-htn")) / "total-order"


def counter(n: int, tail: bool) -> dict[str, Any]:
    """Count from c0 to c<n> one step at a time, recursing through the last subtask (``tail``)
    or the first (then every step nests one level deeper)."""
    ops = {f"inc{i}": {"pre": [{"has": f"c{i}"}], "effects": {"set": {f"c{i + 1}": True}, "unset": [f"c{i}"]},
                       "duration": 1} for i in range(n)}
    methods: dict[str, Any] = {}
    for i in range(n):
        subtasks = [f"inc{i}", "count"] if tail else ["count", f"inc{i}"]
        methods[f"step{i}"] = {"task": "count", "pre": [{"has": f"c{i}"}], "subtasks": subtasks}
    methods["done"] = {"task": "count", "pre": [{"has": f"c{n}"}], "subtasks": []}
    return {"name": "counter", "htn": {"state": {"c0": True}, "goal": "count", "operators": ops,
                                       "methods": methods, "max_depth": 6, "max_nodes": 20_000}}


def test_a_recursion_through_the_last_subtask_is_not_bounded_by_the_depth_limit() -> None:
    domain = htn_problem_from_dict(counter(60, tail=True), "counter.yaml").htn()
    outcome = Planner(domain).plan()
    assert isinstance(outcome, Decomposition) and len(outcome.steps) == 60
    assert replay(domain, outcome.steps) == []


def test_a_recursion_that_nests_still_meets_the_depth_limit() -> None:
    """Head recursion grows the task network: the depth limit is what makes it end."""
    domain = htn_problem_from_dict(counter(60, tail=False), "counter.yaml").htn()
    outcome = Planner(domain).plan()
    assert isinstance(outcome, NoPlan) and outcome.reason == "depth"


def test_a_method_whose_first_operator_cannot_run_is_not_a_node() -> None:
    """Thirty guardless methods of one task, each starting with an operator that needs its own
    fact; only the eighth's holds. The operator's precondition guards its method, so the search
    meets no node per failing method."""
    ops = {f"go{i}": {"pre": [{"has": f"k{i}"}], "effects": {"set": {"done": True}}, "duration": 1}
           for i in range(30)}
    methods = {f"m{i}": {"task": "t", "pre": [], "subtasks": [f"go{i}"]} for i in range(30)}
    data = {"name": "anchors", "htn": {"state": {"k7": True}, "goal": "t", "operators": ops,
                                       "methods": methods, "max_depth": 6, "max_nodes": 1000}}
    domain = htn_problem_from_dict(data, "anchors.yaml").htn()
    planner = Planner(domain)
    outcome = planner.plan()
    assert isinstance(outcome, Decomposition) and [s.operator for s in outcome.steps] == ["go7"]
    assert outcome.nodes <= 3  # the root, the one method that starts, its step
    check = planner.method_check(next(m for m in domain.methods if m.name == "m3"))
    assert check is not False and "k3" in check[0]


@pytest.mark.skipif(not IPC.is_dir(), reason=f"the IPC 2020 HTN problems are not at {IPC}")
def test_towers_recursing_past_the_depth_limit_gets_a_verified_plan() -> None:
    """Towers pfile_10: 1,023 moves, each one level deeper through rotate, exchange, rotate...
    (past HDDL's depth limit of 1,000 when every subtask nested); the verifier replays a
    decomposition over a thousand deep."""
    domain_file, problem_file = IPC / "Towers" / "domain.hddl", IPC / "Towers" / "pfile_10.hddl"
    domain = htn_problem_from_dict(hddl_document(str(domain_file), str(problem_file), None, None),
                                   str(problem_file)).htn()
    start = time.perf_counter()
    outcome = Planner(domain).plan()
    assert isinstance(outcome, Decomposition) and len(outcome.steps) >= 1023
    assert time.perf_counter() - start < 30
    verdict = verify(*read_files(domain_file, problem_file), ipc_plan(domain, outcome))
    assert verdict.faults == []


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.sampled_from("abcdef"), st.lists(st.lists(st.sampled_from("abcdefxy"), max_size=3),
                                                            min_size=1, max_size=3), max_size=6))
def test_the_recursion_components_are_mutual_reachability(graph: dict[str, list[list[str]]]) -> None:
    """Tarjan's components against the definition: two tasks share one exactly when each can
    decompose into the other; a task is in one only when it can decompose into itself."""
    by_task = {task: tuple(Method(f"{task}{i}", task, TRUE, tuple(subs)) for i, subs in enumerate(lists))
               for task, lists in graph.items()}
    found = components(by_task)

    def reach(task: str) -> set[str]:
        seen: set[str] = set()
        todo = [s for m in by_task.get(task, ()) for s in m.subtasks]
        while todo:
            item = todo.pop()
            if item not in seen:
                seen.add(item)
                todo.extend(s for m in by_task.get(item, ()) for s in m.subtasks)
        return seen

    reached = {task: reach(task) for task in by_task}
    for a in by_task:
        assert (a in found) == (a in reached[a])
        for b in by_task:
            if a != b and a in found and b in found:
                assert (found[a] == found[b]) == (b in reached[a] and a in reached[b])
