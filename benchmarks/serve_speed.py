"""``evolve serve`` speed: the lists over 1,000 run folders, and a live run page at 100 calls/s.

Figures, not timed tests (issue 47's targets: the runs page and ``/api/pending`` over 1,000 run
folders under a second; a live run's page keeping up with a run making 100 tool calls a second).

1. **1,000 run folders.** One real run of the refund example waiting for the manager
   (``evolve execute``, exit 4), copied ``--runs`` times: every run waits, so ``/api/pending``
   reads every journal: the worst case. Timed over HTTP against a real uvicorn server on
   127.0.0.1 (its start-up warm-up off): the first request of each (``/api/runs`` reads every
   folder's outcome; ``/api/pending`` then opens every journal), then the median and worst of
   ``--repeat`` more (read before: each folder's files are only stat'ed).
2. **A live run.** ``--calls`` tasks whose tool paces itself to ``--rate`` calls a second
   (``--width`` chains side by side), run by the real executor in another process
   (``start_run``, each journal sync mode), while a client reads the run page's event stream
   (``/runs/NAME/events``, server-sent events). Every 0.1 s the events journaled so far are
   compared with those delivered: the backlog, in events and in seconds at the run's rate; at
   the end, delivered against made.
   Where the executor itself cannot make ``--rate`` calls a second on the machine, a third
   figure takes it out: another process journals the events of ``--rate`` calls a second (two
   each, as the executor does: start and end) straight into a journal, and the stream is
   measured the same way.

Usage::

    nice -n 10 python benchmarks/serve_speed.py [--runs 1000] [--repeat 20] [--calls 500 --rate 100]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from evolve import defaults
from evolve.serve.app import Settings, make_app
from evolve.serve.auth import Auth

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
TOKEN = "benchmark-token-0123456789abcdef"
HEADERS = {"Authorization": f"Bearer {TOKEN}"}

PACED_RUN = """
import sys, threading, time
from pathlib import Path
from evolve.execute import ExecuteOptions, start_run
from evolve.model.plan import Plan, Task
from evolve.model.problem import Problem, Tool

out, calls, rate, sync, width = Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4], \
    int(sys.argv[5])
problem = Problem(tools={"step": Tool("step", 1.0, inputs=("v",), outputs=("v",))},
                  initial=("v",), criteria=("v",), name="paced")
tasks = []
for i in range(calls):  # ``width`` chains side by side, so calls overlap as a real run's would
    chain, depth = i % width, i // width
    before = f"t{chain}_{depth - 1}"
    tasks.append(Task(f"t{chain}_{depth}", "step", deps=(before,) if depth else (),
                      inputs={"v": f"${before}.v" if depth else "$v"}))
pace = {"next": 0.0}
lock = threading.Lock()

def step(inputs, call):
    with lock:  # one call every 1/rate seconds, across the threads
        now = time.perf_counter()
        pace["next"] = max(pace["next"] + 1.0 / rate, now)
        wait = pace["next"] - now
    time.sleep(max(0.0, wait))
    return {"v": (inputs.get("v") or 0) + 1}

began = time.perf_counter()
start_run(problem, Plan(tasks=tuple(tasks)), out, plan_source="bench", tools_spec=None,
          tools={"step": step}, facts={"v": 0},
          options=ExecuteOptions(max_steps=10 * calls, journal_sync=sync)).run()
print(f"{calls / (time.perf_counter() - began):.1f}")
"""


SYNTHETIC = """
import sys, time
from pathlib import Path
from evolve.execute.journal import Journal

out, calls, rate = Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
out.mkdir(parents=True)
journal = Journal(out / "journal.sqlite", sync="NORMAL")
began = time.perf_counter()
for i in range(calls):
    time.sleep(max(0.0, began + i / rate - time.perf_counter()))
    for name in ("step.start", "step.end"):
        event = {"event": name, "time": time.perf_counter() - began, "task": f"t{i}", "tool": "step"}
        journal.write((), [event])
journal.close()
print(f"{calls / (time.perf_counter() - began):.1f}")
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Served:
    """A real uvicorn server over ``root`` in a thread of this process."""

    def __init__(self, root: Path, warm: bool = True) -> None:
        self.port = free_port()
        self.app = make_app(Settings(root=root, auth=Auth({TOKEN: "bench"}), warm=warm))
        config = uvicorn.Config(self.app, host="127.0.0.1", port=self.port, log_level="warning",
                                timeout_graceful_shutdown=1)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> Served:
        self.thread.start()
        while not self.server.started:
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.app.state.server.stopping.set()  # the event streams end
        self.server.should_exit = True
        self.thread.join(timeout=10)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def many_runs(root: Path, count: int) -> None:
    """``count`` copies of one real waiting run."""
    first = root / "run-0000"
    done = subprocess.run(
        [sys.executable, "-m", "evolve", "execute", str(EXAMPLES / "refund_human_plan.yaml"), "--problem",
         str(EXAMPLES / "refund.yaml"), "--tools", f"{EXAMPLES / 'refund_tools.py'}:NO_PRIOR_REFUND",
         "--out", str(first), "--no-report"],
        env={**env(), "EVOLVE_REFUND_LEDGER": str(root.parent / "ledger.json")},
        capture_output=True, text=True,
    )
    if done.returncode != 4:
        raise RuntimeError(done.stdout + done.stderr)
    for i in range(1, count):
        shutil.copytree(first, root / f"run-{i:04d}")


