"""The Dask dispatcher: tool calls run on a real ``distributed.LocalCluster`` (worker processes on
127.0.0.1) while the journal stays with the coordinator; a call past its deadline is a timeout."""

from __future__ import annotations

import importlib
import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

distributed = pytest.importorskip("distributed")

from evolve.execute import DaskDispatcher, start_run  # noqa: E402
from evolve.execute.dispatch import Clock, Dispatcher, WallClock  # noqa: E402
from evolve.model.plan_file import plan_from_dict  # noqa: E402
from evolve.model.problem_file import problem_from_dict  # noqa: E402

PROBLEM = {
    "name": "cluster",
    "initial": ["x"],
    "criteria": ["c"],
    "limits": {"max_parallel": 2},
    "tools": {
        "where": {"duration": 1, "inputs": ["x"], "outputs": ["a"]},
        "also": {"duration": 1, "inputs": ["x"], "outputs": ["b"]},
        "join": {"duration": 1, "inputs": ["a", "b"], "outputs": ["c"]},
        "hang": {"duration": 1, "inputs": ["x"], "outputs": ["h"]},
    },
}

TOOLS = """
import os, time

def where(inputs, call):
    return {"a": {"pid": os.getpid(), "task": call.task_id, "attempt": call.attempt}}

def also(inputs, call):
    return {"b": os.getpid()}

def join(inputs, call):
    return {"c": [inputs["a"]["pid"], inputs["b"]]}

def hang(inputs, call):
    time.sleep(3)
    return {"h": 1}

TOOLS = {"where": where, "also": also, "join": join, "hang": hang}
"""


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    folder = tmp_path_factory.mktemp("dask_tools")
    (folder / "dask_tools.py").write_text(TOOLS)
    sys.path.insert(0, str(folder))
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([str(folder), *([old] if old else [])])
    cluster = distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=True, host="127.0.0.1", dashboard_address=None
    )
    try:
        with distributed.Client(cluster) as client:
            yield client
    finally:
        cluster.close()
        sys.path.remove(str(folder))
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old


def on_cluster(client: object) -> Callable[[Clock], Dispatcher]:
    def make(clock: Clock) -> Dispatcher:
        assert isinstance(clock, WallClock)
        return DaskDispatcher(client, clock)

    return make


def run_on_cluster(tmp_path: Path, client: object, tasks: list[dict[str, Any]]) -> dict[str, Any]:
    """Run PROBLEM with these tasks on the cluster; the outcome."""
    dask_tools = importlib.import_module("dask_tools")  # written by the fixture; workers import it by name
    return start_run(
        problem_from_dict(PROBLEM),
        plan_from_dict({"tasks": tasks}),
        tmp_path / "run",
        plan_source="plan",
        tools_spec=None,
        tools=dask_tools.TOOLS,
        dispatcher=on_cluster(client),
    ).run()


def test_calls_run_on_the_cluster_and_the_journal_stays_here(tmp_path: Path, client: object) -> None:
    outcome = run_on_cluster(
        tmp_path,
        client,
        [
            {"id": "t1", "tool": "where", "inputs": {"x": "$x"}},
            {"id": "t2", "tool": "also", "inputs": {"x": "$x"}},
            {"id": "t3", "tool": "join", "deps": ["t1", "t2"], "inputs": {"a": "$t1.a", "b": "$t2.b"}},
        ],
    )
    assert outcome["reason"] == "goal_met", outcome["message"]
    from evolve.execute.journal import Journal

    journal = Journal(tmp_path / "run" / "journal.sqlite")
    rows = journal.tasks()
    worker_pids = rows["t3"].outputs["c"]  # type: ignore[index]
    assert os.getpid() not in worker_pids  # the tools ran in the cluster's worker process
    assert rows["t1"].outputs["a"]["task"] == "t1"  # type: ignore[index]
    assert [c.status for c in journal.calls()] == ["done", "done", "done"]


def test_a_stuck_call_on_the_cluster_times_out(tmp_path: Path, client: object) -> None:
    outcome = run_on_cluster(
        tmp_path,
        client,
        [
            {
                "id": "t1",
                "tool": "hang",
                "inputs": {"x": "$x"},
                "timeout": 0.5,
                "on_failure": "skip_dependents",
            },
            {"id": "t2", "tool": "where", "inputs": {"x": "$x"}},
            {"id": "t3", "tool": "also", "inputs": {"x": "$x"}},
            {"id": "t4", "tool": "join", "deps": ["t2", "t3"], "inputs": {"a": "$t2.a", "b": "$t3.b"}},
        ],
    )
    assert outcome["reason"] == "goal_met"
    assert outcome["tasks"]["t1"]["status"] == "failed"
    assert "no answer within 0.5 s" in outcome["tasks"]["t1"]["error"]
    events = [json.loads(line) for line in (tmp_path / "run" / "events.jsonl").read_text().splitlines()]
    assert any(e["event"] == "step.error" and e["kind"] == "timeout" for e in events)
