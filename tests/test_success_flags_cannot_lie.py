"""Every success flag tried with a result its producer would call good and that is not.

The project's rule: ``feasible``, ``goal_met``, ``valid``, ``ok``, ``passed``, ``verified`` (and
the like) are decided by a check apart from the code that built the plan, and a test tries to
make each one lie. Each test here builds the situation a naive implementation would call a
success (a goal marker standing in for a goal, a write with no approval upstream, a tool that
returns without the fact it promised, a planner that vouches for its own state, a decomposition
whose method does not apply, a schedule over capacity, an evaluator that says "Pass/Fail: FAIL",
a run folder whose summary claims more than its plan shows) and requires the flag to say no.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hddl_parcel import DOMAIN, PROBLEM_TEMPLATE

from evolve.execute import start_run
from evolve.execute.tools import Call
from evolve.fitness.evaluation import evaluate_plan
from evolve.fitness.registry import resolve_all
from evolve.model.plan import Plan, Task
from evolve.model.plan_file import plan_from_dict
from evolve.model.problem import Problem
from evolve.model.problem_file import problem_from_dict
from evolve.model.validate import validate
from evolve.patterns.evaluator import evaluator_optimizer, read_verdict
from evolve.problems.htn import Planner, to_plan
from evolve.problems.htn.decomposition import Decomposition, NoPlan
from evolve.problems.htn.hddl_syntax import read_files
from evolve.problems.htn.hddl_verify import check_graph, verify
from evolve.problems.htn.problem import GOAL_TASK, goal_tool, htn_problem_from_dict, load_htn_problem
from evolve.problems.htn.validate import validate_domain
from evolve.problems.htn.world import decomposes
from evolve.problems.rcpsp.check import schedule_violations
from evolve.problems.rcpsp.decode import serial_sgs
from evolve.problems.rcpsp.instance import from_arrays, lower_bound
from evolve.report.data import load_run
from evolve.report.history import final_population
from evolve.report.html import render
from evolve.run.folder import run_search
from evolve.search.options import SearchOptions

ROOT = Path(__file__).resolve().parent.parent
BUILTIN = ("validity", "completeness", "makespan")


def feasible(problem: Problem, plan: Plan) -> bool:
    return evaluate_plan(problem, plan, resolve_all(BUILTIN)).feasible


# -- feasible: an HTN plan is judged against the domain, not by its goal marker ---------------

# A goal without ``achieves``: only a whole decomposition of ``ship`` is the goal.
SHIP: dict[str, Any] = {
    "name": "ship",
    "htn": {
        "state": {"ready": True},
        "goal": "ship",
        "operators": {
            "build": {"pre": [{"has": "ready"}], "effects": {"set": {"built": True}}, "duration": 10},
            "test": {"pre": [{"has": "built"}], "effects": {"set": {"tested": True}}, "duration": 10},
            "release": {"pre": [{"has": "built"}], "effects": {"set": {"released": True}}, "duration": 5},
        },
        "methods": {"ship_m": {"task": "ship", "subtasks": ["build", "test", "release"]}},
    },
}


def test_the_goal_marker_alone_is_not_a_feasible_htn_plan() -> None:
    """The marker task makes the problem's one criterion, so validator and coverage both pass it:
    the domain's goal must still decide (it was reported feasible before)."""
    for problem in (load_htn_problem(ROOT / "examples" / "htn" / "ladder.yaml"), htn_problem_from_dict(SHIP)):
        domain = problem.htn()
        marker = Plan(tasks=(Task(GOAL_TASK, goal_tool(domain)),))
        assert validate(problem, marker) == []  # what a naive check stops at
        assert not feasible(problem, marker)
        outcome = Planner(domain).plan()
        assert isinstance(outcome, Decomposition)
        assert feasible(problem, to_plan(domain, outcome))  # the check is no blanket "no"


# The same with the goal's ``achieves`` declared: what a plan's steps must leave true.
SHIP_ACHIEVES: dict[str, Any] = {
    "name": "ship",
    "htn": {**SHIP["htn"], "tasks": {"ship": {"achieves": [{"has": "tested"}, {"has": "released"}]}}},
}


