"""Starting and resuming a run of a plan: the checks, the run folder, the journal's record of it.

A new run checks everything before it calls anything: the plan against the validator, a
callable for every tool the plan uses (or ``--simulate``), the fail rates, the facts. What
the run is (the problem, the options, the tools spec, simulate or not) goes into the journal,
so ``--resume DIR`` needs nothing else.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from evolve import defaults
from evolve.execute.dispatch import (
    Clock,
    Dispatcher,
    LocalDispatcher,
    SimulatedDispatcher,
    VirtualClock,
    WallClock,
)
from evolve.execute.executor import ExecuteOptions, Executor, Hook
from evolve.execute.htn import ran_steps
from evolve.execute.htn_tools import ARGFILL, Filling, Ledger, World, bind_htn_tools
from evolve.execute.journal import Journal, JournalError
from evolve.execute.outcome import REOPENED
from evolve.execute.replan import Replanner
from evolve.execute.simulate import simulated_tools
from evolve.execute.tools import ToolError, ToolFn, load_tools
from evolve.llm.argfill import ArgFiller
from evolve.llm.decide import model_calls as decide_calls
from evolve.model.errors import EvolveError
from evolve.model.plan import Plan
from evolve.model.plan_file import plan_from_dict
from evolve.model.problem import Problem
from evolve.model.problem_file import problem_from_dict, problem_to_dict
from evolve.model.validate import validate
from evolve.problems.htn import HtnProblem, htn_problem_from_dict
from evolve.problems.htn.world import replay_state
from evolve.problems.htn.writer import domain_to_dict
from evolve.run.folder import dump_json
from evolve.run.location import make_folder
from evolve.scheduling.kernel import warm_up

JOURNAL = "journal.sqlite"

DispatcherFactory = Callable[[Clock], Dispatcher]
"""Makes the dispatcher for a run given its clock (the CLI passes one for Dask)."""


def tool_table(
    problem: Problem,
    plan: Plan,
    spec: str | None,
    simulate: bool,
    fail_rates: Mapping[str, float],
    seed: int,
    filling: Filling | None = None,
) -> dict[str, ToolFn]:
    """The callables a run uses: stand-ins under simulate, else what ``spec`` and the
    ``evolve.tools`` entry points provide for the catalog (a tool the plan uses must be there)."""
    if simulate:
        return simulated_tools(problem, fail_rates, seed)
    table = bind_htn_tools(problem, load_tools(spec, problem.tools), filling)
    missing = sorted({t.tool for t in plan.tasks if t.tool not in table} - people_own(problem))
    if missing:
        where = f"--tools {spec}" if spec else "no --tools given"
        raise ToolError(f"{where}: no callable for {', '.join(missing)} (and no evolve.tools entry point)")
    return table


def people_own(problem: Problem) -> set[str]:
    """The tools a person owns (``by: human``): they need no callable, a person answers."""
    return {name for name, tool in problem.tools.items() if tool.by == "human"}


def clock_for(simulate: bool, offset: float) -> Clock:
    return VirtualClock(offset) if simulate else WallClock(offset)


def default_dispatcher(clock: Clock) -> Dispatcher:
    if isinstance(clock, VirtualClock):
        return SimulatedDispatcher(clock)
    assert isinstance(clock, WallClock)
    return LocalDispatcher(clock)


def start_run(
    problem: Problem,
    plan: Plan,
    out_dir: Path,
    *,
    plan_source: str,
    tools_spec: str | None,
    simulate: bool = False,
    fail_rates: Mapping[str, float] | None = None,
    facts: Mapping[str, Any] | None = None,
    options: ExecuteOptions | None = None,
    replanner: Replanner | None = None,
    replanner_name: str = defaults.EXECUTE_REPLANNER,
    dispatcher: DispatcherFactory | None = None,
    dispatcher_name: str = defaults.EXECUTE_DISPATCHER,
    on_event: Callable[[dict[str, Any]], None] | None = None,
    hook: Hook | None = None,
    tools: Mapping[str, ToolFn] | None = None,
    decisions: Sequence[Mapping[str, Any]] = (),
    arg_filler: ArgFiller | None = None,
    model_calls: Mapping[str, int] | None = None,
    fallback: str | None = None,
    extra_meta: Mapping[str, Any] | None = None,
) -> Executor:
    """A new run of ``plan`` in ``out_dir`` (which must not hold a journal yet).

    ``fallback``: why ``plan`` is the problem's template rather than the planner's (the
    planner gave no valid plan); ``outcome.json`` lists it under ``fallbacks``.

    ``tools`` (a tool table in hand) takes the place of ``tools_spec`` for callers that are not
    the command line; a run started so is resumed with the same ``tools``. The model calls made
    before the run, ``decisions``' (``decide``) and ``model_calls`` (by purpose: the agent's
    first plan, ``plan``), are journaled with its first revision and count against its
    ``limits.max_llm_calls``. ``extra_meta`` joins the journal's record of the run (the MCP
    servers a resumed run starts again)."""
    plan = problem.with_catalog_failure(plan)
    errors = validate(problem, plan, facts)
    if errors:
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise EvolveError(f"{plan_source}: the plan is not valid: {errors[0]}{more}")
    rates = dict(fail_rates or {})
    if rates and not simulate:
        raise EvolveError("--fail needs --simulate (it sets the failure rates of simulated tools)")
    unknown_facts = sorted(set(facts or {}) - problem.initial_set())
    if unknown_facts:
        raise EvolveError(
            f"--fact {unknown_facts[0]}: not an initial fact of the problem "
            f"({', '.join(problem.initial) or 'none'})"
        )
    options = (options or ExecuteOptions()).for_plan(plan)
    if options.request_id is None:  # the run's own id: kept in the journal, so a resume keeps it
        options = replace(options, request_id=f"run-{uuid.uuid4().hex[:12]}")
    filling = filling_for(problem, out_dir, arg_filler, None)
    if tools is None:
        tools = tool_table(problem, plan, tools_spec, simulate, rates, options.seed, filling)
    else:
        tools = tools if simulate else bind_htn_tools(problem, tools, filling)
        missing = sorted({t.tool for t in plan.tasks if t.tool not in tools} - people_own(problem))
        if missing:
            raise ToolError(f"no callable for {', '.join(missing)}")
    make_folder(out_dir)
    path = out_dir / JOURNAL
    journal = Journal(path, sync=options.journal_sync)
    if journal.meta():
        journal.close()
        raise EvolveError(f"{out_dir}: already holds a run (continue it with --resume {out_dir})")
    problem_doc = problem_to_dict(problem)
    (out_dir / "problem.json").write_text(dump_json(problem_doc))
    (out_dir / "plan.json").write_text(dump_json(plan.to_dict()))
    warm_up()  # the planned schedule's compiled kernel loads before the run's clock starts
    clock = clock_for(simulate, 0.0)
    meta: dict[str, Any] = {
        "problem": problem_doc,
        "plan_source": plan_source,
        "tools": tools_spec,
        "simulate": simulate,
        "fail": rates,
        "facts": dict(facts or {}),
        "options": options.to_dict(),
        "dispatcher": dispatcher_name,
        "replanner": replanner_name,
        **(extra_meta or {}),
    }
    if fallback is not None:
        meta["fallback"] = {"reason": "template_fallback", "message": fallback}
    if decisions:
        meta["decisions"] = [dict(d) for d in decisions]  # the hoisted decisions made before planning
    if isinstance(problem, HtnProblem) and problem.domain is not None:
        # a resumed run replans by it; text, since the journal sorts keys and method order matters
        meta["htn"] = json.dumps(domain_to_dict(problem.domain)["htn"])
    before = {"decide": decide_calls(decisions), **(model_calls or {})}
    return Executor.start(
        problem,
        plan,
        journal,
        meta,
        model_calls=before,
        tools=tools,
        dispatcher=(dispatcher or default_dispatcher)(clock),
        options=options,
        replanner=replanner,
        facts=facts or {},
        run_dir=out_dir,
        simulate=simulate,
        on_event=on_event,
        hook=hook,
    )


def open_run(run_dir: Path, *, read_only: bool = False) -> tuple[Journal, dict[str, Any]]:
    """The journal of ``run_dir`` (opened ``read_only`` or not) and its record of the run."""
    path = run_dir / JOURNAL
    if not path.is_file():
        raise JournalError(f"{run_dir}: no {JOURNAL} (not a run folder of evolve execute)")
    journal = Journal(path, read_only=read_only)
    meta = journal.meta()
    if "problem" not in meta or "options" not in meta:
        raise JournalError(f"{path}: the run never started (no record of its problem); start it again")
    return journal, meta


def read_run(run_dir: Path, *, read_only: bool = False) -> tuple[Journal, dict[str, Any], Problem]:
    """:func:`open_run`, and the run's problem (data only)."""
    journal, meta = open_run(run_dir, read_only=read_only)
    return journal, meta, problem_of(meta, str(run_dir / JOURNAL))


