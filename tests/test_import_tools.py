"""``evolve import-tools``: OpenAI and MCP specs, a side file, a session's dataflow, bad input,
the written problem searched by ``evolve run``, and the vendored NESTFUL sample."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml
from benchmark_scripts import load_benchmark
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evolve import load_plan, load_problem, schedule, validate
from evolve.cli.main import cli
from evolve.model.errors import InputError, UsageError
from evolve.problems.toolspec import import_tools
from evolve.problems.toolspec.trace import Call, dataflow

DATA = Path(__file__).resolve().parent / "data" / "nestful"


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args])


def write(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data) if path.suffix == ".json" else yaml.safe_dump(data), encoding="utf-8")
    return path


def function(name: str, props: dict[str, Any], required: list[str], description: str = "") -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": props, "required": required}}}


OPENAI = {"tools": [
    function("get_order", {"order_id": {"type": "string"}, "verbose": {"type": "boolean"}}, ["order_id"],
             "Fetch an order\r"),
    function("lookup_payments", {"customer": {"type": "string"}}, ["customer"]),
    function("issue_refund", {"capture_id": {"type": "string"}, "amount": {"type": "number"}},
             ["capture_id", "amount"]),
]}

TRACE = [
    {"name": "get_order", "arguments": {"order_id": "8472"},
     "result": {"customer_id": "c-17", "total": 1200.5}},
    {"name": "lookup_payments", "arguments": json.dumps({"customer": "c-17"}),
     "result": {"captures": [{"id": "cap-1"}], "last_capture": "cap-1"}},
    {"name": "issue_refund", "arguments": {"capture_id": "cap-1", "amount": 1200.5},
     "result": json.dumps({"refund_id": "r-9"})},
]

MCP = {"jsonrpc": "2.0", "id": 1, "result": {"tools": [
    {"name": "search_airport", "description": "Find an airport",
     "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
     "outputSchema": {"type": "object", "properties": {"skyId": {"type": "string"}, "entityId": {}}},
     "annotations": {"readOnlyHint": True}},
    {"name": "book_flight",
     "inputSchema": {"type": "object", "properties": {"skyId": {}, "date": {}, "seat": {}},
                     "required": ["skyId", "date"]},
     "outputSchema": {"type": "object", "properties": {"booking": {"type": "string"}}},
     "annotations": {"readOnlyHint": False}, "x-evolve": {"duration": 5, "cost": 2.5}},
]}}


def test_openai_tools_become_a_catalog(tmp_path: Path) -> None:
    imported = import_tools(write(tmp_path / "tools.json", OPENAI), goal=["issue_refund"])
    tools = imported.problem.tools
    assert list(tools) == ["get_order", "lookup_payments", "issue_refund"]
    assert tools["get_order"].inputs == ("order_id",)  # the optional 'verbose' is not an input
    assert tools["get_order"].description == "Fetch an order"
    assert tools["issue_refund"].inputs == ("capture_id", "amount")
    assert tools["issue_refund"].outputs == ("issue_refund_result",)  # no schema: the whole result
    assert imported.problem.criteria == ("issue_refund_result",)
    assert set(imported.problem.initial) == {"order_id", "customer", "capture_id", "amount"}
    assert all(t.duration == 1.0 and t.risk == "read" for t in tools.values())
    assert any("duration 1" in n for n in imported.notes) and any("risk read" in n for n in imported.notes)
    assert any("known at start" in n and "capture_id" in n for n in imported.notes)


@pytest.mark.parametrize("shape", ["bare list", "bare functions"])
def test_openai_lists_without_the_wrapper(tmp_path: Path, shape: str) -> None:
    entries = OPENAI["tools"] if shape == "bare list" else [t["function"] for t in OPENAI["tools"]]
    imported = import_tools(write(tmp_path / "tools.json", entries), goal=["get_order"])
    assert imported.problem.tools["lookup_payments"].inputs == ("customer",)


def test_mcp_tools_list_in_a_json_rpc_response(tmp_path: Path) -> None:
    imported = import_tools(write(tmp_path / "mcp.json", MCP), goal=["book_flight"])
    tools = imported.problem.tools
    assert tools["search_airport"].outputs == ("skyId", "entityId", "search_airport_result")
    assert tools["book_flight"].inputs == ("skyId", "date")
    assert tools["book_flight"].risk == "write" and tools["search_airport"].risk == "read"
    assert tools["book_flight"].duration == 5 and tools["book_flight"].cost == 2.5
    assert imported.problem.initial == ("query", "date")
    assert imported.problem.criteria == ("book_flight_result",)
    duration_note = next(n for n in imported.notes if n.startswith("duration"))
    assert "search_airport" in duration_note and "book_flight" not in duration_note
    unwrapped = import_tools(write(tmp_path / "list.json", MCP["result"]), goal=["book_flight"])
    assert unwrapped.problem.tools == imported.problem.tools


def test_a_side_file_gives_durations_and_risks(tmp_path: Path) -> None:
    side = write(tmp_path / "side.yaml", {
        "get_order": {"duration": 150, "scope": "orders:read"},
        "lookup_payments": {"duration": 200},
        "issue_refund": {"duration": 300, "risk": "write", "cost": 0.5}})
    imported = import_tools(write(tmp_path / "tools.json", OPENAI), meta_path=side, goal=["issue_refund"])
    tools = imported.problem.tools
    assert [t.duration for t in tools.values()] == [150, 200, 300]
    assert tools["issue_refund"].risk == "write" and tools["issue_refund"].cost == 0.5
    assert tools["get_order"].scope == "orders:read"
    assert not any(n.startswith("duration") for n in imported.notes)
    risk_note = next(n for n in imported.notes if n.startswith("risk"))
    assert "issue_refund" not in risk_note and "get_order" in risk_note


def test_a_session_names_inputs_after_the_outputs_that_fed_them(tmp_path: Path) -> None:
    imported = import_tools(write(tmp_path / "tools.json", OPENAI),
                            trace_path=write(tmp_path / "trace.json", TRACE))
    tools, problem = imported.problem.tools, imported.problem
    assert tools["get_order"].outputs == ("get_order_result", "customer_id", "total")
    assert tools["lookup_payments"].inputs == ("customer_id",)
    # not captures[0].id: list items are no fields
    assert tools["issue_refund"].inputs == ("last_capture", "total")
    assert problem.initial == ("order_id",)  # the only literal argument
    assert problem.criteria == ("issue_refund_result",)  # the call whose result nobody read
    assert any("lookup_payments.customer <- customer_id" in n for n in imported.notes)
    reference = imported.reference
    assert reference is not None and validate(problem, reference) == []
    assert [t.deps for t in reference.tasks] == [(), ("t1",), ("t2", "t1")]
    assert schedule(problem, reference).makespan == 3.0


def test_dataflow_prefers_the_latest_call_and_the_field_named_like_the_argument() -> None:
    calls = [Call("a", {}, {"id": "x", "other": "x"}, "[0]"), Call("b", {}, {"x_id": "x", "id": "x"}, "[1]"),
             Call("c", {"id": "x", "flag": True, "empty": ""}, None, "[2]")]
    (edge,) = dataflow(calls)
    assert (edge.call, edge.argument, edge.source, edge.path) == (2, "id", 1, ("id",))
    assert set(edge.others) == {"call 2 result.x_id", "call 1 result.id", "call 1 result.other"}


def test_a_known_fact_does_not_hide_the_flow_a_session_showed(tmp_path: Path) -> None:
    spec = {"tools": [
        {"name": "search",
         "inputSchema": {"type": "object", "properties": {"city": {}}, "required": ["city"]},
         "outputSchema": {"type": "object", "properties": {"city": {}, "hotel": {}}}},
        {"name": "book", "inputSchema": {"type": "object", "properties": {"city": {}, "hotel": {}},
                                         "required": ["city", "hotel"]}}]}
    trace = [{"name": "search", "arguments": {"city": "SF"},
              "result": {"city": "San Francisco", "hotel": "h1"}},
             {"name": "book", "arguments": {"city": "San Francisco", "hotel": "h1"}, "result": "ok"}]
    imported = import_tools(write(tmp_path / "s.json", spec), trace_path=write(tmp_path / "t.json", trace),
                            goal=["search", "book"])
    assert imported.problem.tools["book"].inputs == ("search_city", "hotel")
    assert "search_city" in imported.problem.tools["search"].outputs
    assert imported.reference is not None and imported.reference.tasks[1].deps == ("t1",)


def test_the_written_problem_loads_and_evolve_run_finds_a_complete_plan(tmp_path: Path) -> None:
    spec, trace = write(tmp_path / "tools.json", OPENAI), write(tmp_path / "trace.json", TRACE)
    side = write(tmp_path / "side.yaml", {"issue_refund": {"risk": "write", "duration": 3}})
    out, plan = tmp_path / "problem.yaml", tmp_path / "session_plan.yaml"
    result = invoke("import-tools", spec, "--trace", trace, "--meta", side, "--out", out, "--plan-out", plan)
    assert result.exit_code == 0, result.output
    assert "guess: " in result.stderr and "3 tools" in result.stderr
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# Written by `evolve import-tools`") and "# Guesses" in text
    problem = load_problem(out)
    assert validate(problem, load_plan(plan)) == []
    assert invoke("validate", plan, "--problem", out).exit_code == 0
    run_dir = tmp_path / "run"
    ran = invoke("run", out, "--generations", "2", "--population", "6", "--keep", "3", "--jobs", "1",
                 "--no-report", "--out", run_dir)
    assert ran.exit_code == 0, ran.output
    best = load_plan(run_dir / "best.json")
    assert validate(problem, best) == []
    assert {t.tool for t in best.tasks} == {"get_order", "lookup_payments", "issue_refund"}
    assert schedule(problem, best).makespan == 1 + 1 + 3


def test_without_out_the_problem_is_printed(tmp_path: Path) -> None:
    result = invoke("import-tools", write(tmp_path / "mcp.json", MCP), "--goal", "booking",
                    "--known", "query,date")
    assert result.exit_code == 0, result.output
    assert yaml.safe_load(result.stdout)["criteria"] == ["booking"]


BAD_SPECS: list[tuple[object, str]] = [
    ({"functions": []}, "tools: missing"),
    ({"tools": {}}, "tools: expected a list of tools"),
    ({"tools": []}, "tools: no tools"),
    ({"tools": [{"type": "function"}]}, "tools[0].function: missing"),
    ({"tools": [{"type": "function", "function": {"description": "x"}}]}, "tools[0].function.name: missing"),
    ({"tools": [function("a", {"x": {}}, ["y"])]}, "tools[0].function.parameters.required[0]"),
    ({"tools": [{"name": "a", "inputSchema": {"type": "array"}}]}, "tools[0].inputSchema.type"),
    ({"tools": [{"name": "a"}, {"name": "a"}]}, "tools[1].name: \"a\" is defined twice"),
    ({"tools": [{"name": "a", "description": 3}]}, "tools[0].description: expected text"),
    ({"tools": [{"name": "a", "x-evolve": {"duration": -1}}]}, "tools[0].x-evolve.duration"),
    ({"tools": [{"name": "a", "x-evolve": {"speed": 1}}]}, "tools[0].x-evolve.speed: unknown key"),
    ({"jsonrpc": "2.0", "id": 1, "error": {"code": -1}, "result": None}, "error: a JSON-RPC error"),
]


@pytest.mark.parametrize(("spec", "message"), BAD_SPECS, ids=[m for _, m in BAD_SPECS])
def test_a_bad_spec_names_the_file_and_the_field(tmp_path: Path, spec: object, message: str) -> None:
    path = write(tmp_path / "bad.json", spec)
    with pytest.raises(InputError) as caught:
        import_tools(path)
    assert str(caught.value).startswith(f"{path}: ") and message in str(caught.value)
    result = invoke("import-tools", path, "--out", tmp_path / "p.yaml")
    assert result.exit_code == 2 and message in result.stderr and "Traceback" not in result.output


BAD_SIDES: list[tuple[object, str]] = [
    ({"nope": {"duration": 1}}, "nope: \"nope\" is not a tool of the spec"),
    ({"get_order": {"risk": "dangerous"}}, "get_order.risk: expected one of read, write, approval"),
    ({"get_order": {"duration": "fast"}}, "get_order.duration: expected a number"),
    ({"get_order": 3}, "get_order: expected a mapping"),
]


@pytest.mark.parametrize(("side", "message"), BAD_SIDES, ids=[m for _, m in BAD_SIDES])
def test_a_bad_side_file_names_the_file_and_the_field(tmp_path: Path, side: object, message: str) -> None:
    spec, path = write(tmp_path / "tools.json", OPENAI), write(tmp_path / "side.yaml", side)
    result = invoke("import-tools", spec, "--meta", path, "--goal", "get_order")
    assert result.exit_code == 2, result.output
    assert f"{path}: {message}" in result.stderr and "Traceback" not in result.output


BAD_TRACES: list[tuple[object, str]] = [
    ([], "no calls"),
    ({"steps": []}, "steps: unknown key"),
    ([{"arguments": {}}], "[0].name: missing"),
    ([{"name": "nope"}], "[0].name: \"nope\" is not a tool of the spec"),
    ([{"name": "get_order", "arguments": "{not json"}], "[0].arguments: not valid JSON text"),
    ({"calls": [{"name": "get_order", "arguments": [1]}]}, "calls[0].arguments: expected a mapping"),
]


@pytest.mark.parametrize(("trace", "message"), BAD_TRACES, ids=[m for _, m in BAD_TRACES])
def test_a_bad_trace_names_the_file_and_the_field(tmp_path: Path, trace: object, message: str) -> None:
    spec, path = write(tmp_path / "tools.json", OPENAI), write(tmp_path / "trace.json", trace)
    result = invoke("import-tools", spec, "--trace", path)
    assert result.exit_code == 2, result.output
    assert f"{path}: {message}" in result.stderr and "Traceback" not in result.output


def test_bad_options_are_usage_errors(tmp_path: Path) -> None:
    spec = write(tmp_path / "tools.json", OPENAI)
    with pytest.raises(UsageError, match="--goal 'refund': neither a tool"):
        import_tools(spec, goal=["refund"])
    with pytest.raises(UsageError, match="cannot be reached"):
        import_tools(spec, goal=["issue_refund"], known=["order_id"])
    result = invoke("import-tools", spec, "--plan-out", tmp_path / "p.yaml")
    assert result.exit_code == 2 and "--trace" in result.output
    unreadable = invoke("import-tools", tmp_path / "missing.json")
    assert unreadable.exit_code == 2 and "missing.json" in unreadable.stderr


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(["id", "token", "ref", "key", "name"]), min_size=2, max_size=6),
       st.randoms(use_true_random=False))
def test_a_chain_of_calls_imports_to_a_problem_whose_plan_is_the_chain(
        tmp_path: Path, fields: list[str], rnd: Any) -> None:
    """A session where call i reads a field of call i-1's result (field names reused across the
    chain, argument names unrelated): the reference plan validates, and evolve's greedy plan
    runs exactly the chain's tools, one after the other."""
    n = len(fields)
    tools = [{"name": f"step{i}", "inputSchema": {"type": "object", "properties": {f"arg{i}": {}},
                                                    "required": [f"arg{i}"]}} for i in range(n)]
    values = [f"v{i}-{rnd.random()}" for i in range(n)]
    trace = [{"name": f"step{i}", "arguments": {f"arg{i}": "start" if i == 0 else values[i - 1]},
              "result": {fields[i]: values[i], "noise": i}} for i in range(n)]
    imported = import_tools(write(tmp_path / "spec.json", {"tools": tools}),
                            trace_path=write(tmp_path / "trace.json", trace))
    problem, reference = imported.problem, imported.reference
    assert problem.initial == ("arg0",) and problem.criteria == (f"step{n - 1}_result",)
    assert reference is not None and validate(problem, reference) == []
    bench = benchmark()
    plan = bench.greedy_plan(problem)
    assert plan is not None and validate(problem, plan) == []
    assert sorted(t.tool for t in plan.tasks) == sorted(f"step{i}" for i in range(n))
    assert schedule(problem, plan).makespan == n