def test_an_htn_plan_that_skips_a_step_of_the_decomposition_is_not_feasible() -> None:
    """Judged by what the goal's ``achieves`` asks of the replayed steps (a longer plan's
    decomposition is not searched for at every evaluation: see ``plan_verdict``)."""
    problem = htn_problem_from_dict(SHIP_ACHIEVES)
    outcome = Planner(problem.htn()).plan()
    assert isinstance(outcome, Decomposition)
    plan = to_plan(problem.htn(), outcome)
    test_task = next(t for t in plan.tasks if t.tool == "test")
    skipped = Plan(tasks=tuple(
        replace(t, deps=tuple(d for d in t.deps if d != test_task.id),
                inputs={k: v for k, v in t.inputs.items() if not v.startswith(f"${test_task.id}.")})
        for t in plan.tasks if t.id != test_task.id))
    assert validate(problem, skipped) == []  # every edge and binding still fine
    assert not feasible(problem, skipped)


def test_an_htn_plan_whose_step_does_not_apply_is_not_feasible() -> None:
    """Comment on the PR while CI is still red, then revert: the end state has the goal's
    ``achieves`` (CI not red, PR commented) and the validator has nothing to say, but
    ``comment_pr`` needs CI not red when it runs."""
    problem = load_htn_problem(ROOT / "examples" / "htn" / "ladder.yaml")
    marker = Task(GOAL_TASK, goal_tool(problem.htn()), deps=("t2",))
    early = Plan(tasks=(Task("t1", "comment_pr"),
                        Task("t2", "revert_commit", deps=("t1",), inputs={"ci_red": "$ci_red"}), marker))
    assert validate(problem, early) == []
    assert not feasible(problem, early)
    late = Plan(tasks=(Task("t1", "revert_commit", inputs={"ci_red": "$ci_red"}),
                       Task("t2", "comment_pr", deps=("t1",)), marker))
    assert validate(problem, late) == [] and feasible(problem, late)


UNORDERED: dict[str, Any] = {
    "name": "pair",
    "htn": {
        "state": {},
        "goal": "both",
        "operators": {
            "a1": {"effects": {"set": {"a1": True}}, "duration": 1},
            "a2": {"pre": [{"has": "a1"}], "effects": {"set": {"a2": True}}, "duration": 1},
            "b": {"effects": {"set": {"b": True}}, "duration": 1},
        },
        "methods": {
            "both_m": {"task": "both", "subtasks": ["left", "maybe", "b"], "unordered": True},
            "left_m": {"task": "left", "subtasks": ["a1", "a2"]},
            "maybe_m": {"task": "maybe", "subtasks": []},
        },
    },
}


@pytest.mark.parametrize(("steps", "ok"), [(["a1", "a2", "b"], True), (["b", "a1", "a2"], True),
                                           (["a1", "b", "a2"], False), (["a1", "a2"], False), ([], False)])
def test_the_recogniser_takes_each_order_an_unordered_method_allows_and_no_other(steps: list[str],
                                                                                ok: bool) -> None:
    """The recogniser the executor's ``goal_met`` uses for a goal without ``achieves``, on an
    unordered method (one subtask empty): its subtasks in any order, each one's steps together;
    an interleaving, a missing subtask or no steps at all are no decomposition."""
    domain = htn_problem_from_dict(UNORDERED).htn()
    assert decomposes(domain, steps, [None] * len(steps), domain.state) is ok


# -- feasible: every broken rule of a catalog plan, through the compiled path -----------------

PAY: dict[str, Any] = {
    "name": "pay",
    "initial": ["x"],
    "criteria": ["paid"],
    "policy": {"write_requires_approval": True},
    "tools": {
        "fetch": {"duration": 1, "inputs": ["x"], "outputs": ["a"]},
        "approve": {"duration": 1, "inputs": ["a"], "outputs": ["ok"], "risk": "approval"},
        "pay": {"duration": 1, "inputs": ["a"], "outputs": ["paid"], "risk": "write"},
    },
}
GOOD = [
    {"id": "t1", "tool": "fetch", "inputs": {"x": "$x"}},
    {"id": "t2", "tool": "approve", "deps": ["t1"], "inputs": {"a": "$t1.a"}},
    {"id": "t3", "tool": "pay", "deps": ["t1", "t2"], "inputs": {"a": "$t1.a"}, "idempotency_key": "pay-1"},
]


