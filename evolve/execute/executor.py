"""The executor: runs a plan's tasks as their inputs become known, durably, and replans.

One coordinator loop, in this order, until nothing is left to do:

1. *settle*: every pending task whose upstream changed is looked up in the readiness table
   (:mod:`evolve.execute.readiness`); skips are committed, an ``assumes`` whose references are
   all known is checked (false: replan);
2. *dispatch*: ready tasks, longest remaining path first (the scheduler's backward tails), while
   a ``max_parallel`` slot is free, the tool's ``uses`` fit the resources and steps are left;
   each call's dispatch record is committed before the call is made;
3. *collect*: answers from the dispatcher, each committed in one transaction (outputs and
   ``done``, or the error); a failure is retried (exponential backoff, capped, within a window)
   or is final, and then the task's ``on_failure`` decides;
4. *replan*, once nothing is running, when a failure or an assumption asked for it.

Everything the loop decides from is in the journal, so a run killed anywhere continues with
:meth:`Executor.resume`: done tasks keep their outputs, a read found dispatched is run again, a
write found so is reconciled through its tool's ``reconcile`` (no ``reconcile``: ``unknown``,
and its policy decides).
"""

from __future__ import annotations

import heapq
import json
import math
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import IO, Any

from evolve import defaults
from evolve.execute.dispatch import Dispatcher, Job, Result
from evolve.execute.htn import goal_unmet
from evolve.execute.journal import Dispatch, Journal, JournalError, Revision, Settle, TaskRow, dumps
from evolve.execute.outcome import PlanDiff, build_outcome
from evolve.execute.readiness import POLICIES, Policy, When, aggregate, decide
from evolve.execute.replan import Replanner, pending_plan, signature, situation, translate
from evolve.execute.tools import Call, ToolFn, reconciler
from evolve.model.evaluation import UnknownReference, holds, resolver
from evolve.model.expression import ExpressionError, parse_expression
from evolve.model.files import plan_from_dict
from evolve.model.graph import successors, topological_order
from evolve.model.plan import Plan, Task, parse_ref
from evolve.model.problem import Problem
from evolve.model.validate import produced_by, validate
from evolve.scheduling import schedule
from evolve.scheduling.base import EPS, Capacity, PlanGraph, backward_tails, demand_vector

POINTS = ("before_dispatch", "dispatched", "before_commit", "after_commit")
"""Where a :data:`Hook` is called for each call: before its dispatch record, after it (the call
not yet made), after the call returned but before its result is committed, after the commit.
Fault-injection tests kill the process there."""

Hook = Callable[[str, str], None]
"""``hook(point, task_id)``."""


@dataclass(frozen=True)
class ExecuteOptions:
    """How a run spends its budgets and waits. Stored in the journal: a resumed run keeps them."""

    max_steps: int = defaults.EXECUTE_MAX_STEPS
    max_replans: int = defaults.EXECUTE_MAX_REPLANS
    seed: int = defaults.SEED
    timeout: float = defaults.EXECUTE_TIMEOUT
    backoff: float = defaults.EXECUTE_BACKOFF
    backoff_cap: float = defaults.EXECUTE_BACKOFF_CAP
    retry_window: float = defaults.EXECUTE_RETRY_WINDOW
    journal_sync: str = defaults.EXECUTE_JOURNAL_SYNC

    def __post_init__(self) -> None:
        if self.max_steps < 1 or self.max_replans < 0:
            raise ValueError(
                f"max_steps must be >= 1 and max_replans >= 0, got {self.max_steps}, {self.max_replans}"
            )
        if self.journal_sync not in ("FULL", "NORMAL"):
            raise ValueError(f"journal sync must be FULL or NORMAL, got {self.journal_sync!r}")
        if self.timeout <= 0 or self.backoff < 0 or self.backoff_cap < 0 or self.retry_window < 0:
            raise ValueError("timeout must be > 0 and backoff, backoff_cap, retry_window >= 0")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def task_policy(task: Task) -> Policy:
    policy = task.on_failure
    for known in POLICIES[1:]:
        if policy == known:
            return known
    return "fail_plan"


def task_assumes(task: Task) -> tuple[str, ...]:
    return tuple(task.assumes)


@dataclass
class Stop:
    reason: str
    message: str


@dataclass
class State:
    """The loop's view of the journal (rebuilt from it on resume)."""

    plan: Plan
    revision: int
    status: dict[str, str]
    outputs: dict[str, dict[str, Any]]
    attempts: dict[str, int]
    failures: dict[str, int]
    first_failure: dict[str, float]
    excluded: set[str]
    replan: str | None
    signatures: set[str] = field(default_factory=set)


