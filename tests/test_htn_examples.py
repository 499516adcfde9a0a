"""The three HTN examples end to end: a scripted small model on 127.0.0.1 makes the hoisted
decision, scripted tools run the plan, the first rung fails for good, the next one heals, and
the tools' own outputs are bound into the world state."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evolve.execute.htn import ran_steps
from evolve.execute.session import read_run
from evolve.model.plan_file import plan_from_dict
from evolve.problems.htn import HtnProblem
from evolve.problems.htn.world import replay_state
from examples.htn.demo import main

CASES = [
    ("pr-doctor", ("failure_class", "lint"), "push_fix", "revert_commit",
     ("comment_url", "https://example.invalid/pr/7#comment-1")),
    ("fix-red-test", ("approach", "guard"), "verify_guard", "verify_dedupe",
     ("comment", "Made appendStatus idempotent: strip the footer, then append it.")),
    ("k8s-medic", ("action", "set-image"), "verify_model", "verify_restore",
     ("note", "Restored the last known good image after an image pull failure.")),
]
FIELDS = {"fix-red-test": {"line": "if (systemPrompt.endsWith(FOOTER)) return systemPrompt;"},
          "k8s-medic": {"image": "nginx:1.27"}}
"""The decisions of two fields, judged as one object: the second field of each."""
FILLED = {"pr-doctor": "comment_pr", "fix-red-test": "report", "k8s-medic": "note_incident"}
"""The step whose arguments the small model fills at run time, in each example."""


@pytest.mark.parametrize(("name", "decision", "failed", "healed", "bound"), CASES)
def test_the_example_lands_on_the_next_rung(tmp_path: Path, name: str, decision: tuple[str, str], failed: str,
                                            healed: str, bound: tuple[str, str]) -> None:
    assert main([name, "--out", str(tmp_path / "run")]) == 0
    outcome = json.loads((tmp_path / "run" / "outcome.json").read_text())
    assert outcome["reason"] == "goal_met", outcome["message"]
    record = outcome["hoisted_decisions"][0]
    assert (record["key"], record["value"], record["source"]) == (*decision, "model")
    fate = {t["tool"]: t["status"] for t in outcome["tasks"].values()}
    assert fate[failed] == "failed" and fate[healed] == "done"
    journal, _, problem = read_run(tmp_path / "run")
    try:
        outputs = {tid: dict(row.outputs) for tid, row in journal.tasks().items() if row.outputs is not None}
    finally:
        journal.close()
    assert isinstance(problem, HtnProblem)
    plan = plan_from_dict(outcome["plan"], "outcome.json", "plan")
    status = {tid: task["status"] for tid, task in outcome["tasks"].items()}
    world = replay_state(problem.htn(), [done for _, done in ran_steps(problem.htn(), plan, status, outputs)])
    assert world[bound[0]] == bound[1]  # a $result binding, from the scripted tool's own outputs
    assert world[decision[0]] == decision[1]  # the decision, merged into the state before planning
    assert record.get("fields", {}) == FIELDS.get(name, {})
    for key, value in FIELDS.get(name, {}).items():
        assert world[key] == value
    [fill] = outcome["arg_fills"]  # argument filling, exercised once in every example
    assert fill["accepted"] and fill["source"] == "model"
    assert outcome["tasks"][fill["task"]]["tool"] == FILLED[name]
    assert outcome["model_calls"]["argfill"] == 1