def broken(**changes: Any) -> dict[str, Any]:
    tasks = [dict(t) for t in GOOD]
    tasks[2].update(changes)
    return {"tasks": tasks}


BROKEN = {
    "write with no approval upstream": broken(deps=["t1"]),
    "write with no idempotency key": broken(idempotency_key=None),
    "reads an output its source never produces": broken(inputs={"a": "$t2.a"}),
    "reads a task that is not among its deps": broken(deps=["t2"]),
    "depends on a missing task": broken(deps=["t1", "t2", "t9"]),
    "depends on itself": broken(deps=["t1", "t2", "t3"]),
    "unknown tool makes the criterion": broken(tool="pay.v2"),
    "input not bound": broken(inputs={}),
}


@pytest.mark.parametrize("name", list(BROKEN))
def test_a_plan_that_breaks_one_rule_is_never_feasible(name: str) -> None:
    problem = problem_from_dict(PAY)
    assert feasible(problem, plan_from_dict({"tasks": GOOD}))
    plan = plan_from_dict(BROKEN[name])
    assert validate(problem, plan), name  # the oracle sees the fault...
    assert not feasible(problem, plan), name  # ...and so does the flag


def test_a_cycle_and_the_task_limit_are_never_feasible() -> None:
    problem = problem_from_dict(PAY)
    cycle = [dict(t) for t in GOOD]
    cycle[0]["deps"] = ["t3"]
    assert not feasible(problem, plan_from_dict({"tasks": cycle}))
    limited = problem_from_dict({**PAY, "limits": {"max_tasks": 2}})
    assert not feasible(limited, plan_from_dict({"tasks": GOOD}))


# -- goal_met: a tool that returns without the criterion's fact -------------------------------


def test_a_tool_that_succeeds_without_its_output_never_meets_the_goal(tmp_path: Path) -> None:
    def fetch(inputs: Mapping[str, Any], call: Call) -> dict[str, Any]:
        return {"a": 1}

    def approve(inputs: Mapping[str, Any], call: Call) -> dict[str, Any]:
        return {"ok": True}

    def pay(inputs: Mapping[str, Any], call: Call) -> dict[str, Any]:
        return {"receipt": "looks done"}  # no "paid": the promise is not kept

    executor = start_run(problem_from_dict(PAY), plan_from_dict({"tasks": GOOD}), tmp_path / "run",
                         plan_source="plan", tools_spec=None,
                         tools={"fetch": fetch, "approve": approve, "pay": pay})
    outcome = executor.run()
    assert outcome["reason"] != "goal_met" and outcome["status"] != "completed"
    assert outcome["criteria"] == {"paid": None}
    assert outcome["tasks"]["t3"]["status"] != "done"


# -- ok (validate-domain): the planner's own final state is not the judge ---------------------


def test_validate_domain_does_not_take_the_planners_word(monkeypatch: pytest.MonkeyPatch) -> None:
    """A planner that returns no steps and a final state in which the goal holds: the replay of
    its steps (none) must decide, and the goal does not hold there."""
    import evolve.problems.htn.validate as validate_module

    class Boasting:
        def __init__(self, domain: Any) -> None:
            self.domain = domain

        def plan(self) -> Decomposition | NoPlan:
            claimed = {"commented": True, "ci_green": True}
            return Decomposition(steps=(), genome=(), state=claimed, nodes=1)

    domain = load_htn_problem(ROOT / "examples" / "htn" / "ladder.yaml").htn()
    assert not validate_domain(domain).failures  # the honest planner: every state has a plan
    monkeypatch.setattr(validate_module, "Planner", Boasting)
    report = validate_domain(domain)
    assert report.failures and len(report.failures) == len(report.results)
    shipping = htn_problem_from_dict(SHIP).htn()  # a goal without achieves: no steps decompose it
    assert validate_domain(shipping).failures


