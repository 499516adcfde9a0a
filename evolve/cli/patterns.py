"""``evolve patterns demo``: the five workflow patterns, run through the executor with scripted models."""

from __future__ import annotations

import json
from pathlib import Path

import click

from evolve.cli.common import friendly, runs_root
from evolve.execute.outcome import Reason
from evolve.patterns.demo import run_demo
from evolve.run.location import new_run_dir


@click.group(name="patterns")
def patterns() -> None:
    """The workflow patterns of evolve.patterns (prompt_chain, route, parallel_vote,
    orchestrator_workers, evaluator_optimizer)."""


@patterns.command(name="demo")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default=None,
              help="Folder for the runs, one sub-folder per pattern (default: a new folder under runs/).")
@click.option("--json", "as_json", is_flag=True, help="Print each pattern's result as JSON.")
@friendly
def demo(out_dir: str | None, as_json: bool) -> None:
    """Run all five patterns against scripted models (no model, no network): each is a plan run
    by the durable executor, with its journal, outcome and report in its own folder."""
    root = Path(out_dir) if out_dir is not None else new_run_dir(runs_root())
    results = run_demo(root)
    if as_json:
        click.echo(json.dumps([{"pattern": r.pattern, "status": r.status, "reason": r.reason,
                                "value": r.value, "message": r.message, "out": str(r.out)}
                               for r in results], indent=2, default=str))
        return
    for r in results:
        click.echo(f"{r.pattern:<22} {r.status:<9} {r.reason:<15} {json.dumps(r.value, default=str)}")
        if r.reason != Reason.GOAL_MET:
            click.echo(f"{'':<22} {r.message}")
    click.echo(f"written to {root}/ (one folder per pattern: journal.sqlite, events.jsonl, "
               "outcome.json, report.html)")


COMMANDS = (patterns,)