def filling_for(problem: Problem, run_dir: Path, filler: ArgFiller | None,
                journal: Journal | None) -> Filling | None:
    """An HTN run's live world (replayed from ``journal`` when resuming) and its argument ledger."""
    domain = problem.domain if isinstance(problem, HtnProblem) else None
    if domain is None:
        return None
    state: dict[str, Any] = dict(domain.state)
    if journal is not None and journal.revisions():
        rows = journal.tasks()
        plan = plan_from_dict(journal.revisions()[-1].plan, str(journal.path), "revisions")
        outputs = {tid: dict(row.outputs) for tid, row in rows.items() if row.outputs is not None}
        steps = ran_steps(domain, plan, {tid: row.status for tid, row in rows.items()}, outputs)
        state = replay_state(domain, [done for _, done in steps])
    return Filling(filler, Ledger(run_dir / ARGFILL), World(state))


CATALOG_KEYS = ("name", "objective", "scopes", "limits", "resources", "policy")


def problem_of(meta: Mapping[str, Any], source: str) -> Problem:
    """The run's problem as its journal keeps it: an HTN domain with its catalog keys, or data."""
    if "htn" in meta:
        doc = {k: v for k, v in meta["problem"].items() if k in CATALOG_KEYS}
        return htn_problem_from_dict({**doc, "htn": json.loads(meta["htn"])}, source)
    return problem_from_dict(meta["problem"], source)