# -- valid (the HDDL verifier): decompositions the domain does not allow ----------------------

TREE = "==>\n0 pack box\n1 move box home shop\nroot 2\n2 deliver box shop -> m-pack-then-move 0 1\n<==\n"


def model(tmp_path: Path, to: str = "shop", start: str = "home") -> Any:
    (tmp_path / "d.hddl").write_text(DOMAIN)
    (tmp_path / "p.hddl").write_text(PROBLEM_TEMPLATE.format(to=to, start=start))
    return read_files(tmp_path / "d.hddl", tmp_path / "p.hddl")


def test_the_verifier_rejects_a_method_whose_precondition_is_false(tmp_path: Path) -> None:
    """Box already at the shop: pack and move shop->shop apply as actions, but the method needs
    two different places, so the decomposition is not one the domain allows."""
    parsed = model(tmp_path, to="shop", start="shop")
    plan = "==>\n0 pack box\n1 move box shop shop\nroot 2\n2 deliver box shop -> m-pack-then-move 0 1\n<==\n"
    verdict = verify(*parsed, plan)
    assert not verdict.valid
    assert any("precondition false" in f for f in verdict.faults)


def test_the_verifier_rejects_a_root_that_is_not_the_problems_task(tmp_path: Path) -> None:
    parsed = model(tmp_path, to="shop")
    good = TREE
    assert verify(*parsed, good).valid
    (tmp_path / "home").mkdir()
    other = model(tmp_path / "home", to="home", start="home")
    assert not verify(*other, good).valid  # the same tree, for a problem that asks for "home"


def test_the_verifier_rejects_a_step_used_twice(tmp_path: Path) -> None:
    parsed = model(tmp_path)
    twice = TREE.replace("root 2\n", "root 2 2\n")
    assert not verify(*parsed, twice).valid


def test_the_graph_check_rejects_steps_that_interfere_unordered(tmp_path: Path) -> None:
    parsed = model(tmp_path)
    good = TREE
    verdict = verify(*parsed, good)
    tools = ["pack(box)", "move(box,home,shop)"]
    assert check_graph(verdict, tools, {0: [], 1: [0]}) == []
    assert check_graph(verdict, tools, {0: [], 1: []})  # move reads what pack writes: unordered


# -- feasible (RCPSP): the independent checker and the lower bound ----------------------------


def test_the_schedule_check_catches_a_capacity_breach_alone() -> None:
    """No precedence at all, so only the resource profile can say no."""
    inst = from_arrays("cap", [0, 3, 3, 0], [[0], [2], [2], [0]], [3], [[1, 2], [3], [3], []])
    assert schedule_violations(inst, np.array([0, 0, 3, 6])) == []
    violations = schedule_violations(inst, np.array([0, 0, 1, 4]))
    assert violations and all("over capacity" in v for v in violations)
    assert schedule_violations(inst, np.array([0.0, 0.0, 3.0, 6.0]))  # floats are no schedule


@pytest.mark.parametrize("seed", range(12))
def test_the_rcpsp_lower_bound_never_exceeds_the_optimum(seed: int) -> None:
    """Tiny instances solved exactly (the serial SGS over every precedence-feasible list reaches
    an optimal schedule); the search may stop at the bound, so a bound above it would report a
    schedule optimal that is not."""
    rng = np.random.default_rng(seed)
    n = 6
    durs = [0, *rng.integers(1, 5, n - 2).tolist(), 0]
    dems = [[0, 0], *rng.integers(0, 4, (n - 2, 2)).tolist(), [0, 0]]
    succ = [[b for b in range(a + 1, n) if rng.random() < 0.3] for a in range(n)]
    inst = from_arrays("tiny", durs, dems, [3, 4], succ)
    best = None
    for perm in itertools.permutations(range(n)):
        pos = {j: k for k, j in enumerate(perm)}
        if any(pos[a] > pos[b] for a in range(n) for b in succ[a]):
            continue
        starts = serial_sgs(inst, np.array(perm, dtype=np.int64))
        assert schedule_violations(inst, starts) == []
        span = int((starts + inst.durations).max())
        best = span if best is None else min(best, span)
    assert best is not None and lower_bound(inst) <= best


