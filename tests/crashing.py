"""The crash tests' shared parts: a run started in a process of its own that kills itself with
SIGKILL at one point of the executor's hook, and ``evolve execute --resume`` of it here.

The tools the tests write log every side effect with :data:`LOG_TOOL`'s ``log`` (fsynced, to
the file ``CRASH_LOG`` names), so a test reads what really happened across the kill; the run
and its resume see the same ``CRASH_LOG`` and working folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from evolve.cli.main import cli

LOG_TOOL = '''
import os


def log(line):
    with open(os.environ["CRASH_LOG"], "a", encoding="utf-8") as stream:
        stream.write(line + "\\n")
        stream.flush()
        os.fsync(stream.fileno())
'''
"""The start of a tools file: ``log(line)`` appends a side effect to ``CRASH_LOG``, durably."""

TIMEOUT = 180
"""Seconds a spawned run may take (a hung run fails the test instead of hanging it)."""


def runner(tools_file: str, imports: str = "", arguments: str = "") -> str:
    """A script that runs ``FOLDER/plan.json`` on ``FOLDER/problem.yaml`` with the ``TOOLS`` of
    ``FOLDER/<tools_file>`` (argv: point, target, out, folder) and SIGKILLs itself when the
    executor's hook reaches ``point`` for task ``target``. ``imports`` (lines) and ``arguments``
    (``, name=value`` text) add to what ``start_run`` is given."""
    return f"""
import os, signal, sys
from pathlib import Path
from evolve.execute import start_run
from evolve.model.plan_file import load_plan
from evolve.model.problem_file import read_problem
{imports}
point, target, out, folder = sys.argv[1:5]
def hook(p, t):
    if p == point and t == target:
        os.kill(os.getpid(), signal.SIGKILL)

start_run(read_problem(f"{{folder}}/problem.yaml"), load_plan(f"{{folder}}/plan.json"), Path(out),
          plan_source="plan.json", tools_spec=f"{{folder}}/{tools_file}:TOOLS", hook=hook{arguments}).run()
"""


@dataclass(frozen=True)
class Spawned:
    """A spawned run: its exit status (``-SIGKILL`` when it was killed), stderr, run folder and
    side-effect log."""

    returncode: int
    stderr: str
    out: Path
    log: Path


def spawn(folder: Path, problem: str, plan: dict[str, Any], tools_file: str, tools: str, script: str,
          point: str, target: str) -> Spawned:
    """Write the problem, plan, tools and runner ``script`` (see :func:`runner`) into ``folder``
    and run it in a process of its own, to be killed at ``point`` of ``target`` if it gets
    there; the run goes to ``folder/run``, the side effects to ``folder/effects.log``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "problem.yaml").write_text(problem)
    (folder / "plan.json").write_text(json.dumps(plan))
    (folder / tools_file).write_text(tools)
    (folder / "runner.py").write_text(script)
    log, out = folder / "effects.log", folder / "run"
    done = subprocess.run(
        [sys.executable, str(folder / "runner.py"), point, target, str(out), str(folder)],
        env={**os.environ, "CRASH_LOG": str(log)},
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    return Spawned(done.returncode, done.stderr, out, log)


def resume(run: Spawned) -> Result:
    """``evolve execute --resume RUN --json --no-report`` in this process (the killed run was
    another one), from the run's folder with its ``CRASH_LOG``, as the run had them."""
    saved, here = dict(os.environ), os.getcwd()
    os.environ["CRASH_LOG"] = str(run.log)
    os.chdir(run.out.parent)
    try:
        return CliRunner().invoke(cli, ["execute", "--resume", str(run.out), "--json", "--no-report"])
    finally:
        os.chdir(here)
        os.environ.clear()
        os.environ.update(saved)
