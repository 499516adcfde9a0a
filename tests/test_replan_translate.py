"""A replanned task's ``when`` and ``assumes`` that read another new task follow that task to
its fresh id (the loop of evaluator_optimizer rests on it)."""

from __future__ import annotations

from evolve.execute.replan import situation, translate
from evolve.model.plan_file import plan_from_dict
from evolve.model.problem_file import problem_from_dict
from evolve.model.validate import validate

PROBLEM = problem_from_dict({
    "initial": ["ask"], "criteria": ["y"],
    "tools": {"make_x": {"duration": 1, "inputs": ["ask"], "outputs": ["x"]},
              "make_y": {"duration": 1, "inputs": ["x"], "outputs": ["y"]}},
})


def test_when_and_assumes_follow_the_new_ids() -> None:
    live = plan_from_dict({"tasks": [{"id": "t1", "tool": "make_x", "inputs": {"ask": "$ask"}}]})
    status = {"t1": "failed"}
    now = situation(PROBLEM, live, status, {}, (), "t1 (make_x) failed: down")
    proposal = plan_from_dict({"tasks": [
        {"id": "a", "tool": "make_x", "inputs": {"ask": "$ask"}},
        {"id": "b", "tool": "make_y", "deps": ["a"], "inputs": {"x": "$a.x"},
         "when": "exists($a.x)", "assumes": ["$a.x != 'bad'"]},
    ]})
    patch = translate(now, proposal, live, status, {"t1"}, 1)
    first, second = patch.added
    assert (first.id, second.id) == ("t2", "t3")
    assert second.inputs == {"x": "$t2.x"} and second.deps == ("t2",)
    assert second.when == "exists($t2.x)" and second.assumes == ("$t2.x != 'bad'",)
    assert validate(PROBLEM, patch.plan) == []
    assert now.failed is not None and now.failed.id == "t1"  # the task the reason names