_BENCH: list[ModuleType] = []


def benchmark() -> ModuleType:
    """benchmarks/nestful.py as a module, loaded from its path (benchmarks/ is not a package)."""
    if not _BENCH:
        _BENCH.append(load_benchmark("nestful"))
    return _BENCH[0]


def test_the_vendored_nestful_sample_gives_the_gold_plans(tmp_path: Path) -> None:
    """Every vendored NESTFUL sample imports, its gold sequence is a valid plan of the imported
    problem, and evolve's plan has the gold's tasks, makespan and tools: the greedy plan, or
    where it keeps a spare producer, the plan of a short search."""
    bench = benchmark()
    samples = [bench.Sample(**s) for s in json.loads((DATA / "samples.json").read_text(encoding="utf-8"))]
    assert len(samples) >= 10 and (DATA / "NOTICE").is_file()
    searched = 0
    for sample in samples:
        outcome = bench.compare(sample, DATA / "tools.json", tmp_path)
        assert outcome.imported and outcome.reference_valid and outcome.plan_valid, outcome
        if not outcome.matched and outcome.cause.startswith("other tools chosen"):
            searched += 1
            outcome = bench.compare(sample, DATA / "tools.json", tmp_path, generations=3)
        assert outcome.matched, outcome
    assert searched <= 2


def test_the_benchmark_converts_nestful_references_to_equal_values() -> None:
    bench = benchmark()
    sample = {"input": "q", "output": [
        {"name": "a", "arguments": {"x": 1}, "label": "var1"},
        {"name": "b", "arguments": {"y": "$var1.out.deep$", "z": "$var1$"}, "label": "var2"},
        {"name": "var_result", "arguments": {"answer": "$var2$"}}]}
    converted = bench.convert(sample, "s")
    first, second = converted.trace
    assert first["result"] == {"out": {"deep": "<var1.out.deep>"}}
    assert second["arguments"] == {"y": "<var1.out.deep>", "z": first["result"]}
    assert converted.goal == ["b"] and converted.gold[1]["reads"] == ["var1"] and not converted.flaw
