"""A corpus of malformed and hostile inputs, each fed through the command line as a user would.

For every case the suite asserts the exit status, one message line that names
the file (or option) and the field, no traceback, bounded time and memory, and
nothing written outside the folder the command was given.
"""

from __future__ import annotations

import importlib
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_checks import one_clear_line
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evolve.cli.main import cli
from evolve.llm.testing import Scripted, ScriptedServer

ROOT = Path(__file__).resolve().parents[1]
REFUND = ROOT / "examples" / "refund.yaml"
BASE: dict[str, Any] = yaml.safe_load(REFUND.read_text())
DEEP = "nested deeper than 64 levels"
"""evolve's own wording for a deep document, whatever the YAML or JSON library says."""
QUICK = ["--generations", "1", "--population", "4", "--keep", "2", "--jobs", "1", "--no-report"]


def invoke(*args: object, cwd: Path | None = None) -> Result:
    runner = CliRunner()
    if cwd is None:
        return runner.invoke(cli, [str(a) for a in args])
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return runner.invoke(cli, [str(a) for a in args])
    finally:
        os.chdir(old)


def problem_with(tmp_path: Path, change: Callable[[dict[str, Any]], None], name: str = "p.yaml") -> Path:
    doc = json.loads(json.dumps(BASE))
    change(doc)
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def files_under(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*")}


# --- problem files the loader must refuse (exit 2), each naming the file and the key -----------

BILLION_LAUGHS = """\
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""


def raw_cases() -> list[tuple[str, str, str, list[str]]]:
    """(case id, file name, text, words the message must hold)."""
    refund_text = REFUND.read_text()
    return [
        ("alias-bomb-objective", "bomb.yaml",
         BILLION_LAUGHS + "objective: *i\ntools: {}\n", ["aliases"]),
        ("alias-bomb-template", "bomb2.yaml", BILLION_LAUGHS + refund_text.replace(
            "name: refund-8472", "name: refund\ntemplate: {tasks: [{id: t1, tool: orders.get, "
            "inputs: {order_id: $order_id, x: *i}}]}"), ["aliases"]),
        ("deep-yaml", "deep.yaml", "tools: " + "[" * 5000 + "]" * 5000 + "\n", [DEEP]),
        ("deep-yaml-1007", "deep1007.yaml", "tools: " + "[" * 1007 + "]" * 1007 + "\n", [DEEP]),
        ("deep-yaml-70", "deep70.yaml", "tools: " + "[" * 70 + "]" * 70 + "\n", [DEEP]),
        ("deep-json", "deep.json", '{"tools": ' + "[" * 100_000 + "]" * 100_000 + "}", [DEEP]),
        ("duplicate-tools-key", "dup.yaml", refund_text + "tools: {}\n", ['"tools"', "appears twice"]),
        ("duplicate-json-key", "dup.json", '{"name": "a", "name": "b", "tools": {}}', ["appears twice"]),
        ("not-utf8", "latin1.yaml", "name: caf\xe9\n", ["UTF-8"]),
    ]


@pytest.mark.parametrize("case", raw_cases(), ids=lambda c: c[0])
def test_hostile_problem_text_is_refused_in_one_line(tmp_path: Path,
                                                     case: tuple[str, str, str, list[str]]) -> None:
    _, name, text, words = case
    path = tmp_path / name
    path.write_bytes(text.encode("latin-1") if name == "latin1.yaml" else text.encode())
    before = files_under(tmp_path)
    began = time.monotonic()
    result = invoke("run", path, *QUICK, "--out", tmp_path / "run", cwd=tmp_path)
    assert time.monotonic() - began < 30
    assert result.exit_code == 2, result.output
    one_clear_line(result, str(path), *words)
    assert files_under(tmp_path) == before  # refused before anything was written


@pytest.mark.parametrize("message", ["exceeded maximum nesting depth", "some other parser limit"])
def test_a_parser_refusing_a_deep_document_gets_evolve_s_wording(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, message: str) -> None:
    """Another libyaml build refuses deep nesting itself, in its own words (seen on a fresh
    machine); evolve must say the same thing as when its own bound catches it."""
    import evolve.model.documents as files

    def refuse(*_: object, **__: object) -> None:
        raise yaml.YAMLError(message)

    monkeypatch.setattr(files.yaml, "load", refuse)
    path = tmp_path / "deep.yaml"
    path.write_text("tools: " + "[" * 1007 + "]" * 1007 + "\n")
    result = invoke("run", path, *QUICK, "--out", tmp_path / "run")
    assert result.exit_code == 2, result.output
    line = one_clear_line(result, str(path), DEEP)
    assert message not in line
    shallow = tmp_path / "shallow.yaml"
    shallow.write_text("tools: [[x]]\n")
    result = invoke("run", shallow, *QUICK, "--out", tmp_path / "run")
    assert result.exit_code == 2 and DEEP not in result.output  # a plain syntax error stays one


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "fifo-sm", "fifo-plan"])
def test_a_path_that_is_not_a_regular_file_is_refused_without_reading_it(tmp_path: Path, kind: str) -> None:
    """A FIFO would block the reader until a writer came, /dev/zero would fill memory."""
    if kind == "dev-zero":
        path = Path("/dev/zero")
    else:
        path = tmp_path / ("x.sm" if kind == "fifo-sm" else "x.yaml")
        os.mkfifo(path)
    before = files_under(tmp_path)
    began = time.monotonic()
    if kind == "fifo-plan":
        result = invoke("validate", path, "--problem", REFUND)
    else:
        result = invoke("run", path, *QUICK, "--out", tmp_path / "run")
    assert time.monotonic() - began < 30
    assert result.exit_code == 2, result.output
    one_clear_line(result, str(path), "not a regular file")
    assert files_under(tmp_path) == before


def test_jobs_far_above_the_cores_are_capped_with_a_warning(tmp_path: Path) -> None:
    began = time.monotonic()
    result = invoke("run", REFUND, "--generations", "1", "--population", "4", "--keep", "2",
                    "--no-report", "--jobs", "1000", "--out", tmp_path / "run")
    assert result.exit_code == 0, result.output
    assert time.monotonic() - began < 120
    assert f"--jobs 1000 is more than this machine's {os.cpu_count()} cores" in result.output
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["options"]["jobs"] <= (os.cpu_count() or 1)


@pytest.mark.parametrize("command", [["generate"], ["bench", "psplib"], ["execute", "x.yaml"]])
def test_a_negative_seed_is_a_usage_error(command: list[str]) -> None:
    result = invoke(*command, "--seed", "-1")
    assert result.exit_code == 2, result.output
    assert "--seed" in result.output and "internal error" not in result.output


def set_tool(name: str, key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        doc["tools"][name][key] = value
    return change


def set_key(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        doc[key] = value
    return change


def template(tasks: list[dict[str, Any]]) -> Callable[[dict[str, Any]], None]:
    return set_key("template", {"tasks": tasks})


FIELD_CASES: list[tuple[str, Callable[[dict[str, Any]], None], str, str]] = [
    ("huge-integer-duration", set_tool("orders.get", "duration", 10**400),
     "tools.orders.get.duration", "<= 1e+15"),
    ("huge-float-duration", set_tool("orders.get", "duration", 1e308),
     "tools.orders.get.duration", "<= 1e+15"),
    ("nan-cost", set_tool("orders.get", "cost", float("nan")), "tools.orders.get.cost", "number"),
    ("space-in-fact", set_key("initial", ["order id", "complaint"]), "initial[0]", "not a valid name"),
    ("digit-first-fact", set_key("criteria", ["1x"]), "criteria[0]", "not a valid name"),
    ("dot-in-fact", set_tool("orders.get", "outputs", ["a.b"]), "tools.orders.get.outputs[0]",
     "not a valid name"),
    ("dollar-fact", set_tool("orders.get", "inputs", ["$c"]), "tools.orders.get.inputs[0]",
     "not a valid name"),
    ("control-char-fact", set_key("initial", ["order\x07id"]), "initial[0]", "not a valid name"),
    ("rtl-override-tool", lambda d: d["tools"].update({"evil\u202etxt": {"duration": 1}}),
     "tools: \"evil\\u202etxt\"", "not a valid name"),
    ("crlf-fact", set_key("criteria", ["reply\r\nfinding"]), "criteria[0]", "not a valid name"),
    ("control-char-objective", set_key("objective", "refund\x1b[31m"), "objective", "U+001B"),
    ("newline-in-unknown-key", set_tool("orders.get", "a\nb", 1), "tools.orders.get.a\\nb", "unknown key"),
    ("template-cycle", template([
        {"id": "t1", "tool": "orders.get", "deps": ["t2"], "inputs": {"order_id": "$order_id"}},
        {"id": "t2", "tool": "orders.get", "deps": ["t1"], "inputs": {"order_id": "$order_id"}}]),
     "template", "cycle"),
    ("template-unknown-tool", template([{"id": "t1", "tool": "no.such"}]), "template", "unknown tool"),
    ("template-duplicate-ids", template([
        {"id": "t1", "tool": "orders.get", "inputs": {"order_id": "$order_id"}},
        {"id": "t1", "tool": "orders.get", "inputs": {"order_id": "$order_id"}}]), "template", "t1"),
    ("template-unknown-dep", template([
        {"id": "t1", "tool": "orders.get", "deps": ["t9"], "inputs": {"order_id": "$order_id"}}]),
     "template", "t9"),
    ("template-bad-reference", template([
        {"id": "t1", "tool": "orders.get", "inputs": {"order_id": "$nothing"}}]),
     "template", "$nothing"),
]


@pytest.mark.parametrize("case", FIELD_CASES, ids=lambda c: c[0])
def test_bad_field_is_refused_naming_file_and_field(
        tmp_path: Path, case: tuple[str, Callable[[dict[str, Any]], None], str, str]) -> None:
    _, change, field, words = case
    path = problem_with(tmp_path, change)
    result = invoke("run", path, *QUICK, "--out", tmp_path / "run")
    assert result.exit_code == 2, result.output
    one_clear_line(result, str(path), field, words)
    assert not (tmp_path / "run").exists()


# --- problems no plan can solve: refused when loading, with the reason (exit 3) ---------------

def drop_producers(fact: str) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        for spec in doc["tools"].values():
            if fact in spec.get("outputs", []):
                spec["outputs"] = [o for o in spec["outputs"] if o != fact] or ["spare"]
    return change


def only_ungranted_scope(doc: dict[str, Any]) -> None:
    doc["scopes"] = [s for s in doc["scopes"] if s != "orders:read"]


def no_approval_tool(doc: dict[str, Any]) -> None:
    doc["tools"] = {k: v for k, v in doc["tools"].items() if v.get("risk") != "approval"}
    for spec in doc["tools"].values():  # only writes can decide
        if "decision" in spec.get("outputs", []) and spec.get("risk") != "write":
            spec["outputs"] = [o for o in spec["outputs"] if o != "decision"] or ["spare"]
    doc["tools"]["refunds.decide"] = {"duration": 5, "risk": "write", "scope": "refunds:write",
                                      "inputs": ["finding"], "outputs": ["decision"]}


def input_nobody_makes(doc: dict[str, Any]) -> None:
    for spec in doc["tools"].values():
        if "reply" in spec.get("outputs", []):
            spec.setdefault("inputs", []).append("signature")


INFEASIBLE = [
    ("criterion-nobody-produces", drop_producers("reply"), "'reply'", "no tool in the catalog produces it"),
    ("producers-under-ungranted-scope", only_ungranted_scope, "'finding'", "not granted"),
    ("write-without-approval-tool", no_approval_tool, "'decision'", "no approval tool"),
    ("input-nobody-produces", input_nobody_makes, "'reply'", "'signature', which no tool produces"),
]


@pytest.mark.parametrize("case", INFEASIBLE, ids=lambda c: c[0])
def test_infeasible_problem_is_refused_with_the_reason(
        tmp_path: Path, case: tuple[str, Callable[[dict[str, Any]], None], str, str]) -> None:
    _, change, criterion, why = case
    path = problem_with(tmp_path, change)
    result = invoke("run", path, *QUICK, "--out", tmp_path / "run")
    assert result.exit_code == 3, result.output
    one_clear_line(result, str(path), f"criterion {criterion} cannot be reached", why)


def test_a_one_task_template_without_criteria_runs(tmp_path: Path) -> None:
    def change(doc: dict[str, Any]) -> None:
        doc.pop("criteria")
        template([{"id": "t1", "tool": "orders.get", "inputs": {"order_id": "$order_id"}}])(doc)
    path = problem_with(tmp_path, change)
    result = invoke("run", path, *QUICK, "--out", tmp_path / "run", "--json")
    assert result.exit_code == 0, result.output


# --- options ------------------------------------------------------------------------------------

@pytest.mark.parametrize("args, option", [
    (["--fitness", "validity", "--fitness", "makespan", "--weights", "nan,1"], "--weights"),
    (["--fitness", "validity", "--fitness", "makespan", "--weights", "inf,-inf"], "--weights"),
    (["--target", "makespan=nan"], "--target"),
    (["--jobs", "0"], "--jobs"),
    (["--jobs", "-5"], "--jobs"),
    (["--seed", "-5"], "--seed"),
])
def test_bad_option_is_refused_naming_it(tmp_path: Path, args: list[str], option: str) -> None:
    result = invoke("run", REFUND, "--generations", "1", "--no-report", *args,
                    "--out", tmp_path / "run")
    assert result.exit_code == 2, result.output
    assert option in result.output and "Traceback" not in result.output
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("make", ["dev-null", "under-a-file", "proc"])
def test_bad_out_folder_is_named(tmp_path: Path, make: str) -> None:
    if make == "dev-null":
        out = Path("/dev/null")
    elif make == "proc":
        out = Path(f"/proc/{os.getpid()}/run")
    else:
        (tmp_path / "some_file").write_text("x")
        out = tmp_path / "some_file" / "run"
    result = invoke("run", REFUND, *QUICK, "--out", out)
    assert result.exit_code == 2, result.output
    one_clear_line(result, str(out))


def test_a_finished_run_is_not_overwritten_without_force(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert invoke("run", REFUND, *QUICK, "--out", out).exit_code == 0
    best = (out / "best.json").read_bytes()
    refused = invoke("run", REFUND, *QUICK, "--seed", "9", "--out", out)
    assert refused.exit_code == 2
    one_clear_line(refused, str(out), "already holds a run", "--force")
    assert (out / "best.json").read_bytes() == best
    forced = invoke("run", REFUND, *QUICK, "--seed", "9", "--out", out, "--force")
    assert forced.exit_code == 0, forced.output


def test_a_run_without_out_writes_under_the_runs_folder_only(tmp_path: Path) -> None:
    result = invoke("run", REFUND, *QUICK, cwd=tmp_path)
    assert result.exit_code == 0, result.output
    assert not (tmp_path / "runs").exists()  # the suite points EVOLVE_RUNS_DIR elsewhere


# --- runs that end without a usable answer ------------------------------------------------------

def test_every_evaluation_failing_is_said_and_exits_1(tmp_path: Path) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    result = invoke("run", REFUND, *QUICK, "--no-isolate", "--fitness", "plugins.faulty:always_raises",
                    "--out", tmp_path / "run")
    assert result.exit_code == 1, result.output
    assert "every one of the" in result.output and "evaluations failed" in result.output
    assert "Traceback" not in result.output


def test_every_llm_call_failing_is_said_and_exits_1(tmp_path: Path) -> None:
    with ScriptedServer(lambda body, seen: Scripted(status=500)) as server:
        result = invoke("run", REFUND, *QUICK, "--operator", "llm", "--llm-base-url", server.url,
                        "--llm-model", "m", "--llm-cache-dir", tmp_path / "cache",
                        "--out", tmp_path / "run")
    assert result.exit_code == 1, result.output
    assert "LLM calls failed" in result.output and "Traceback" not in result.output


# --- plans --------------------------------------------------------------------------------------

@pytest.mark.parametrize("tasks, words", [
    ([{"id": "a", "tool": "orders.get", "deps": ["b"], "inputs": {"order_id": "$order_id"}},
      {"id": "b", "tool": "orders.get", "deps": ["a"], "inputs": {"order_id": "$order_id"}}], "cycle"),
    ([{"id": "a", "tool": "orders.get", "inputs": {"order_id": "$order_id"}},
      {"id": "a", "tool": "orders.get", "inputs": {"order_id": "$order_id"}}], "a"),
    ([{"id": "a", "tool": "no.such"}], "unknown tool"),
])
def test_schedule_of_an_invalid_plan_exits_1_with_the_errors(tmp_path: Path, tasks: list[Any],
                                                             words: str) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"tasks": tasks}))
    result = invoke("schedule", plan, "--problem", REFUND)
    assert result.exit_code == 1, result.output
    assert words in result.output and "not valid" in result.output and "makespan" not in result.output


# --- bounded time and memory, in a process of its own --------------------------------------------

def limited(limit_bytes: int) -> Callable[[], None]:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))
    return apply


@pytest.mark.parametrize("case", [c for c in raw_cases() if c[0].startswith(("alias", "deep"))],
                         ids=lambda c: c[0])
def test_bombs_stay_within_time_and_memory(tmp_path: Path, case: tuple[str, str, str, list[str]]) -> None:
    _, name, text, _ = case
    path = tmp_path / name
    path.write_text(text)
    proc = subprocess.run([sys.executable, "-m", "evolve", "validate", str(path), "--problem", str(path)],
                          capture_output=True, text=True, timeout=60, preexec_fn=limited(3 << 30))
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.splitlines()) == 1


def test_ctrl_c_in_generation_0_tells_the_truth(tmp_path: Path) -> None:
    problem = tmp_path / "big.yaml"
    assert invoke("generate", "--tools", "300", "--seed", "3", "--out", problem).exit_code == 0
    folder = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "evolve", "run", str(problem), "--jobs", "1",
                             "--out", str(folder), "--no-report"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not (folder / "events.jsonl").exists() and time.monotonic() < deadline:
        time.sleep(0.005)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    # the events log is opened once the search has begun: from there a first Ctrl-C ends the
    # run at a generation's end, checkpointed
    assert "checkpointed" in err and (folder / "checkpoint.json").exists()


def swallowed_ctrl_c(*_: object, **__: object) -> None:
    """What the first run's kernel compilation does with a Ctrl-C that lands in llvmlite's
    ctypes callback: the interrupt is swallowed, then the compiler fails for another reason."""
    try:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)  # the handler runs here and raises
    except KeyboardInterrupt:
        pass
    raise RuntimeError("no compiled object yet for <Library 'justify'>")


def test_a_ctrl_c_lost_inside_the_compiler_is_still_reported_as_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The timing-free twin of the test above: the interrupt is caught whatever phase it hits."""
    main = importlib.import_module("evolve.cli.searching")  # where evolve run calls the search
    monkeypatch.setattr(main, "run_search", swallowed_ctrl_c)
    before = signal.getsignal(signal.SIGINT)
    result = invoke("run", REFUND, *QUICK, "--out", tmp_path / "run")
    assert result.exit_code == 130, result.output
    assert "there is no checkpoint to resume" in result.output
    assert "internal error" not in result.output and "Traceback" not in result.output
    assert signal.getsignal(signal.SIGINT) is before
    monkeypatch.setattr(main, "run_search", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("bug")))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the crash file lands here, not in /tmp
    result = invoke("run", REFUND, *QUICK, "--out", tmp_path / "run2")
    assert result.exit_code == 70 and "internal error" in result.output  # a real bug stays one
    [crash] = tmp_path.glob("evolve-crash-*.txt")
    assert str(crash) in result.output and "RuntimeError: bug" in crash.read_text(encoding="utf-8")