def timed(client: httpx.Client, url: str) -> tuple[float, httpx.Response]:
    began = time.perf_counter()
    reply = client.get(url, headers=HEADERS)
    reply.raise_for_status()
    return time.perf_counter() - began, reply


def lists(count: int, repeat: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "runs"
        began = time.perf_counter()
        many_runs(root, count)
        spent = time.perf_counter() - began
        print(f"made {count} run folders (one real waiting run, copied) in {spent:.1f} s")
        with Served(root, warm=False) as served, httpx.Client(base_url=served.base, timeout=600) as client:
            runs = served.app.state.server.runs
            runs.ttl = 0.0  # every request looks at every folder again
            for path in ("/api/runs", "/api/pending", "/"):  # first: nothing read yet (no warm-up)
                first, reply = timed(client, path)
                size = len(reply.content)
                items = f", {len(reply.json())} items" if path.startswith("/api") else ""
                print(f"GET {path:<12} over {count} runs ({size / 1e3:.0f} kB{items}): first request "
                      f"{first * 1e3:.0f} ms")
            for ttl, said in ((0.0, "each looking at every folder again"),
                              (defaults.SERVE_SCAN_TTL, f"scans kept {defaults.SERVE_SCAN_TTL:g} s")):
                runs.ttl = ttl
                for path in ("/api/runs", "/api/pending", "/"):
                    times = [timed(client, path)[0] for _ in range(repeat)]
                    middle = statistics.median(times)
                    print(f"GET {path:<12} over {count} runs, {said}: median {middle * 1e3:.1f} ms, "
                          f"worst {max(times) * 1e3:.1f} ms ({repeat} requests)")


def journaled(path: Path) -> int:
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            return int(db.execute("SELECT COALESCE(MAX(seq), 0) FROM events").fetchone()[0])
        finally:
            db.close()
    except sqlite3.Error:
        return 0


def live(calls: int, rate: float, sync: str, width: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "runs"
        root.mkdir()
        folder = root / "paced"
        delivered = {"count": 0, "last": 0}
        script = PACED_RUN if sync != "synthetic" else SYNTHETIC
        args = [str(folder), str(calls), str(rate), sync, str(width)]
        run = subprocess.Popen([sys.executable, "-c", script, *args], env=env(), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        with Served(root) as served:
            while not (folder / "journal.sqlite").exists() and run.poll() is None:
                time.sleep(0.01)

            def read() -> None:
                client = httpx.Client(base_url=served.base, timeout=None)
                with contextlib.suppress(httpx.HTTPError), client, client.stream(
                        "GET", "/runs/paced/events", headers=HEADERS) as stream:
                    kind = ""
                    for line in stream.iter_lines():
                        if line.startswith("event: "):
                            kind = line[7:]
                        elif line.startswith("data: ") and kind == "events":
                            batch: list[dict[str, Any]] = json.loads(line[6:])
                            delivered["count"] += len(batch)
                            delivered["last"] = int(batch[-1]["seq"])

            reader = threading.Thread(target=read, daemon=True)
            reader.start()
            backlog = []
            while run.poll() is None:
                made = journaled(folder / "journal.sqlite")
                backlog.append(max(0, made - delivered["last"]))
                time.sleep(0.1)
            out, err = run.communicate()
            made = journaled(folder / "journal.sqlite")
            settle = time.monotonic() + 10
            while delivered["last"] < made and time.monotonic() < settle:
                time.sleep(0.05)
        if run.returncode != 0:
            raise RuntimeError(err)
        achieved = float(out.strip().splitlines()[-1])
        events_per_s = made / (calls / achieved)
        worst = max(backlog, default=0)
        what = "journal alone, no executor" if sync == "synthetic" else f"journal {sync}"
        print(f"live run ({what}): {calls} tool calls at {achieved:.0f} calls/s "
              f"({made} events, {events_per_s:.0f} events/s); "
              f"events delivered {delivered['count']} of {made} made; backlog while running: median "
              f"{statistics.median(backlog) if backlog else 0:.0f} events, worst {worst} events "
              f"(= {worst / events_per_s:.2f} s of the run), sampled {len(backlog)} times")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--parts", nargs="+", default=["lists", "live"], choices=["lists", "live"])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--rate", type=float, default=100.0)
    parser.add_argument("--width", type=int, default=10, help="chains of tasks side by side")
    parser.add_argument("--sync", nargs="+", default=["FULL", "NORMAL", "synthetic"],
                        choices=["FULL", "NORMAL", "synthetic"],
                        help="the paced run's journal sync modes (FULL, the default, syncs every commit); "
                             "synthetic: events journaled at the rate without an executor")
    args = parser.parse_args()
    if "lists" in args.parts:
        lists(args.runs, args.repeat)
    if "live" in args.parts:
        for sync in args.sync:
            live(args.calls, args.rate, sync, args.width)


if __name__ == "__main__":
    main()
