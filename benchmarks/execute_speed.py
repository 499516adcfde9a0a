"""Execution speed: what the journal costs per task, and the wall time of a 1,000-task plan.

Zero-duration simulated tools (``--simulate`` stand-ins on the virtual clock), so what is timed
is the executor itself: the readiness table, the dispatch record committed before each call and
the result committed after it, the events, and the outcome. The plan is layered: ``--layers``
layers of ``--width`` tasks, each task after two of the layer before, no ``max_parallel``.

Three figures, each for both journal modes (``FULL``: every commit synced to the disk, the
default; ``NORMAL``: WAL commits synced at checkpoints, which survives a killed process):

* the journal alone: the two transactions of one call (dispatch record, then output and
  status ``done``) with their events, per task;
* the whole run per task, from ``start_run`` to ``outcome.json``;
* the whole run's wall time.

Targets (issue 13): under 2 ms a task, under 5 s for the 1,000-task plan. Usage::

    nice -n 10 python benchmarks/execute_speed.py [--layers 10 --width 100] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from evolve.execute import ExecuteOptions, start_run
from evolve.execute.dispatch import VirtualClock
from evolve.execute.events import Events
from evolve.execute.journal import Journal, dumps
from evolve.execute.records import Dispatched, Revised, TaskRow
from evolve.execute.transitions import succeeded
from evolve.model.plan import Plan, Task
from evolve.model.problem import Problem, Tool
from evolve.scheduling.kernel import warm_up


def layered(layers: int, width: int) -> tuple[Problem, Plan]:
    problem = Problem(
        tools={"step": Tool("step", 0.0, inputs=("v",), outputs=("v",))},
        initial=("v",),
        criteria=("v",),
        name="layered",
    )
    tasks = []
    for layer in range(layers):
        for i in range(width):
            tid = f"t{layer}_{i}"
            if layer == 0:
                tasks.append(Task(tid, "step", inputs={"v": "$v"}))
                continue
            a, b = f"t{layer - 1}_{i}", f"t{layer - 1}_{(i + 1) % width}"
            tasks.append(Task(tid, "step", deps=(a, b), inputs={"v": f"${a}.v"}))
    return problem, Plan(tasks=tuple(tasks))


def journal_alone(folder: Path, problem: Problem, plan: Plan, sync: str) -> float:
    """Seconds per task of the two transactions of one call, with their events, one call at a
    time: the ``Dispatched`` record and its ``step.start`` (as :func:`evolve.execute.calls.dispatch`
    builds them), then the result that :func:`evolve.execute.transitions.succeeded` makes (a
    ``Settled`` ``done`` with the outputs, and ``step.end``), each one :meth:`Journal.write`.
    The plan's revision (its task rows) is committed first and not timed; the state fold and
    ``events.jsonl`` are left out, so this is the journal's share of the whole run."""
    journal = Journal(folder / "journal.sqlite", sync=sync)
    ev = Events(VirtualClock(), problem)
    rows = tuple(
        TaskRow(task_id=t.id, revision=0, tool=t.tool, risk=ev.risk_of(t.tool), status="pending")
        for t in plan.tasks
    )
    journal.write([Revised(0, plan, (), "bench", reason="bench", rows=rows)])
    began = time.perf_counter()
    for i, task in enumerate(plan.tasks):
        risk = problem.tools[task.tool].risk
        call_id = journal.next_call
        start = ev.step(
            "step.start", task, risk=risk, attempt=1, idempotency_key=task.idempotency_key, revision=0
        )
        journal.write(
            [Dispatched(call_id, task.id, 1, task.tool, risk, task.idempotency_key, dumps({"v": i}), 0.0)],
            [start],
        )
        result = succeeded(
            task,
            call_id=call_id,
            call_status="done",
            outputs={"v": i},
            started=0.0,
            finished=0.0,
            attempt=1,
            risk=risk,
            ev=ev,
        )
        journal.write(result.records, result.events)
    seconds = time.perf_counter() - began
    kept = journal.tasks()  # what was timed really made every task done (read after the clock)
    journal.close()
    left = [tid for tid in (t.id for t in plan.tasks) if tid not in kept or kept[tid].status != "done"]
    if left:
        raise RuntimeError(f"{folder}: journal alone left {len(left)} tasks not done: {left[:5]}")
    return seconds / len(plan.tasks)


def whole_run(folder: Path, problem: Problem, plan: Plan, sync: str) -> tuple[float, dict[str, object]]:
    began = time.perf_counter()
    executor = start_run(
        problem,
        plan,
        folder,
        plan_source="bench",
        tools_spec=None,
        simulate=True,
        options=ExecuteOptions(max_steps=10 * len(plan.tasks), journal_sync=sync),
    )
    outcome = executor.run()
    return time.perf_counter() - began, outcome


def chain(tasks: int) -> tuple[Problem, Plan]:
    """One task after the other: no wave to share a commit, the journal's worst case."""
    problem, _ = layered(1, 1)
    out = [Task("t0", "step", inputs={"v": "$v"})]
    for i in range(1, tasks):
        out.append(Task(f"t{i}", "step", deps=(f"t{i - 1}",), inputs={"v": f"$t{i - 1}.v"}))
    return problem, Plan(tasks=tuple(out))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=10)
    parser.add_argument("--width", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    shapes = {
        f"layered {args.layers}x{args.width}": layered(args.layers, args.width),
        f"chain of {args.layers * args.width}": chain(args.layers * args.width),
    }
    warm_up()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        problem, plan = shapes[next(iter(shapes))]
        whole_run(root / "warm", problem, plan, "NORMAL")  # imports, kernels, caches: not timed
        print(
            f"zero-duration simulated tools; best of {args.repeat} (all runs listed); "
            "targets: < 2 ms a task, < 5 s for 1,000 tasks"
        )
        print(f"{'plan':<18} {'journal':<7} {'per task':>10} {'wall time':>10}   runs")
        for sync in ("FULL", "NORMAL"):
            alones = []
            for k in range(args.repeat):
                folder = root / f"alone-{sync}-{k}"
                folder.mkdir()
                alones.append(journal_alone(folder, problem, plan, sync))
            print(
                f"{'journal alone':<18} {sync:<7} {min(alones) * 1e3:>7.3f} ms {'':>10}   "
                "(dispatch record + result, one call at a time)"
            )
        for name, (problem, plan) in shapes.items():
            n = len(plan.tasks)
            for sync in ("FULL", "NORMAL"):
                runs = []
                for k in range(args.repeat):
                    seconds, outcome = whole_run(
                        root / f"{name}-{sync}-{k}".replace(" ", "_"), problem, plan, sync
                    )
                    assert outcome["reason"] == "goal_met" and outcome["steps"] == n, outcome["message"]
                    runs.append(seconds)
                best = min(runs)
                print(
                    f"{name:<18} {sync:<7} {best / n * 1e3:>7.3f} ms {best:>8.3f} s   "
                    f"{', '.join(f'{r:.3f}' for r in runs)} s (median {statistics.median(runs):.3f} s)"
                )


if __name__ == "__main__":
    main()