# --- hypothesis: malformed documents, whatever their shape --------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8)


@st.composite
def mutated_problems(draw: st.DrawFn) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(json.dumps(BASE))
    for _ in range(draw(st.integers(1, 3))):
        target: Any = doc
        keys: list[Any] = []
        while isinstance(target, (dict, list)) and target and draw(st.booleans()):
            key = draw(st.sampled_from(sorted(target) if isinstance(target, dict) else range(len(target))))
            keys.append(key)
            if not isinstance(target[key], (dict, list)):
                break
            target = target[key]
        if isinstance(target, dict) and target:
            key = draw(st.sampled_from(sorted(target)))
            if draw(st.booleans()):
                del target[key]
            else:
                target[key] = draw(json_values)
        elif isinstance(target, list) and target:
            target[draw(st.integers(0, len(target) - 1))] = draw(json_values)
    return doc


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutated_problems())
def test_malformed_problems_get_an_answer_never_a_traceback(tmp_path: Path, doc: dict[str, Any]) -> None:
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"tasks": []}))
    result = invoke("validate", plan, "--problem", path)
    assert result.exit_code in (0, 1, 2, 3), result.output
    assert "Traceback" not in result.output and "internal error" not in result.output
    if result.exit_code in (2, 3):
        one_clear_line(result, str(path))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(st.sampled_from(["tasks", "priority", "schedule", "extra"]), json_values, max_size=3)
       | st.builds(lambda ts: {"tasks": ts}, st.lists(
           st.dictionaries(st.sampled_from(["id", "tool", "deps", "inputs", "when", "outputs",
                                            "idempotency_key", "retries", "assumes"]),
                           json_values, max_size=5), max_size=3)))
def test_malformed_plans_get_an_answer_never_a_traceback(tmp_path: Path, doc: dict[str, Any]) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(doc))
    for command in ("validate", "schedule"):
        result = invoke(command, plan, "--problem", REFUND)
        assert result.exit_code in (0, 1, 2), result.output
        assert "Traceback" not in result.output and "internal error" not in result.output
        if result.exit_code == 2:
            one_clear_line(result, str(plan))


def test_execute_names_a_bad_out_folder(tmp_path: Path) -> None:
    (tmp_path / "some_file").write_text("x")
    for out in (Path("/dev/null"), tmp_path / "some_file" / "run"):
        result = CliRunner().invoke(cli, ["execute", str(ROOT / "examples" / "refund_plan.yaml"),
                                          "--problem", str(REFUND), "--simulate", "--out", str(out)])
        assert result.exit_code == 2, result.output
        assert f"error: {out}:" in result.output and "Traceback" not in result.output
