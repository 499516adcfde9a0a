"""``evolve execute``: run a plan with real tools (or simulated ones), durably, replanning on the way.

Exit status 0 when the goal is met, 1 when the run ends without it (the reason is named),
2 for bad input (a file, a field or an option, in one line), 4 when the run waits for a person
(``evolve pending`` says for what; ``evolve approve``/``reject``/``answer``, then ``--resume``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from evolve import defaults
from evolve.cli.common import EXIT_NO, EXIT_OK, EXIT_WAITING, FiniteFloatRange, friendly, runs_root
from evolve.cli.htn import seed_inputs
from evolve.cli.htn_options import input_options
from evolve.cli.options import LlmSettings, llm_options
from evolve.execute.dispatch import Clock, DaskDispatcher, Dispatcher, WallClock
from evolve.execute.executor import ExecuteOptions
from evolve.execute.htn import planned, state_facts
from evolve.execute.options import fit_warning
from evolve.execute.outcome import RunStatus
from evolve.execute.replan import ProposerReplanner, Replanner, SearchReplanner
from evolve.execute.session import DispatcherFactory, NewLimits, read_run, resume_run, start_run
from evolve.execute.simulate import parse_fail_rates
from evolve.llm.argfill import make_arg_filler
from evolve.llm.decide import make_decider
from evolve.mcp.run import resumed_tools, run_meta, served_tools
from evolve.mcp.servers import parse_servers
from evolve.model.documents import read_document
from evolve.model.errors import EvolveError
from evolve.model.plan import Plan
from evolve.model.plan_file import load_plan
from evolve.model.problem import Problem
from evolve.problems import load_problem
from evolve.problems.htn import HtnProblem, is_htn_document
from evolve.problems.htn.pihtn import is_pihtn_document
from evolve.problems.htn.problem import htn_problem
from evolve.report import write_execution_report
from evolve.run.location import new_run_dir


def parse_facts(items: tuple[str, ...]) -> dict[str, Any]:
    """``NAME=VALUE`` items; a value that reads as JSON is that JSON, else the text itself."""
    facts: dict[str, Any] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise click.BadParameter(f"expected NAME=VALUE, got {item!r}", param_hint="--fact")
        try:
            facts[name.strip()] = json.loads(value)
        except json.JSONDecodeError:
            facts[name.strip()] = value
    return facts


@contextmanager
def dispatcher_for(name: str, address: str | None) -> Iterator[DispatcherFactory | None]:
    """The dispatcher factory of ``--dispatcher`` (``None``: the default, threads or the virtual
    clock); a Dask client is closed, and a local cluster stopped, when the run ends."""
    if name != "dask":
        yield None
        return
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise EvolveError("--dispatcher dask needs the dask extra: pip install 'evolve[dask]'") from None
    with ExitStack() as stack:
        if address is None:
            cluster = stack.enter_context(
                LocalCluster(  # type: ignore[no-untyped-call]
                    n_workers=1,
                    threads_per_worker=4,
                    host="127.0.0.1",
                    dashboard_address=None,
                    processes=True,
                )
            )
            client = stack.enter_context(Client(cluster))  # type: ignore[no-untyped-call]
        else:
            client = stack.enter_context(Client(address))  # type: ignore[no-untyped-call]

        def factory(clock: Clock) -> Dispatcher:
            if not isinstance(clock, WallClock):
                raise EvolveError("--dispatcher dask runs real tools; it cannot be used with --simulate")
            return DaskDispatcher(client, clock)

        yield factory


def progress(as_json: bool) -> Any:
    def show(event: dict[str, Any]) -> None:
        if as_json:
            return
        kind = event["event"]
        at = f"{event.get('time', 0):>10.3f}"
        if kind == "step.start":
            text = f"{event['task']:<6} {event['tool']} (attempt {event['attempt']})"
        elif kind == "step.end":
            text = f"{event['task']:<6} {event['tool']} {event['status']}" + (
                f": {event['reason']}" if event.get("reason") else ""
            )
        elif kind == "step.error":
            text = f"{event['task']:<6} {event['tool']} {event['kind']}: {event['error']} -> {event['next']}"
        elif kind == "plan.diff":
            text = (
                f"revision {event['revision']}: removed {', '.join(event['removed']) or '-'}; "
                f"added {', '.join(event['added']) or '-'}; revised {', '.join(event['revised']) or '-'}"
            )
        elif kind == "plan.draft":
            text = f"replanning ({event['replanner']}): {event['reason']}"
        elif kind == "plan.window":
            text = f"horizon {event['horizon']}: revision {event['revision']} commits " + (
                ", ".join(event["committed"]) or "-"
            )
        elif kind == "plan.horizon" and event["action"] == "lift":
            text = "horizon: no replan left, the rest of the plan is committed as it stands"
        elif kind.startswith("awaiting_"):
            text = f"{event['task']:<6} {event['tool']} waits for a person ({event['kind']})"
        else:
            return
        click.echo(f"{at}  {text}", err=True)

    return show


@click.command(name="execute")
@click.argument("plan_file", metavar="PLAN_FILE|DOMAIN", required=False, type=click.Path(dir_okay=False))
@click.option(
    "--problem",
    "problem_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="The problem the plan is for (its catalog, criteria and limits); with --resume, only "
    "its scopes are read: the run is granted those from now on.",
)
@click.option(
    "--tools",
    "tools_spec",
    default=None,
    metavar="MODULE:ATTR",
    help="A mapping of tool name to callable fn(inputs, call) (also FILE.py:ATTR); tools "
    "it lacks come from evolve.tools entry points.",
)
@click.option(
    "--mcp",
    "mcp_items",
    multiple=True,
    metavar='NAME="CMD ARGS"',
    help="An MCP server (stdio) whose tools the plan's tasks call (repeat for more); with "
    "--resume, it replaces the run's server of that name (the run keeps its servers otherwise).",
)
@click.option(
    "--mcp-url",
    "mcp_urls",
    multiple=True,
    metavar="NAME=URL",
    help="A running MCP server (streamable HTTP) whose tools the plan's tasks call.",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Run folder (default: a new folder under runs/).",
)
@click.option(
    "--max-steps",
    type=click.IntRange(min=1),
    default=defaults.EXECUTE_MAX_STEPS,
    help="Steps the run may spend: every tool call, retry and replan made. Default: from the "
    "plan, a call for each task and each retry it allows, and "
    f"{defaults.EXECUTE_STEPS_PER_REPLAN} per replan allowed. With --resume: the run's new budget.",
)
@click.option(
    "--max-replans",
    type=click.IntRange(min=0),
    default=None,
    help=f"Replans the run may spend [default: {defaults.EXECUTE_MAX_REPLANS}]. With --resume: the "
    "run's new budget.",
)
@click.option(
    "--deadline",
    type=FiniteFloatRange(min=0, min_open=True),
    default=None,
    metavar="SECONDS",
    help="The run's deadline, in place of the problem's limits.deadline_s. With --resume: the "
    "run's new deadline.",
)
@click.option(
    "--horizon",
    type=click.IntRange(min=1),
    default=defaults.EXECUTE_HORIZON,
    metavar="K",
    help="A rolling horizon: commit only the next K tasks of the plan, run them, then plan the "
    "rest again from what they made (each a revision with the reason horizon; it spends a replan "
    "and a step). Default: the whole plan is committed.",
)
@click.option(
    "--request-id",
    default=None,
    metavar="ID",
    help="The request this run serves (an alert, a ticket): part of every write's idempotency "
    "key ({request_id}), so two runs of one plan never share a key. Default: the run's own id, "
    "kept on --resume.",
)
@click.option(
    "--resume",
    "resume_dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Continue the run in this folder where it stopped (nothing done is run again).",
)
@click.option(
    "--simulate",
    is_flag=True,
    help="No real tools: each task takes its tool's duration on a virtual clock and returns "
    "placeholder outputs.",
)
@click.option(
    "--fail",
    "fail_items",
    multiple=True,
    metavar="TOOL=RATE",
    help="With --simulate: calls of TOOL fail (retryably) with this probability.",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=defaults.SEED,
    show_default=True,
    help="Seeds the simulated failures and the replanning search.",
)
@click.option(
    "--fact",
    "fact_items",
    multiple=True,
    metavar="NAME=VALUE",
    help="The value of an initial fact (JSON, or text); facts not given are null.",
)
@input_options
@click.option(
    "--timeout",
    type=FiniteFloatRange(min=0, min_open=True),
    default=defaults.EXECUTE_TIMEOUT,
    show_default=True,
    help="Seconds a call may take when its task names no timeout.",
)
@click.option(
    "--replanner",
    type=click.Choice(defaults.EXECUTE_REPLANNERS),
    default=defaults.EXECUTE_REPLANNER,
    show_default=True,
    help="Who proposes the new plan when the run replans.",
)
@click.option(
    "--replan-generations",
    type=click.IntRange(min=0),
    default=defaults.REPLAN_GENERATIONS,
    show_default=True,
    help="Generations of the replanning search.",
)
@click.option(
    "--dispatcher",
    "dispatcher_name",
    type=click.Choice(defaults.EXECUTE_DISPATCHERS),
    default=defaults.EXECUTE_DISPATCHER,
    show_default=True,
    help="Where tool calls run: threads of this process, or a Dask cluster.",
)
@click.option(
    "--scheduler-address",
    default=None,
    help="With --dispatcher dask: a running scheduler (default: a local cluster on 127.0.0.1).",
)
@click.option(
    "--journal-sync",
    type=click.Choice(("FULL", "NORMAL")),
    default=defaults.EXECUTE_JOURNAL_SYNC,
    show_default=True,
    help="FULL: every journal commit reaches the disk before the call it records "
    "(survives a lost machine); NORMAL: survives a killed process, commits faster.",
)
@click.option(
    "--wait",
    type=FiniteFloatRange(min=0),
    default=defaults.EXECUTE_WAIT,
    show_default=True,
    help="Seconds to keep waiting for a person (polling the journal for their decision) before "
    "stopping with status waiting (exit 4).",
)
@click.option(
    "--deadline-includes-waiting",
    is_flag=True,
    default=defaults.EXECUTE_DEADLINE_INCLUDES_WAITING,
    help="Count the time people take to decide against the problem's limits.deadline_s "
    "(by default it is not counted).",
)
@click.option("--no-report", is_flag=True, help="Do not write report.html.")
@click.option("--json", "as_json", is_flag=True, help="Print outcome.json.")
@friendly
@llm_options("base_url", "model", "extra_body")
def execute(
    plan_file: str | None,
    problem_file: str | None,
    tools_spec: str | None,
    mcp_items: tuple[str, ...],
    mcp_urls: tuple[str, ...],
    out_dir: str | None,
    max_steps: int | None,
    max_replans: int | None,
    deadline: float | None,
    horizon: int | None,
    request_id: str | None,
    resume_dir: str | None,
    simulate: bool,
    fail_items: tuple[str, ...],
    seed: int,
    fact_items: tuple[str, ...],
    input_items: tuple[str, ...],
    input_file: str | None,
    timeout: float,
    replanner: str,
    replan_generations: int,
    dispatcher_name: str,
    scheduler_address: str | None,
    journal_sync: str,
    wait: float,
    deadline_includes_waiting: bool,
    no_report: bool,
    as_json: bool,
    llm: LlmSettings,
) -> None:
    """Run PLAN_FILE (or continue a run with --resume DIR).

    Ready tasks run as their inputs become known, at most max_parallel at once, longest
    remaining path first; every call is journaled (journal.sqlite) before it is made and its
    result committed after, so a run killed anywhere continues with --resume and makes no write
    twice. A failure under on_failure: replan, or an assumes that turns out false, replans through
    the search. The run folder holds journal.sqlite, events.jsonl, outcome.json and report.html.
    """
    with ExitStack() as stack:
        proposer_replanner: Replanner
        if replanner == "llm":
            proposer_replanner = ProposerReplanner(stack.enter_context(llm.operator("--replanner llm")))
        else:
            proposer_replanner = SearchReplanner(generations=replan_generations)
        factory = stack.enter_context(dispatcher_for(dispatcher_name, scheduler_address))
        show = progress(as_json)
        if resume_dir is not None:
            if plan_file is not None or simulate or fail_items or fact_items or input_items or input_file:
                raise click.UsageError(
                    "--resume DIR takes the plan, problem, tools and options from the run's "
                    "journal: give no PLAN_FILE, --simulate, --fail, --fact or --input (--problem "
                    "gives the scopes only)"
                )
            if request_id is not None:
                raise click.UsageError(
                    "--resume DIR keeps the run's own request id (from its journal): give no --request-id"
                )
            if horizon is not None:
                raise click.UsageError(
                    "--resume DIR keeps the run's own --horizon (from its journal): give no --horizon"
                )
            folder = Path(resume_dir)
            read_run(folder)[0].close()
            scopes = load_problem(problem_file).scopes if problem_file is not None else None
            filler = (stack.enter_context(make_arg_filler(llm.base_url, llm.model, seed=seed,
                                                          extra_body=llm.extra_body))
                      if llm.base_url and llm.model else None)
            served = stack.enter_context(resumed_tools(folder, mcp_items, mcp_urls))
            executor = resume_run(
                folder, replanner=proposer_replanner, dispatcher=factory, on_event=show,
                arg_filler=filler, wait=wait, scopes=scopes, tools=served,
                limits=NewLimits(max_steps=max_steps, max_replans=max_replans, deadline=deadline),
            )
            if executor.changed:
                click.echo("resumed with new limits: " + ", ".join(
                    f"{name} {'none' if old is None else f'{old:g}'} -> {new:g}"
                    for name, (old, new) in executor.changed.items()), err=True)
        else:
            if plan_file is None:
                raise click.UsageError(
                    "give PLAN_FILE and --problem PROBLEM, or an HTN DOMAIN (or --resume DIR)"
                )
            servers = parse_servers(mcp_items, mcp_urls)
            if servers and (simulate or dispatcher_name == "dask"):
                raise click.UsageError("--mcp calls live servers from this process: not with --simulate "
                                       "or --dispatcher dask")
            if not simulate and tools_spec is None and not servers:
                raise click.UsageError("give --tools MODULE:ATTR or --mcp NAME=\"CMD ARGS\" (or --simulate "
                                       "for a dry run)")
            problem, plan, decisions = problem_and_plan(
                plan_file, problem_file, input_items, input_file, llm.base_url, llm.model, llm.extra_body
            )
            if deadline is not None:
                problem = replace(problem, limits=replace(problem.limits, deadline_s=deadline))
            options = ExecuteOptions(
                max_steps=max_steps,
                max_replans=defaults.EXECUTE_MAX_REPLANS if max_replans is None else max_replans,
                horizon=horizon,
                request_id=request_id,
                seed=seed,
                timeout=timeout,
                journal_sync=journal_sync,
                wait=wait,
                deadline_includes_waiting=deadline_includes_waiting,
            ).for_plan(problem.with_catalog_failure(plan))  # the catalog's retries count
            unfit = fit_warning(plan, options)
            if unfit is not None:
                click.echo(f"warning: {unfit}", err=True)
            folder = Path(out_dir) if out_dir is not None else new_run_dir(runs_root())
            facts = {**state_facts(problem), **parse_facts(fact_items)}
            unset = [f for f in problem.initial if f not in facts]
            if unset and not as_json:
                click.echo(f"note: initial facts without a value (null): {', '.join(unset)}", err=True)
            operators = problem.htn().operators if isinstance(problem, HtnProblem) else {}
            prompted = sorted(name for name, op in operators.items() if op.prompt is not None)
            filler = None
            if prompted and not simulate:
                if not llm.base_url or not llm.model:
                    raise click.UsageError(
                        f"{', '.join(prompted)}: a small model fills the arguments from the prompt: "
                        "give --llm-base-url and --llm-model"
                    )
                filler = stack.enter_context(make_arg_filler(llm.base_url, llm.model, seed=seed,
                                                             extra_body=llm.extra_body))
            served = stack.enter_context(
                served_tools(problem, {t.tool for t in plan.tasks}, servers, tools_spec))
            executor = start_run(
                problem,
                plan,
                folder,
                plan_source=plan_file,
                tools_spec=tools_spec,
                simulate=simulate,
                fail_rates=parse_fail_rates(fail_items, problem),
                facts=facts,
                options=options,
                replanner=proposer_replanner,
                replanner_name=replanner,
                dispatcher=factory,
                dispatcher_name=dispatcher_name,
                on_event=show,
                decisions=decisions,
                arg_filler=filler,
                tools=served,
                extra_meta=run_meta(servers),
            )
        outcome = executor.run()
    written = ["journal.sqlite", "events.jsonl", "outcome.json"]
    if not no_report:
        try:
            written.append(write_execution_report(folder).name)
        except EvolveError as exc:
            click.echo(f"warning: the run is over but its report failed: {exc}", err=True)
    if as_json:
        click.echo(json.dumps({**outcome, "out": str(folder)}, indent=2, default=str))
    else:
        click.echo(summary(outcome))
        click.echo(f"written to {folder}/ ({', '.join(written)})")
    if outcome.get("unknown") and not as_json:
        click.echo(f"writes whose outcome is unknown: {', '.join(outcome['unknown'])}: say what became "
                   f"of each with evolve resolve {folder} TASK --done --output FILE.json (or --not-done)",
                   err=True)
    if outcome["status"] == RunStatus.WAITING:
        if not as_json:
            click.echo(f"waiting for a person: see evolve pending {folder}", err=True)
        sys.exit(EXIT_WAITING)
    sys.exit(EXIT_OK if outcome["status"] == RunStatus.COMPLETED else EXIT_NO)


def problem_and_plan(
    plan_file: str,
    problem_file: str | None,
    input_items: tuple[str, ...],
    input_file: str | None,
    llm_base_url: str | None,
    llm_model: str | None,
    extra_body: Mapping[str, Any] | None = None,
) -> tuple[Problem, Plan, list[dict[str, Any]]]:
    """The problem, the plan to run and the hoisted decisions made: PLAN_FILE with --problem, or
    an HTN domain alone (the plan is then the planner's, from the state seeded by --input /
    --input-file and the domain's decisions)."""
    if problem_file is None:
        doc = read_document(plan_file)
        if not (is_htn_document(doc) or is_pihtn_document(doc)):
            raise click.UsageError(f"{plan_file} is a plan, not an HTN domain: give --problem PROBLEM")
    problem = load_problem(problem_file if problem_file is not None else plan_file)
    decisions: list[dict[str, Any]] = []
    problem, given = seed_inputs(problem, input_items, input_file)
    if isinstance(problem, HtnProblem) and set(problem.htn().decisions) - given:
        if not llm_base_url or not llm_model:
            keys = ", ".join(sorted(set(problem.htn().decisions) - given))
            raise click.UsageError(
                f"the domain decides {keys} by a model before planning: give --llm-base-url and "
                "--llm-model (or the values with --input)"
            )
        with make_decider(llm_base_url, llm_model, extra_body=extra_body) as decider:
            decided = decider.decide(problem.htn(), given, budget=problem.limits.max_llm_calls)
        decisions = list(decided.records)
        for record in decisions:
            why = f" (the answer was refused: {record['refused']})" if record.get("refused") else ""
            click.echo(f"decided {record['key']} = {json.dumps(record['value'])} by {record['source']}{why}",
                       err=True)
        problem = htn_problem(decided.domain, problem)
    if problem_file is None:
        assert isinstance(problem, HtnProblem)
        return problem, planned(problem), decisions
    return problem, load_plan(plan_file), decisions


def summary(outcome: dict[str, Any]) -> str:
    """The outcome in a few lines: status and reason, each task's fate, the revisions."""
    rows = [
        f"{outcome['status']}: {outcome['reason']} ({outcome['message']})",
        f"steps {outcome['steps']}/{outcome['max_steps']}, replans {outcome['replans']}/"
        f"{outcome['max_replans']}, calls by risk: "
        + ", ".join(f"{k} {v}" for k, v in outcome["calls_by_risk"].items())
        + f", writes reconciled {outcome['reconciled']}",
    ]
    for tid, task in outcome["tasks"].items():
        when = (
            f"{task['start']:.3f}-{task['finish']:.3f}"
            if task["start"] is not None and task["finish"] is not None
            else ""
        )
        rows.append(
            f"  {tid:<6} {task['tool']:<28} {task['status']:<11} {when}"
            + (f"  {task['error']}" if task["error"] else "")
        )
    for diff in outcome["revisions"]:
        rows.append(
            f"  revision {diff['revision']}: -{','.join(diff['removed']) or '0'} "
            f"+{','.join(diff['added']) or '0'} ~{','.join(diff['revised']) or '0'}  ({diff['reason']})"
        )
    return "\n".join(rows)


COMMANDS = (execute,)
