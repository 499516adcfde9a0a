"""What calling tools through MCP costs the executor: time per call of the same plan, in one
run of this script, with its tools as Python callables and as ``tools/call`` on an MCP server
(the official SDK's ``MCPServer``, started over stdio, as ``evolve execute --mcp`` starts it).

The plan is ``--tasks`` independent calls of one tool, ``echo(value) -> {value}``, at most
``--parallel`` at once; each call does nothing, so what is timed is the executor (journal
commits before and after each call) plus, in the MCP run, the protocol: JSON-RPC over the
server's pipes, the server's argument and result validation, and the client's event loop thread.
Server start-up is not counted (the servers start before the run, as with ``--mcp``). Prints the
milliseconds per call of each and their ratio. Usage::

    nice -n 10 python benchmarks/mcp_overhead.py [--tasks 200] [--parallel 4] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evolve.execute import ExecuteOptions, start_run
from evolve.execute.tools import Call, ToolFn
from evolve.mcp.servers import ServerSpec
from evolve.mcp.tools import mcp_tools
from evolve.model.plan import Plan, Task
from evolve.model.problem import Limits, Problem, Tool

SERVER = '''
from typing import TypedDict
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("echo")


class Echo(TypedDict):
    value: str


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def echo(value: str) -> Echo:
    return {"value": value}


server.run()
'''


def echo(inputs: Mapping[str, Any], call: Call) -> dict[str, Any]:
    return {"value": inputs["value"]}


def fan(tasks: int, parallel: int) -> tuple[Problem, Plan]:
    problem = Problem(tools={"echo": Tool("echo", 1.0, inputs=("value",), outputs=("value",))},
                      initial=("value",), criteria=("value",), name="fan",
                      limits=Limits(max_parallel=parallel))
    plan = Plan(tasks=tuple(Task(f"t{i}", "echo", inputs={"value": "$value"}) for i in range(tasks)))
    return problem, plan


def per_call(problem: Problem, plan: Plan, tools: Mapping[str, ToolFn], folder: Path) -> float:
    """Seconds per call of one whole run (``start_run`` to the outcome)."""
    options = ExecuteOptions(max_steps=len(plan.tasks) + 1, journal_sync="NORMAL")
    began = time.perf_counter()
    executor = start_run(problem, plan, folder, plan_source="bench", tools_spec=None, tools=tools,
                         facts={"value": "x"}, options=options)
    outcome = executor.run()
    took = time.perf_counter() - began
    assert outcome["reason"] == "goal_met", outcome["message"]
    return took / len(plan.tasks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    problem, plan = fan(args.tasks, args.parallel)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        script = root / "echo_server.py"
        script.write_text(SERVER)
        spec = ServerSpec("echo", command=(sys.executable, str(script)))
        python_s, mcp_s = [], []
        with mcp_tools(problem, {"echo"}, [spec]) as served:
            for n in range(args.repeat):  # in turns, so a slow minute of the machine hits both
                python_s.append(per_call(problem, plan, {"echo": echo}, root / f"py{n}"))
                mcp_s.append(per_call(problem, plan, served.tools, root / f"mcp{n}"))
    py, via = statistics.median(python_s), statistics.median(mcp_s)
    print(f"{args.tasks} calls, {args.parallel} at once, median of {args.repeat} runs each")
    print(f"python callables: {py * 1000:.2f} ms per call")
    print(f"through MCP (stdio): {via * 1000:.2f} ms per call")
    print(f"ratio: {via / py:.1f}x (MCP costs {(via - py) * 1000:.2f} ms more per call)")


if __name__ == "__main__":
    main()