class Executor:
    """One run of a plan. Build it with :meth:`start` (a new run) or :meth:`resume`."""

    def __init__(
        self,
        problem: Problem,
        journal: Journal,
        state: State,
        *,
        tools: Mapping[str, ToolFn],
        dispatcher: Dispatcher,
        options: ExecuteOptions,
        replanner: Replanner | None,
        facts: Mapping[str, Any],
        run_dir: Path,
        simulate: bool = False,
        on_event: Callable[[dict[str, Any]], None] | None = None,
        hook: Hook | None = None,
    ) -> None:
        self.problem = problem
        self.journal = journal
        self.state = state
        self.tools = tools
        self.dispatcher = dispatcher
        self.clock = dispatcher.clock
        self.options = options
        self.replanner = replanner
        self.facts = dict(facts)
        self.run_dir = run_dir
        self.simulate = simulate
        self.on_event = on_event
        self.hook = hook or (lambda point, task_id: None)
        self.capacity = Capacity.of(problem)
        self.held = [0.0] * len(self.capacity.names)
        self.demands: dict[str, tuple[float, ...]] = {}
        self.calls: dict[int, int] = {}
        self.replans_tried = max(0, len(journal.revisions()) - 1)
        self.steps = journal.call_count() + self.replans_tried
        self.stop: Stop | None = None
        self.ready: list[tuple[float, int, str]] = []
        self.queued: set[str] = set()
        self.delayed: list[tuple[float, str]] = []
        self.retry_at: dict[str, float] = {}
        self.dirty: list[tuple[int, str]] = []
        self.assumed: set[str] = set()
        self.cascaded = {tid for tid, row in journal.tasks().items() if row.status == "skipped" and row.error}
        """Tasks skipped because an upstream task failed (their journal row keeps why)."""
        self.when_error = ""
        self.began = time.perf_counter()
        self.events_file: IO[str] = (run_dir / "events.jsonl").open("a", encoding="utf-8")
        self.index_plan()

    # -- building ----------------------------------------------------------------------------

    @classmethod
    def start(
        cls, problem: Problem, plan: Plan, journal: Journal, meta: Mapping[str, Any], **kwargs: Any
    ) -> Executor:
        """A new run of ``plan``: revision 0 committed with every task pending."""
        (kwargs["run_dir"] / "events.jsonl").write_text("")
        state = State(
            plan=plan,
            revision=0,
            status={t.id: "pending" for t in plan.tasks},
            outputs={},
            attempts={},
            failures={},
            first_failure={},
            excluded=set(),
            replan=None,
        )
        executor = cls(problem, journal, state, **kwargs)
        # what the run is, with its first revision: one transaction, so a journal either holds a
        # run that can be resumed or nothing
        executor.commit_revision(0, plan, patch=None, reason="the plan as given", invalidated=(), meta=meta)
        return executor

    @classmethod
    def resume(cls, problem: Problem, journal: Journal, **kwargs: Any) -> Executor:
        """The run in ``journal`` where it stopped; ``events.jsonl`` is written again from it."""
        meta = journal.meta()
        revisions = journal.revisions()
        if not revisions:
            raise JournalError(f"{journal.path}: the run never committed a plan; start it again")
        plan = plan_from_dict(revisions[-1].plan, str(journal.path), "revisions")
        rows = journal.tasks()
        state = State(
            plan=plan,
            revision=revisions[-1].revision,
            status={tid: row.status for tid, row in rows.items()},
            outputs={tid: dict(row.outputs) for tid, row in rows.items() if row.outputs is not None},
            attempts={tid: row.attempts for tid, row in rows.items()},
            failures={tid: row.failures for tid, row in rows.items()},
            first_failure={
                tid: row.first_failure for tid, row in rows.items() if row.first_failure is not None
            },
            excluded=set(meta.get("excluded") or ()),
            replan=meta.get("replan"),
            signatures={r.diff.get("signature", "") for r in revisions if r.diff},
        )
        last: dict[str, dict[str, Any]] = {}
        with (kwargs["run_dir"] / "events.jsonl").open("w", encoding="utf-8") as stream:
            for event in journal.events():
                stream.write(json.dumps(event, sort_keys=True) + "\n")
                if "task" in event:
                    last[event["task"]] = event
        executor = cls(problem, journal, state, **kwargs)
        for tid, event in last.items():  # a retry that was waiting keeps its time
            retry_at = event.get("retry_at") if event["event"] == "step.error" else None
            if state.status.get(tid) == "pending" and retry_at is not None:
                heapq.heappush(executor.delayed, (retry_at, tid))
                executor.retry_at[tid] = retry_at
        for task in plan.tasks:
            row = rows.get(task.id)
            if (
                row is not None
                and row.status in ("failed", "unknown")
                and task_policy(task) in ("fail_plan", "retry")
            ):
                executor.stop = Stop("task_failed", f"{task.id} ({task.tool}) failed: {row.error}")
        executor.emit(journal.record([executor.event("session.resume")]))
        return executor

    def index_plan(self) -> None:
        """Topological places, successors and longest remaining paths of the live plan."""
        plan = self.state.plan
        self.tasks = plan.by_id()
        deps = plan.dependency_map()
        self.topo = {tid: i for i, tid in enumerate(topological_order(deps))}
        self.succ = successors(deps)
        todo = pending_plan(plan, self.state.status)
        self.tail = backward_tails(PlanGraph.of(self.problem, todo))

    # -- events ------------------------------------------------------------------------------

    def event(self, name: str, /, **fields: Any) -> dict[str, Any]:
        return {"event": name, "time": round(self.clock.now(), 6), **fields}

    def risk_of(self, tool_name: str) -> str:
        """The tool's risk; ``read`` for a tool the catalog no longer has."""
        tool = self.problem.tools.get(tool_name)
        return tool.risk if tool else "read"

    def step_event(
        self, name: str, task: Task, /, *, risk: str | None = None, attempt: int | None = None, **fields: Any
    ) -> dict[str, Any]:
        """An event about one step of ``task``, in the one shape every ``step.*`` event starts
        with; the risk defaults to the tool's (``read`` for a tool the catalog lost) and the
        attempt to the task's last."""
        return self.event(
            name,
            task=task.id,
            tool=task.tool,
            risk=self.risk_of(task.tool) if risk is None else risk,
            attempt=self.state.attempts.get(task.id, 0) if attempt is None else attempt,
            **fields,
        )

    def step_error(
        self,
        task: Task,
        error: str,
        kind: str,
        *,
        retryable: bool,
        nxt: str,
        started: float,
        finished: float,
        retry_at: float | None = None,
        risk: str | None = None,
        attempt: int | None = None,
    ) -> dict[str, Any]:
        """The ``step.error`` event: the same fields for every way a step fails."""
        return self.step_event(
            "step.error",
            task,
            risk=risk,
            attempt=attempt,
            error=error,
            kind=kind,
            retryable=retryable,
            next=nxt,
            retry_at=retry_at,
            started=started,
            finished=finished,
        )

    def emit(self, events: Iterable[dict[str, Any]]) -> None:
        for event in events:
            self.events_file.write(json.dumps(event, sort_keys=True, default=str) + "\n")
            if self.on_event is not None:
                self.on_event(event)

    # -- the loop ----------------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        """Run until the plan is done or a stop; returns ``outcome.json``'s content."""
        meta = self.journal.meta()
        try:
            if meta.get("complete"):
                return self.outcome(meta["complete"]["reason"], meta["complete"]["message"], record=False)
            self.recover()
            self.dirty_all()
            while True:
                if self.stop is None:
                    self.settle()
                if self.stop is None and self.state.replan is None:
                    self.dispatch_ready()
                if self.dispatcher.running():
                    self.on_results(self.dispatcher.collect(self.next_wake()))
                    self.events_file.flush()
                    continue
                if self.stop is not None:
                    break
                if self.state.replan is not None:
                    self.replan()
                    continue
                if self.delayed:
                    self.dispatcher.collect(self.delayed[0][0])
                    continue
                break
            reason, message = self.verdict()
            return self.outcome(reason, message)
        finally:
            self.dispatcher.close()
            self.events_file.close()

    def next_wake(self) -> float | None:
        """When to stop waiting for running calls: at the next retry timer, if one is still ahead
        and can start. A stopping run dispatches nothing, and a due timer whose task could not
        start waits for a running call to free its way: waking for either would not advance the
        clock and would wait again at once, forever."""
        if self.stop is not None or not self.delayed:
            return None
        at = self.delayed[0][0]
        return at if at > self.clock.now() + EPS else None

    def dirty_all(self) -> None:
        for tid, status in self.state.status.items():
            if status == "pending" and tid in self.tasks:
                self.mark(tid)

    def mark(self, tid: str) -> None:
        heapq.heappush(self.dirty, (self.topo.get(tid, 0), tid))

    def mark_successors(self, tid: str) -> None:
        for nxt in self.succ.get(tid, ()):
            self.mark(nxt)

    # -- settle: the readiness table --------------------------------------------------------

    def settle(self) -> None:
        status = self.state.status
        seen: set[str] = set()
        while self.dirty and self.stop is None:
            _, tid = heapq.heappop(self.dirty)
            if tid in seen or status.get(tid) != "pending" or tid in self.queued or tid in self.retry_at:
                continue  # (a task waiting for its retry is taken up when its time comes)
            seen.add(tid)
            task = self.tasks[tid]
            if not self.check_assumes(task, at_dispatch=False):
                continue
            upstream, policy = aggregate(self.dep_state(d) for d in task.deps if d in self.tasks)
            when: When = self.when_value(task) if upstream == "done" else "absent"
            decision = decide(upstream, when, policy)
            if decision == "ready":
                if not self.check_assumes(task, at_dispatch=True):
                    continue
                self.queue_ready(tid)
            elif decision == "skip":
                why = {"false": "when is false", "unknown": "when reads an output that was never made"}.get(
                    when, "an upstream task failed (skip_dependents)"
                )
                self.skip(task, why, cascade=upstream == "failed")
            elif decision == "fail":
                if upstream == "failed":
                    self.stop = self.stop or Stop("task_failed", f"{tid} cannot run: an upstream task failed")
                else:
                    self.fail_for_good(task, "expression", self.when_error, None, None)

    def queue_ready(self, tid: str) -> None:
        self.queued.add(tid)
        heapq.heappush(self.ready, (-self.tail.get(tid, 0.0), self.topo.get(tid, 0), tid))

    def resolve(self) -> Callable[[Any, tuple[str, ...]], Any]:
        return resolver(self.facts, self.state.outputs)

    def when_value(self, task: Task) -> When:
        self.when_error = ""
        if not task.when or self.simulate:
            return "absent"  # a dry run cannot decide a condition on placeholders: every branch runs
        try:
            return "true" if holds(parse_expression(task.when), self.resolve()) else "false"
        except UnknownReference:
            return "unknown"
        except ExpressionError as exc:
            self.when_error = f"when {task.when!r}: {exc}"
            return "error"

    def check_assumes(self, task: Task, *, at_dispatch: bool) -> bool:
        """Whether the task may go on: its assumptions hold, or cannot be judged yet (before
        dispatch); ``False`` after asking for a replan (or failing the task on a broken one)."""
        texts = task_assumes(task)
        if not texts or task.id in self.assumed or self.simulate:
            return True
        status = self.state.status
        for text in texts:
            try:
                expr = parse_expression(text)
            except ExpressionError as exc:
                self.fail_for_good(task, "expression", f"assumes {text!r}: {exc}", None, None)
                return False
            known = all(ref.task is None or status.get(ref.task) in ("done", "skipped") for ref in expr.refs)
            if not known and not at_dispatch:
                return True
            try:
                ok = holds(expr, self.resolve())
            except UnknownReference as exc:
                ok, text = False, f"{text} (cannot be confirmed: {exc})"
            except ExpressionError as exc:
                self.fail_for_good(task, "expression", f"assumes {text!r}: {exc}", None, None)
                return False
            if not ok:
                self.ask_replan(task, f"{task.id} assumes {text}, which is false", kind="assumption")
                return False
        self.assumed.add(task.id)
        return True

    def dep_state(self, tid: str) -> tuple[str, Policy]:
        """A dep's status and policy as the readiness table reads them: a task skipped because
        an upstream task failed passes the skip on, as if it had failed under skip_dependents."""
        if tid in self.cascaded:
            return "failed", "skip_dependents"
        return self.state.status.get(tid, "pending"), task_policy(self.tasks[tid])

    def skip(self, task: Task, why: str, cascade: bool = False) -> None:
        now = self.clock.now()
        self.emit(
            self.journal.settle(
                None,
                task.id,
                call_status="",
                task_status="skipped",
                outputs_json=None,
                error=why if cascade else None,
                finished=None,
                events=[
                    self.step_event(
                        "step.end",
                        task,
                        attempt=0,
                        status="skipped",
                        started=now,
                        finished=now,
                        reason=why,
                    )
                ],
            )
        )
        self.state.status[task.id] = "skipped"
        if cascade:
            self.cascaded.add(task.id)
        self.mark_successors(task.id)

    # -- dispatch ----------------------------------------------------------------------------

    def dispatch_ready(self) -> None:
        now = self.clock.now()
        while self.delayed and self.delayed[0][0] <= now + EPS:
            _, tid = heapq.heappop(self.delayed)
            self.retry_at.pop(tid, None)
            if self.state.status.get(tid) == "pending":
                self.mark(tid)
        if self.delayed or self.dirty:
            self.settle()
        slots = self.capacity.limits[0]
        running = self.dispatcher.running()
        aside = []
        batch: list[Task] = []
        while self.ready and running + len(batch) < slots:
            item = heapq.heappop(self.ready)
            tid = item[2]
            if self.state.status.get(tid) != "pending":
                self.queued.discard(tid)
                continue
            demand = demand_vector(self.problem, self.tasks[tid].tool, self.capacity)
            limits = self.capacity.limits
            if any(h + d > cap + EPS for h, d, cap in zip(self.held[1:], demand[1:], limits[1:])):
                aside.append(item)
                continue
            if self.steps + len(batch) >= self.options.max_steps:
                heapq.heappush(self.ready, item)
                self.stop = Stop(
                    "step_budget", f"--max-steps {self.options.max_steps} spent with {tid} ready to run"
                )
                break
            self.queued.discard(tid)
            self.demands[tid] = demand
            self.held = [h + d for h, d in zip(self.held, demand)]
            batch.append(self.tasks[tid])
        for item in aside:
            heapq.heappush(self.ready, item)
        if batch:
            self.dispatch(batch)

    def bind(self, task: Task) -> dict[str, Any]:
        """The task's inputs with every reference replaced by its value (``None``: an output a
        skipped task never made, or an initial fact given no value)."""
        bound: dict[str, Any] = {}
        for key, value in task.inputs.items():
            ref = parse_ref(value)
            if ref is None:
                bound[key] = value
            elif ref.task is None:
                bound[key] = self.facts.get(ref.fact)
            else:
                bound[key] = self.state.outputs.get(ref.task, {}).get(ref.fact)
        return bound

    def dispatch(self, batch: list[Task]) -> None:
        """Make the calls of ``batch``: their dispatch records first, in one transaction (a whole
        wave of ready tasks costs one sync to the disk), then the calls."""
        now = self.clock.now()
        jobs = []
        records = []
        for task in batch:
            tool = self.problem.tools[task.tool]
            attempt = self.state.attempts.get(task.id, 0) + 1
            # a dry run has no deadlines: its clock counts the catalog's units, not seconds
            timeout = math.inf if self.simulate else task.timeout or self.options.timeout
            self.hook("before_dispatch", task.id)
            inputs = self.bind(task)
            event = self.step_event(
                "step.start",
                task,
                risk=tool.risk,
                attempt=attempt,
                idempotency_key=task.idempotency_key,
                revision=self.state.revision,
            )
            records.append(
                Dispatch(
                    task.id, attempt, task.tool, tool.risk, task.idempotency_key, dumps(inputs), now, event
                )
            )
            call = Call(
                task_id=task.id,
                attempt=attempt,
                idempotency_key=task.idempotency_key,
                deadline=self.clock.wall_deadline(now + timeout),
                tool=task.tool,
            )
            jobs.append(
                Job(
                    call_id=0,
                    task_id=task.id,
                    tool=task.tool,
                    fn=self.tools[task.tool],
                    inputs=inputs,
                    call=call,
                    started=now,
                    deadline=now + timeout,
                    duration=tool.duration,
                )
            )
        ids, events = self.journal.dispatch_many(records)
        self.emit(events)
        for call_id, job in zip(ids, jobs):
            self.state.status[job.task_id] = "dispatched"
            self.state.attempts[job.task_id] = job.call.attempt
            self.steps += 1
            self.hook("dispatched", job.task_id)
            self.dispatcher.submit(replace(job, call_id=call_id))

    # -- results -----------------------------------------------------------------------------

    def on_results(self, results: list[Result]) -> None:
        """Commit what came back: the calls that succeeded in one transaction (outputs and
        ``done`` for each), each failure on its own (it may retry, fail for good or replan)."""
        done: list[tuple[Task, Result, str]] = []
        failed: list[tuple[Task, Result, str, str]] = []
        for result in results:
            task = self.tasks[result.job.task_id]
            demand = self.demands.pop(task.id, None)
            if demand is not None:
                self.held = [h - d for h, d in zip(self.held, demand)]
            self.hook("before_commit", task.id)
            kind, error = result.kind, result.error or "failed"
            if kind == "ok":
                outputs_json, error = self.check_outputs(task, result.outputs)
                if outputs_json is not None:
                    done.append((task, result, outputs_json))
                    continue
                kind = "exception"
            failed.append((task, result, kind, error))
        if done:
            self.done(
                [
                    (task, r.job.call_id, "done", out, r.job.started, r.finished, r.job.call.attempt)
                    for task, r, out in done
                ]
            )
        for task, r, why, error in failed:
            self.failed(task, r.job.call_id, why, error, r.retryable, r.job.started, r.finished)
        for result in results:
            self.hook("after_commit", result.job.task_id)

    def check_outputs(self, task: Task, outputs: Mapping[str, Any] | None) -> tuple[str | None, str]:
        """The outputs as JSON, or why they cannot be kept (a declared output missing, or a value
        that is not JSON: a run folder holds data only)."""
        produced = produced_by(self.problem, task) or ()
        missing = [f for f in produced if outputs is None or f not in outputs]
        if missing:
            return None, f"returned no {', '.join(repr(f) for f in missing)}"
        try:
            return dumps(dict(outputs or {})), ""
        except (TypeError, ValueError) as exc:
            return None, f"returned outputs that are not JSON data ({exc})"

    def done(self, items: list[tuple[Task, int, str, str, float, float, int]]) -> None:
        """Tasks done, ``(task, call_id, call_status, outputs_json, started, finished, attempt)``
        each, in one transaction."""
        settles = []
        for task, call_id, call_status, outputs_json, started, finished, attempt in items:
            tool = self.problem.tools[task.tool]
            event = self.step_event(
                "step.end",
                task,
                risk=tool.risk,
                attempt=attempt,
                status="reconciled" if call_status == "reconciled" else "done",
                started=started,
                finished=finished,
            )
            settles.append(
                Settle(call_id, task.id, call_status, "done", outputs_json, None, finished, events=(event,))
            )
        self.emit(self.journal.settle_many(settles))
        for task, _, _, outputs_json, *_ in items:
            self.state.status[task.id] = "done"
            self.state.outputs[task.id] = json.loads(outputs_json)
            self.mark_successors(task.id)

    def failed(
        self,
        task: Task,
        call_id: int,
        kind: str,
        error: str,
        retryable: bool,
        started: float,
        finished: float,
    ) -> None:
        tool = self.problem.tools[task.tool]
        if kind == "timeout" and tool.risk == "write":
            settled = self.reconcile(task, call_id, started)
            if settled is not None:
                if settled:
                    return
            else:
                self.fail_for_good(
                    task,
                    "unknown",
                    f"{error}; the write may have been made and its tool has no reconcile",
                    call_id,
                    "unknown",
                    started,
                    finished,
                )
                return
        failures = self.state.failures.get(task.id, 0) + 1
        first = self.state.first_failure.get(task.id, finished)
        delay = min(self.options.backoff * 2 ** (failures - 1), self.options.backoff_cap)
        retries = task.retries
        if retryable and failures <= retries and finished + delay - first <= self.options.retry_window:
            retry_at = finished + delay
            self.emit(
                self.journal.settle(
                    call_id,
                    task.id,
                    call_status="timeout" if kind == "timeout" else "failed",
                    task_status="pending",
                    outputs_json=None,
                    error=error,
                    finished=finished,
                    failures=failures,
                    first_failure=first,
                    events=[
                        self.step_error(
                            task,
                            error,
                            kind,
                            retryable=True,
                            nxt="retry",
                            retry_at=retry_at,
                            started=started,
                            finished=finished,
                            risk=tool.risk,
                            attempt=self.state.attempts.get(task.id, 1),
                        )
                    ],
                )
            )
            self.state.status[task.id] = "pending"
            self.state.failures[task.id] = failures
            self.state.first_failure[task.id] = first
            heapq.heappush(self.delayed, (retry_at, task.id))
            self.retry_at[task.id] = retry_at
            return
        if retryable and failures > retries and retries > 0:
            error = f"{error} (after {failures} attempts)"
        self.state.failures[task.id] = failures
        self.fail_for_good(
            task,
            kind,
            error,
            call_id,
            "timeout" if kind == "timeout" else "failed",
            started,
            finished,
            retryable=retryable,
        )

    def reconcile(self, task: Task, call_id: int, started: float) -> bool | None:
        """Ask a write's tool whether the call was made: ``True`` (settled as done), ``False`` (it
        was not: retry as usual) or ``None`` (the tool cannot tell)."""
        rec = reconciler(self.tools.get(task.tool))
        if rec is None or task.idempotency_key is None:
            return None
        try:
            found = rec(task.idempotency_key)
        except Exception:
            return None
        if found is None:
            return False
        outputs_json, _ = self.check_outputs(task, found)
        if outputs_json is None:
            return None
        attempt = self.state.attempts.get(task.id, 1)
        self.done([(task, call_id, "reconciled", outputs_json, started, self.clock.now(), attempt)])
        return True

    def fail_for_good(
        self,
        task: Task,
        kind: str,
        error: str,
        call_id: int | None,
        call_status: str | None,
        started: float | None = None,
        finished: float | None = None,
        retryable: bool = False,
    ) -> None:
        """The task failed and will not be tried again: its ``on_failure`` decides the rest."""
        policy = task_policy(task)
        nxt = "fail_plan" if policy == "retry" else policy
        now = self.clock.now()
        meta: dict[str, Any] = {}
        if nxt == "replan":
            self.state.excluded.add(task.tool)
            self.state.replan = f"{task.id} ({task.tool}) failed: {error}"
            meta = {"excluded": sorted(self.state.excluded), "replan": self.state.replan}
        status = "unknown" if kind == "unknown" else "failed"
        self.emit(
            self.journal.settle(
                call_id,
                task.id,
                call_status=call_status or "",
                task_status=status,
                outputs_json=None,
                error=error,
                finished=finished,
                failures=self.state.failures.get(task.id),
                events=[
                    self.step_error(
                        task,
                        error,
                        kind,
                        retryable=retryable,
                        nxt=nxt,
                        started=now if started is None else started,
                        finished=now if finished is None else finished,
                    )
                ],
                meta=meta,
            )
        )
        self.state.status[task.id] = status
        if nxt == "fail_plan":
            self.stop = self.stop or Stop("task_failed", f"{task.id} ({task.tool}) failed: {error}")
        self.mark_successors(task.id)

    def ask_replan(self, task: Task, reason: str, kind: str) -> None:
        """A false assumption: the plan is wrong about ``task``; its tool is not used again."""
        self.state.excluded.add(task.tool)
        self.state.replan = reason
        now = self.clock.now()
        error = self.step_error(task, reason, kind, retryable=False, nxt="replan", started=now, finished=now)
        self.emit(
            self.journal.record(
                [error],
                meta={"excluded": sorted(self.state.excluded), "replan": reason},
            )
        )

    # -- recovery after a crash -------------------------------------------------------------

    def recover(self) -> None:
        """Settle the calls a killed session left dispatched but not committed."""
        for call in self.journal.calls("dispatched"):
            task = self.tasks.get(call.task_id)
            if task is None:
                continue
            self.state.attempts[task.id] = call.attempt
            started = call.started if call.started is not None else self.clock.now()
            if call.risk == "write":
                settled = self.reconcile(task, call.call_id, started)
                if settled:
                    continue
                if settled is None:
                    self.fail_for_good(
                        task,
                        "unknown",
                        "dispatched before the process stopped; its tool has "
                        "no reconcile to tell whether the write was made",
                        call.call_id,
                        "unknown",
                        started,
                        self.clock.now(),
                    )
                    continue
            self.emit(
                self.journal.settle(
                    call.call_id,
                    task.id,
                    call_status="lost",
                    task_status="pending",
                    outputs_json=None,
                    error="the process stopped during the call",
                    finished=None,
                    events=[
                        self.step_error(
                            task,
                            "the process stopped during the call; it is run again",
                            "lost",
                            retryable=True,
                            nxt="retry",
                            started=started,
                            finished=self.clock.now(),
                            risk=call.risk,
                            attempt=call.attempt,
                        )
                    ],
                )
            )
            self.state.status[task.id] = "pending"
        self.events_file.flush()

    # -- replanning -------------------------------------------------------------------------

    def replan(self) -> None:
        reason = self.state.replan or "replan"
        if self.replans_tried >= self.options.max_replans:
            self.stop = Stop("replan_budget", f"--max-replans {self.options.max_replans} spent; {reason}")
            return
        if self.steps >= self.options.max_steps:
            self.stop = Stop(
                "step_budget", f"--max-steps {self.options.max_steps} spent before a replan; {reason}"
            )
            return
        if self.replanner is None:
            self.stop = Stop("no_plan", f"no replanner; {reason}")
            return
        revision = self.state.revision + 1
        self.replans_tried += 1
        self.steps += 1
        status = self.state.status
        now_situation = situation(
            self.problem, self.state.plan, status, self.state.outputs, self.state.excluded, reason
        )
        folder = self.run_dir / "replans" / f"r{revision}"
        proposal = self.replanner.propose(now_situation, revision, self.options.seed + revision, folder)
        if proposal is None:
            self.emit(
                self.journal.record(
                    [
                        self.event(
                            "plan.draft",
                            revision=revision,
                            replanner=self.replanner.name,
                            reason=reason,
                            plan=None,
                            folder=None,
                        )
                    ]
                )
            )
            self.stop = Stop(
                "no_plan",
                f"the {self.replanner.name} replanner found no valid, complete plan "
                f"without {', '.join(sorted(self.state.excluded)) or 'change'}; {reason}",
            )
            return
        taken = set(self.journal.tasks())
        patch = translate(now_situation, proposal.plan, self.state.plan, status, taken, revision)
        self.emit(
            self.journal.record(
                [
                    self.event(
                        "plan.draft",
                        revision=revision,
                        replanner=proposal.source,
                        reason=reason,
                        plan=patch.plan.to_dict(),
                        folder=proposal.folder,
                        note=proposal.note,
                    )
                ]
            )
        )
        after = {**status, **{t.id: "pending" for t in patch.added}}
        sig = signature(patch.plan, after)
        if sig in self.state.signatures:
            self.stop = Stop(
                "loop_detected", f"the replanner proposed a plan it had proposed before; {reason}"
            )
            return
        banned = [t.id for t in patch.added if t.tool in self.state.excluded]
        errors = [str(e) for e in validate(self.problem, patch.plan)]
        if banned:
            errors.append(f"uses excluded tools in {', '.join(banned)}")
        if errors:
            self.stop = Stop("no_plan", f"the replanned plan is not valid: {errors[0]}")
            return
        self.commit_revision(
            revision, patch.plan, patch=patch.to_dict(), reason=reason, invalidated=patch.invalidate, sig=sig
        )
        self.queued.clear()
        self.ready.clear()
        self.dirty_all()

    def commit_revision(
        self,
        revision: int,
        plan: Plan,
        *,
        patch: dict[str, Any] | None,
        reason: str,
        invalidated: Iterable[str],
        sig: str | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> None:
        """Commit a revision: new tasks' rows with their planned times, the invalidated tasks,
        the ``plan.diff`` and ``plan.commit`` events, and the replan request cleared."""
        status = self.state.status
        gone = set(invalidated)
        for tid in gone:
            status[tid] = "invalidated"
        for task in plan.tasks:
            status.setdefault(task.id, "pending")
        if sig is None:
            sig = signature(plan, status)
        self.state.signatures.add(sig)
        now = self.clock.now()
        todo = pending_plan(plan, status)
        planned = schedule(self.problem, todo)
        rows = []
        for task in plan.tasks:
            start = planned.start.get(task.id)
            rows.append(
                TaskRow(
                    task_id=task.id,
                    revision=revision,
                    tool=task.tool,
                    risk=self.risk_of(task.tool),
                    status=status[task.id],
                    planned_start=None if start is None else now + start,
                    planned_finish=None if start is None else now + planned.finish[task.id],
                )
            )
        diff = PlanDiff.of(revision, patch or {}, reason).to_dict() if patch is not None else {}
        events = []
        if patch is not None:
            events.append(self.event("plan.diff", **diff))
        events.append(
            self.event(
                "plan.commit",
                revision=revision,
                plan=plan.to_dict(),
                tasks=len(plan.tasks),
                planned={
                    tid: {"start": now + planned.start[tid], "finish": now + planned.finish[tid]}
                    for tid in planned.start
                },
            )
        )
        self.emit(
            self.journal.commit_revision(
                Revision(
                    revision=revision,
                    plan=plan.to_dict(),
                    patch=patch,
                    diff={**diff, "signature": sig},
                    reason=reason,
                    created=now,
                ),
                rows,
                {tid: "invalidated" for tid in gone},
                events,
                meta={**(meta or {}), "replan": None, "excluded": sorted(self.state.excluded)},
            )
        )
        self.state.plan = plan
        self.state.revision = revision
        self.state.replan = None
        self.index_plan()

    # -- the end -----------------------------------------------------------------------------

    def criteria(self) -> dict[str, str | None]:
        """Each criterion and the done task that made it (``None``: not made)."""
        made: dict[str, str | None] = {c: None for c in self.problem.criteria}
        for task in self.state.plan.tasks:
            if self.state.status.get(task.id) != "done":
                continue
            outputs = self.state.outputs.get(task.id, {})
            for fact in produced_by(self.problem, task) or ():
                if fact in made and made[fact] is None and fact in outputs:
                    made[fact] = task.id
        for fact in self.problem.criteria:
            if fact in self.problem.initial_set():
                made[fact] = made[fact] or "(initial)"
        return made

    def verdict(self) -> tuple[str, str]:
        made = self.criteria()
        missing = [c for c, tid in made.items() if tid is None]
        missing += goal_unmet(self.problem, self.state.plan, self.state.status, self.state.outputs)
        if self.stop is not None and self.stop.reason not in ("step_budget", "replan_budget"):
            return self.stop.reason, self.stop.message
        if not missing:
            note = f" ({self.stop.message}, after the goal was met)" if self.stop else ""
            return "goal_met", f"every criterion made: {', '.join(made) or '-'}{note}"
        if self.stop is not None:
            return self.stop.reason, self.stop.message
        return "goal_unreachable", f"nothing left to run and not made: {', '.join(missing)}"

    def outcome(self, reason: str, message: str, record: bool = True) -> dict[str, Any]:
        status = "completed" if reason == "goal_met" else "failed"
        outcome = build_outcome(
            self.journal,
            self.problem,
            status=status,
            reason=reason,
            message=message,
            criteria=self.criteria(),
            plan=self.state.plan.to_dict(),
            elapsed=self.clock.now(),
            replans_tried=self.replans_tried,
        )
        if record:
            self.emit(
                self.journal.record(
                    [
                        self.event(
                            "session.complete",
                            status=status,
                            reason=reason,
                            steps=outcome["steps"],
                            replans=outcome["replans"],
                        )
                    ],
                    meta={"complete": {"reason": reason, "message": message}},
                )
            )
            self.events_file.flush()
        (self.run_dir / "outcome.json").write_text(json.dumps(outcome, indent=2, default=str) + "\n")
        return outcome
