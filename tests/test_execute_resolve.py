"""A write whose outcome is unknown (its call cut off by SIGKILL, its tool with no ``reconcile``)
and the way out of it: ``evolve pending`` lists it, ``evolve resolve RUN TASK --done --output``
binds its outputs (its dependents run, the write is not made again) or ``--not-done`` runs it
again, once, with the same idempotency key. Real processes throughout: the run killed, then every
command a subprocess, as a person would type them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from crashing import Spawned, runner, spawn
from test_execute_crash import PROBLEM, TOOLS, plan

from evolve.cli.main import cli


def evolve(run: Spawned, *args: str) -> subprocess.CompletedProcess[str]:
    """``evolve ARGS`` in a process of its own, from the run's folder with its ``CRASH_LOG``."""
    return subprocess.run(
        [sys.executable, "-m", "evolve", *args],
        env={**os.environ, "CRASH_LOG": str(run.log)},
        cwd=run.out.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )


def unknown_write(tmp_path: Path, resumes: int = 1) -> Spawned:
    """A run killed inside t2's write (pay_blind: no reconcile), then resumed: t2 is ``unknown``,
    the run ends ``task_failed``; resumed again, it repeats that (the dead end before resolve)."""
    run = spawn(tmp_path, PROBLEM, plan("pay_blind"), "crash_tools.py", TOOLS, runner("crash_tools.py"),
                "before_commit", "t2")
    assert run.returncode == -signal.SIGKILL, run.stderr
    for _ in range(resumes):
        ended = evolve(run, "execute", "--resume", str(run.out), "--json", "--no-report")
        assert ended.returncode == 1, ended.stderr
        outcome = json.loads(ended.stdout)
        assert (outcome["reason"], outcome["unknown"]) == ("task_failed", ["t2"])
    return run


def events(run: Spawned) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run.out / "events.jsonl").read_text().splitlines()]


def test_an_unknown_write_resolved_done_binds_its_outputs_and_the_run_goes_on(tmp_path: Path) -> None:
    run = unknown_write(tmp_path, resumes=2)
    listed = evolve(run, "pending", str(run.out), "--json")
    assert listed.returncode == 0, listed.stderr
    [item] = json.loads(listed.stdout)
    assert (item["task"], item["kind"], item["idempotency_key"]) == ("t2", "resolve", "pay:1")
    text = evolve(run, "pending", str(run.out))
    assert "evolve resolve RUN t2 --done" in text.stdout
    # answer is for a task a person owns; it still refuses the write, and says so in one line
    refused = evolve(run, "answer", str(run.out), "t2", "--output", '{"receipt": {"key": "pay:1"}}')
    assert refused.returncode == 2 and "evolve resolve" in refused.stderr and "unknown" in refused.stderr
    receipt = tmp_path / "receipt.json"
    receipt.write_text(json.dumps({"receipt": {"key": "pay:1", "checked": "ledger"}}))
    resolved = evolve(run, "resolve", str(run.out), "t2", "--done", "--output", str(receipt),
                      "--as", "ops", "--note", "the ledger shows the payment")
    assert resolved.returncode == 0, resolved.stderr
    assert "t2 resolved done by ops" in resolved.stdout
    assert json.loads(evolve(run, "pending", str(run.out), "--json").stdout) == []
    went_on = evolve(run, "execute", "--resume", str(run.out), "--json", "--no-report")
    assert went_on.returncode == 0, went_on.stderr
    outcome = json.loads(went_on.stdout)
    assert (outcome["status"], outcome["reason"]) == ("completed", "goal_met")
    assert outcome["tasks"]["t2"]["status"] == "done" and outcome["unknown"] == []
    effects = run.log.read_text().splitlines()
    assert effects.count("write pay:1") == 1  # the person said it was made: never made again
    assert effects.count("read t3") == 1  # its dependent ran, on the outputs the person gave
    [said] = [e for e in events(run) if e["event"] == "person.resolved"]
    assert (said["verdict"], said["by"], said["note"]) == ("done", "ops", "the ledger shows the payment")
    assert said["outputs"] == {"receipt": {"key": "pay:1", "checked": "ledger"}}


def test_an_unknown_write_resolved_not_done_runs_again_once_with_the_same_key(tmp_path: Path) -> None:
    run = unknown_write(tmp_path)
    resolved = evolve(run, "resolve", str(run.out), "t2", "--not-done", "--as", "ops",
                      "--note", "no such payment at the provider")
    assert resolved.returncode == 0, resolved.stderr
    went_on = evolve(run, "execute", "--resume", str(run.out), "--json", "--no-report")
    assert went_on.returncode == 0, went_on.stderr
    assert json.loads(went_on.stdout)["reason"] == "goal_met"
    effects = run.log.read_text().splitlines()
    # the cut-off call (which, unknown to the run, did reach the tool) and the one made again
    assert effects.count("write pay:1") == 2
    assert effects.count("read t3") == 1
    again = evolve(run, "execute", "--resume", str(run.out), "--json", "--no-report")
    assert again.returncode == 0 and run.log.read_text().splitlines() == effects  # over: nothing more
    [said] = [e for e in events(run) if e["event"] == "person.resolved"]
    assert (said["verdict"], said["by"], said["idempotency_key"]) == ("not_done", "ops", "pay:1")


def test_resolve_refuses_what_it_cannot_take_in_one_line(tmp_path: Path) -> None:
    """(In this process: the refusals are the command's own checks, and each subprocess costs
    an interpreter start.)"""
    run = unknown_write(tmp_path)
    cases = [
        (("t1", "--not-done"), "t1 is not a write whose outcome is unknown"),
        (("t9", "--not-done"), "no task 't9'"),
        (("t2", "--done"), "--done needs --output"),
        (("t2",), "--done (with --output) or --not-done"),
        (("t2", "--done", "--output", '{"other": 1}'), "missing receipt"),
        (("t2", "--not-done", "--output", '{"receipt": 1}'), "--output goes with --done"),
    ]
    for args, said in cases:
        done = CliRunner().invoke(cli, ["resolve", str(run.out), *args])
        assert done.exit_code == 2, (args, done.output)
        assert said in done.output and "Traceback" not in done.output, (args, done.output)
    listed = CliRunner().invoke(cli, ["pending", str(run.out), "--json"])
    assert [i["task"] for i in json.loads(listed.output)] == ["t2"]  # nothing was written
