"""Budgets that mean what they say (issue 43, item 2), through the command line in processes of
their own: a step is a call made (ready tasks run while steps remain); a plan that cannot fit is
warned about before the run; ``--resume`` takes new limits, journals them and says so; the
default step budget fits the plan; ``--horizon`` reaches the goal at the defaults and a person is
never asked twice for an action they approved."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
SIMULATE = [str(EXAMPLES / "refund_plan.yaml"), "--problem", str(EXAMPLES / "refund.yaml"), "--simulate"]


def evolve(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "evolve", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def events(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]


def test_one_step_runs_one_call_and_resume_takes_a_new_budget(tmp_path: Path) -> None:
    run = tmp_path / "run"
    first = evolve(tmp_path, "execute", *SIMULATE, "--max-steps", "1", "--out", str(run), "--no-report")
    assert first.returncode == 1, first.stderr
    # said before the run starts: 9 tasks cannot fit 1 step
    assert "warning: the plan needs 9 steps (9 tasks) but --max-steps is 1" in first.stderr
    assert "failed: step_budget" in first.stdout and "steps 1/1" in first.stdout
    outcome = json.loads((run / "outcome.json").read_text())
    assert [t for t, row in outcome["tasks"].items() if row["status"] == "done"] == ["t1"]
    more = evolve(tmp_path, "execute", "--resume", str(run), "--max-steps", "30", "--json", "--no-report")
    assert more.returncode == 0, more.stderr
    assert "resumed with new limits: --max-steps 1 -> 30" in more.stderr
    went_on = json.loads(more.stdout)
    assert (went_on["reason"], went_on["steps"], went_on["max_steps"]) == ("goal_met", 9, 30)
    [resume] = [e for e in events(run) if e["event"] == "session.resume"]
    assert resume["limits"] == {"--max-steps": [1, 30]}  # journaled with the session


def test_a_run_past_its_deadline_goes_on_with_a_new_one(tmp_path: Path) -> None:
    run = tmp_path / "run"
    late = evolve(tmp_path, "execute", *SIMULATE, "--deadline", "200", "--out", str(run), "--json",
                  "--no-report")
    assert late.returncode == 1, late.stderr
    assert json.loads(late.stdout)["reason"] == "deadline"
    more = evolve(tmp_path, "execute", "--resume", str(run), "--deadline", "5000", "--max-replans", "2",
                  "--json", "--no-report")
    assert more.returncode == 0, more.stderr
    assert "resumed with new limits: --max-replans 5 -> 2, --deadline 200 -> 5000" in more.stderr
    went_on = json.loads(more.stdout)
    assert (went_on["reason"], went_on["max_replans"]) == ("goal_met", 2)


def test_a_rolling_horizon_reaches_the_goal_at_the_default_budget(tmp_path: Path) -> None:
    run = tmp_path / "run"
    done = evolve(tmp_path, "execute", *SIMULATE, "--horizon", "3", "--out", str(run), "--json",
                  "--no-report")
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout)
    assert outcome["reason"] == "goal_met"
    # the default is the plan's: 9 tasks, 4 retries (t1, t2: 2 each), 5 replans of 3 steps
    assert outcome["max_steps"] == 9 + 4 + 5 * 3
    assert outcome["steps"] <= 12  # the sources' 12-step budget would have done too
    # t6 approved the refund: no revision of the horizon adds an approval of it again
    assert outcome["calls_by_risk"]["approval"] == 1
    assert [row["tool"] for row in outcome["tasks"].values()].count("approvals.auto") == 1


def test_a_person_is_not_asked_again_for_what_they_approved_after_a_horizon_replan(tmp_path: Path) -> None:
    """The approval is a person's (the catalog holds no automatic one, nor a way around the
    refund), and the horizon plans the rest again right after it was given."""
    problem = yaml.safe_load((EXAMPLES / "refund.yaml").read_text())
    for tool in ("approvals.auto", "payments.trace_settlement", "payments.void_capture"):
        del problem["tools"][tool]
    (tmp_path / "problem.yaml").write_text(yaml.safe_dump(problem))
    run = tmp_path / "run"
    # from the repository's root, where examples.refund_tools is imported from
    waiting = evolve(ROOT, "execute", str(EXAMPLES / "refund_human_plan.yaml"), "--problem",
                     str(tmp_path / "problem.yaml"), "--tools", "examples.refund_tools:NO_PRIOR_REFUND",
                     "--horizon", "3", "--out", str(run), "--no-report")
    assert waiting.returncode == 4, waiting.stderr
    approved = evolve(tmp_path, "approve", str(run), "t6", "--as", "asha", "--note", "refund once")
    assert approved.returncode == 0, approved.stderr
    done = evolve(ROOT, "execute", "--resume", str(run), "--json", "--no-report")
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout)
    assert outcome["reason"] == "goal_met"
    assert outcome["tasks"]["t7"]["status"] == "done"
    asks = [e for e in events(run) if e["event"] == "awaiting_approval"]
    assert [e["task"] for e in asks] == ["t6"]  # asked once, before the horizon moved on
    assert [r["tool"] for r in outcome["tasks"].values()].count("approvals.manager") == 1
