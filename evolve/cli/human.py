"""``evolve pending``, ``approve``, ``reject``, ``answer``, ``resolve``: a person's part in a run of
a plan (``resolve``: what became of a write whose outcome is unknown).

A run that needs a person stops with ``status: waiting`` (exit 4). These commands read its
journal, say what it waits for, and commit a decision in one transaction; ``evolve execute
--resume DIR`` then goes on from it. Bad input (an unknown task, one not waiting, an old action
hash, a malformed answer, a run folder of another version) is one line on stderr, exit 2, and
nothing is written.
"""

from __future__ import annotations

import getpass
import json
from pathlib import Path
from typing import Any

import click

from evolve.cli.common import friendly
from evolve.cli.options import Decorator
from evolve.execute.inbox import decide_in, describe, pending_in, resolve_in, unresolved_in
from evolve.execute.people import DecisionError
from evolve.execute.records import Verdict
from evolve.model.errors import EvolveError

RUN_DIR = click.argument("run_dir", type=click.Path(file_okay=False))
TASK = click.argument("task_id")


@click.command(name="pending")
@RUN_DIR
@click.option("--json", "as_json", is_flag=True, help="Print the pending items as JSON.")
@friendly
def pending_command(run_dir: str, as_json: bool) -> None:
    """What the run in RUN_DIR waits for: each task, its tool, the exact action, since when;
    and each write whose outcome is unknown (for evolve resolve).

    A task a planner gave a step id of its own (the plan-execute agent, after a replan) shows it
    in brackets (``t5 [ok]``); approve, reject and answer accept either id."""
    items = pending_in(Path(run_dir)) + unresolved_in(Path(run_dir))
    if as_json:
        click.echo(json.dumps(items, indent=2, default=str))
        return
    if not items:
        click.echo("nothing pending")
    for item in items:
        for line in describe(item):
            click.echo(line)


def decide(
    run_dir: str,
    task_id: str,
    verdict: Verdict,
    *,
    by: str | None,
    note: str | None,
    action: str | None = None,
    outputs: Any = None,
) -> None:
    """Check a decision against the run and commit it (one transaction), or say why not."""
    who = by or getpass.getuser()
    made = decide_in(Path(run_dir), task_id, verdict, by=who, note=note, action=action, outputs=outputs)
    digest = f" (action {made.action_hash[:12]})" if made.action_hash else ""
    step = f" (step {task_id})" if made.task_id != task_id else ""
    click.echo(f"{made.task_id}{step} {verdict} by {who}{digest}; "
               f"go on with: evolve execute --resume {run_dir}")


def who(verb: str) -> Decorator:
    return click.option("--as", "by", default=None, help=f"Who {verb} (default: the user name).")


def verdict_command(name: str, verdict: Verdict, verb: str, note: Decorator, doc: str) -> click.Command:
    """``approve`` or ``reject``: the same arguments, a verdict of their own."""

    @click.command(name=name, help=doc)
    @RUN_DIR
    @TASK
    @who(verb)
    @note
    @click.option("--action", default=None, metavar="HASH",
                  help="The action hash decided on (or a prefix of 8+); refused if it is no longer pending.")
    @friendly
    def command(run_dir: str, task_id: str, by: str | None, note: str | None, action: str | None) -> None:
        decide(run_dir, task_id, verdict, by=by, note=note, action=action)

    return command


approve = verdict_command(
    "approve", Verdict.APPROVED, "approves",
    click.option("--note", default=None, help="Why, for the journal and the report."),
    "Approve the action TASK_ID of the run in RUN_DIR waits for.",
)


def says_why(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """``reject --note``: required, so a blank one is refused too, not journaled as the reason."""
    if not value.strip():
        raise click.BadParameter("say why the action is rejected (the note is empty)")
    return value


reject = verdict_command(
    "reject", Verdict.REJECTED, "rejects",
    click.option("--note", required=True, callback=says_why, help="Why (required)."),
    "Reject the action TASK_ID waits for: the approval fails under its on_failure, and that "
    "action (the same writes, the same inputs) never runs in this run.",
)


def read_output(text: str) -> Any:
    """``--output``: a JSON file, or JSON text."""
    path = Path(text)
    source = f"--output {text}"
    if path.is_dir():  # else it would be parsed as JSON text and refused as "not JSON"
        raise DecisionError(f"{source}: a folder, not a JSON file")
    from_file = text.endswith(".json") or path.is_file()
    try:
        return json.loads(path.read_text(encoding="utf-8") if from_file else text)
    except OSError as exc:
        raise DecisionError(f"{source}: cannot be read ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise DecisionError(f"{source}: not UTF-8 text (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise DecisionError(f"{source if from_file else '--output'}: not JSON ({exc})") from None
    except RecursionError:
        raise EvolveError("--output: nested too deeply") from None


@click.command(name="answer")
@RUN_DIR
@TASK
@click.option("--output", "output", required=True, metavar="FILE.json|JSON",
              help="The task's outputs: a JSON object with each output its tool declares.")
@who("answers")
@click.option("--note", default=None, help="A note for the journal and the report.")
@friendly
def answer(run_dir: str, task_id: str, output: str, by: str | None, note: str | None) -> None:
    """Give the outputs of TASK_ID, a task a person owns (checked against its tool's outputs)."""
    decide(run_dir, task_id, Verdict.ANSWERED, by=by, note=note, outputs=read_output(output))


@click.command(name="resolve")
@RUN_DIR
@TASK
@click.option("--done", "done", flag_value=True, default=None,
              help="The write was made: give its outputs with --output.")
@click.option("--not-done", "done", flag_value=False, help="The write was not made: it is run again, once.")
@click.option("--output", "output", default=None, metavar="FILE.json|JSON",
              help="With --done: the write's outputs, a JSON object with each output its task declares.")
@who("resolves")
@click.option("--note", default=None, help="How it was checked, for the journal and the report.")
@friendly
def resolve(run_dir: str, task_id: str, done: bool | None, output: str | None, by: str | None,
            note: str | None) -> None:
    """Say what became of TASK_ID, a write whose outcome is unknown (its call was cut off and its
    tool has no reconcile): --done with its outputs (its dependents then run), or --not-done (it
    runs again, once, with the same idempotency key). Then: evolve execute --resume RUN_DIR."""
    if done is None:
        raise click.UsageError("say --done (with --output) or --not-done")
    if done and output is None:
        raise click.UsageError("--done needs --output FILE.json: the outputs the write made")
    outputs = read_output(output) if output is not None else None
    who_ = by or getpass.getuser()
    resolve_in(Path(run_dir), task_id, done, by=who_, note=note, outputs=outputs)
    what = "done" if done else "not done (it runs again, with the same idempotency key)"
    click.echo(f"{task_id} resolved {what} by {who_}; go on with: evolve execute --resume {run_dir}")


COMMANDS = (pending_command, approve, reject, answer, resolve)