# -- passed (evaluator-optimizer): the evaluator's FAIL is never read as PASS -----------------


@pytest.mark.parametrize("answer", ["Pass/Fail: FAIL", "PASSABLE? no", "passing grade not reached: FAIL",
                                    {"verdict": "PASS? FAIL", "feedback": "x"}, "", None])
def test_a_failing_verdict_is_never_read_as_pass(answer: Any) -> None:
    assert read_verdict(answer)[0] == "FAIL"


def test_read_verdict_still_reads_a_pass() -> None:
    for answer in ("PASS", "pass: all good", ("PASS", None), {"verdict": "Pass", "feedback": None}):
        assert read_verdict(answer)[0] == "PASS"


def test_the_loop_does_not_accept_a_draft_its_evaluator_failed(tmp_path: Path) -> None:
    result = evaluator_optimizer("write", lambda task, draft, feedback: "draft",
                                 lambda task, draft: "Pass/Fail: FAIL (too short)", max_iter=2,
                                 out=tmp_path / "eo")
    assert result.value is not None and result.value["passed"] is False
    assert result.reason != "goal_met"


# -- feasible (report.html) and verified (the replayed population) ----------------------------


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from evolve.problems import load_problem

    folder = tmp_path_factory.mktemp("flags") / "run"
    run_search(load_problem(ROOT / "examples" / "refund.yaml"),
               options=SearchOptions(generations=3, seed=1, jobs=1), out_dir=folder)
    return folder


def test_the_report_does_not_repeat_a_feasible_claim_its_plan_does_not_bear(run_folder: Path,
                                                                          tmp_path: Path) -> None:
    honest = render(load_run(run_folder))
    assert "feasible" in honest and "is not valid and complete" not in honest
    summary = json.loads((run_folder / "summary.json").read_text())
    assert summary["best"]["feasible"] is True
    copy = tmp_path / "run"
    copy.mkdir()
    for item in run_folder.iterdir():
        if item.is_file():
            (copy / item.name).write_bytes(item.read_bytes())
    best = json.loads((copy / "best.json").read_text())
    best["tasks"] = best["tasks"][:1]  # one task left: no criterion made, the summary unchanged
    (copy / "best.json").write_text(json.dumps(best))
    page = render(load_run(copy))
    assert "is not valid and complete" in page
    assert ">yes<" not in page.split("best plan")[0]


def test_a_population_whose_replay_disagrees_with_the_log_is_not_verified(run_folder: Path) -> None:
    run = load_run(run_folder)
    bare = replace(run, generations=tuple(replace(g, population=None) for g in run.generations))
    assert final_population(bare).verified  # the replay agrees with the honest log
    last = bare.generations[-1]
    other = next(c for c in run.candidates if c != last.best)
    lied = replace(bare, generations=(*bare.generations[:-1], replace(last, best=other)))
    assert not final_population(lied).verified


# -- ok (benchmarks/plan_vs_cpsat.py): neither solver is taken at its word ---------------------


@pytest.mark.parametrize("name", ["write with no approval upstream", "unknown tool makes the criterion"])
def test_the_cpsat_benchmark_does_not_count_a_plan_its_checks_reject(name: str) -> None:
    pytest.importorskip("ortools")
    from benchmark_scripts import load_benchmark

    bench = load_benchmark("plan_vs_cpsat")
    problem = problem_from_dict(PAY)
    assert bench.check_plan(problem, plan_from_dict({"tasks": GOOD})).ok
    assert not bench.check_plan(problem, plan_from_dict(BROKEN[name])).ok
    incomplete = plan_from_dict({"tasks": GOOD[:2]})  # valid, and pays nothing
    assert validate(problem, incomplete) == [] and not bench.check_plan(problem, incomplete).ok