@dataclass(frozen=True)
class NewLimits:
    """Budgets a resumed run is given instead of its own (``None``: kept as they were)."""

    max_steps: int | None = None
    max_replans: int | None = None
    deadline: float | None = None
    """Seconds: the problem's ``limits.deadline_s`` from now on."""


LIMIT_OPTIONS = ("max_steps", "max_replans")
"""The options :class:`NewLimits` may change (the deadline is the problem's)."""

def new_limits(options: ExecuteOptions, problem: Problem,
               limits: NewLimits) -> tuple[ExecuteOptions, Problem, dict[str, list[Any]]]:
    """``options`` and ``problem`` with ``limits``, and what changed: name -> ``[before, after]``
    (the option's name as the command line spells it)."""
    changed: dict[str, list[Any]] = {}
    if limits.max_steps is not None and limits.max_steps != options.max_steps:
        changed["--max-steps"] = [options.max_steps, limits.max_steps]
        options = replace(options, max_steps=limits.max_steps)
    if limits.max_replans is not None and limits.max_replans != options.max_replans:
        changed["--max-replans"] = [options.max_replans, limits.max_replans]
        options = replace(options, max_replans=limits.max_replans)
    if limits.deadline is not None and limits.deadline != problem.limits.deadline_s:
        changed["--deadline"] = [problem.limits.deadline_s, limits.deadline]
        problem = replace(problem, limits=replace(problem.limits, deadline_s=limits.deadline))
    return options, problem, changed


def resume_run(
    run_dir: Path,
    *,
    replanner: Replanner | None = None,
    dispatcher: DispatcherFactory | None = None,
    on_event: Callable[[dict[str, Any]], None] | None = None,
    hook: Hook | None = None,
    tools: Mapping[str, ToolFn] | None = None,
    arg_filler: ArgFiller | None = None,
    wait: float | None = None,
    scopes: tuple[str, ...] | None = None,
    limits: NewLimits | None = None,
) -> Executor:
    """The run in ``run_dir``, continued where it stopped (``tools``, ``arg_filler``: as for
    :func:`start_run`; ``wait``: the seconds this session waits for a person, instead of the
    run's; ``scopes``: the scopes the run is granted from now on, kept in the journal: writes and
    approvals are authorized again when they are dispatched; ``limits``: new budgets, kept in the
    journal with the session's ``session.resume`` event (``Executor.changed`` says what they
    changed): a run that stopped on a budget they raise goes on)."""
    for name in ("events.jsonl", "outcome.json"):  # written again from the journal: a folder there is damage
        if (run_dir / name).is_dir():
            raise JournalError(f"{run_dir / name}: a folder where the run's file belongs; "
                               "remove it, then resume (the journal holds the run)")
    journal, meta, problem = read_run(run_dir)
    if scopes is not None and scopes != problem.scopes:
        problem = replace(problem, scopes=scopes)
        journal.write((), (), {"problem": problem_to_dict(problem)})
    filling = filling_for(problem, run_dir, arg_filler, journal)
    try:
        options = ExecuteOptions(**meta["options"])
        if wait is not None:
            options = replace(options, wait=wait)
    except (TypeError, ValueError) as exc:
        raise JournalError(f"{run_dir / JOURNAL}: options not understood ({exc})") from None
    options, problem, changed = new_limits(options, problem, limits or NewLimits())
    if changed:
        saved = {**meta["options"], **{k: v for k, v in options.to_dict().items() if k in LIMIT_OPTIONS}}
        reopen = (meta.get("complete") or {}).get("reason") in REOPENED
        journal.write((), (), {
            "options": saved,
            "problem": problem_to_dict(problem),
            **({"complete": None} if reopen else {}),
        })
    journal.db.execute(f"PRAGMA synchronous={options.journal_sync}")
    simulate = bool(meta.get("simulate"))
    revisions = journal.revisions()
    plan_tools = {task["tool"] for rev in revisions for task in rev.plan.get("tasks", [])}
    if simulate:
        tools = simulated_tools(problem, meta.get("fail") or {}, options.seed)
    elif tools is None:
        tools = bind_htn_tools(problem, load_tools(meta.get("tools"), problem.tools), filling)
        missing = sorted(t for t in plan_tools - people_own(problem) if t not in tools)
        if missing:
            raise ToolError(f"--tools {meta.get('tools')}: no callable for {', '.join(missing)}")
    else:
        tools = bind_htn_tools(problem, tools, filling)
    events = journal.events()
    offset = float(events[-1].get("time", 0.0)) if events else 0.0
    warm_up()
    clock = clock_for(simulate, offset)
    make = dispatcher or default_dispatcher
    return Executor.resume(
        problem,
        journal,
        changed=changed,
        tools=tools,
        dispatcher=make(clock),
        options=options,
        replanner=replanner,
        facts=meta.get("facts") or {},
        run_dir=run_dir,
        simulate=simulate,
        on_event=on_event,
        hook=hook,
    )



