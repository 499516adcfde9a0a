"""Regressions of a hostile-input sweep of the command line: each case once ended in a traceback,
an internal error (exit 70), a silent success or a message that did not name what was wrong.

Every case asserts the exit status and that the message names the file or option at fault.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from cli_checks import one_clear_line
from click.testing import CliRunner, Result

from evolve import defaults
from evolve.cli.main import cli
from evolve.problems import load_problem
from evolve.report import ExecutionReportError, load_execution, write_execution_report

ROOT = Path(__file__).resolve().parents[1]
REFUND = ROOT / "examples" / "refund.yaml"
REFUND_PLAN = ROOT / "examples" / "refund_plan.yaml"
HUMAN_PLAN = ROOT / "examples" / "refund_human_plan.yaml"
WAITING_TOOLS = f"{ROOT / 'examples' / 'refund_tools.py'}:NO_PRIOR_REFUND"
NOT_UTF8 = b'{"event": "candidate"}\n\xff\xfe\x80\n'

HDDL_DOMAIN = """(define (domain parcel)
  (:requirements :typing :hierarchy)
  (:types item place)
  (:predicates (at ?i - item ?p - place))
  (:task deliver :parameters (?i - item ?p - place))
  (:method m-move :parameters (?i - item ?a - place ?p - place) :task (deliver ?i ?p)
    :precondition (at ?i ?a) :ordered-subtasks (and (t1 (move ?i ?a ?p))))
  (:action move :parameters (?i - item ?a - place ?p - place)
    :precondition (at ?i ?a) :effect (and (not (at ?i ?a)) (at ?i ?p))))
"""
HDDL_PROBLEM = """(define (problem p1) (:domain parcel)
  (:objects box - item home shop - place)
  (:htn :ordered-subtasks (and (t0 (deliver box shop))))
  (:init (at box home)))
"""


def invoke(*args: object) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args])


def usage_error(result: Result, option: str, *words: str) -> None:
    """click's refusal of an option value: exit 2, the option and the fault named, no traceback."""
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output, result.output
    named = (f"Invalid value for {option}", f"Invalid value for '{option}'")
    assert any(text in result.output for text in named), result.output
    for word in words:
        assert word in result.output, (word, result.output)


@pytest.fixture
def run_folder(tmp_path: Path) -> Path:
    """The smallest folder ``evolve report`` and ``plot`` read: a summary, a best plan, events."""
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "summary.json").write_text(json.dumps({"problem": "mini"}))
    (folder / "best.json").write_text(json.dumps(
        {"tasks": [{"id": "t1", "tool": "orders.get", "inputs": {"order_id": "$order_id"}}]}))
    (folder / "events.jsonl").write_text("")
    return folder


@pytest.fixture(scope="module")
def waiting_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run of a plan stopped waiting for a manager's approval of t6 (exit 4)."""
    folder = tmp_path_factory.mktemp("waiting") / "run"
    result = invoke("execute", HUMAN_PLAN, "--problem", REFUND, "--tools", WAITING_TOOLS,
                    "--out", folder, "--no-report")
    assert result.exit_code == 4, result.output
    return folder


@pytest.fixture
def waiting_copy(waiting_run: Path, tmp_path: Path) -> Iterator[Path]:
    copy = tmp_path / "run"
    shutil.copytree(waiting_run, copy)
    yield copy


# --- damaged run folders: bad input (exit 2, the file named), never an internal error -----------

@pytest.mark.parametrize("damage", ["events-folder", "summary-folder", "events-not-utf8", "summary-not-utf8"])
@pytest.mark.parametrize("command", ["report", "plot"])
def test_a_damaged_run_folder_is_named_not_a_crash(run_folder: Path, tmp_path: Path, damage: str,
                                                     command: str) -> None:
    name = "events.jsonl" if damage.startswith("events") else "summary.json"
    target = run_folder / name
    target.unlink()
    if damage.endswith("folder"):
        target.mkdir()
        fault = "cannot read file"
    else:
        target.write_bytes(NOT_UTF8)
        fault = "not UTF-8 text"
    extra = ["--kind", "gantt", "--out", tmp_path / "g.png"] if command == "plot" else \
        ["--out", tmp_path / "r.html"]
    result = invoke(command, run_folder, *extra)
    assert result.exit_code == 2, result.output
    one_clear_line(result, str(target), fault)


@pytest.mark.parametrize("name", ["events.jsonl", "outcome.json"])
def test_the_execution_report_names_a_file_that_is_not_utf8(tmp_path: Path, name: str) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "events.jsonl").write_text('{"event": "session.start"}\n')
    (folder / name).write_bytes(NOT_UTF8)
    with pytest.raises(ExecutionReportError, match=rf"{name}: not UTF-8 text"):
        load_execution(folder)


# --- --out paths that cannot be written: one line naming the path, exit 2 -----------------------

def test_report_out_under_a_file_is_named(run_folder: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    result = invoke("report", run_folder, "--out", blocker / "report.html")
    assert result.exit_code == 2, result.output
    one_clear_line(result, str(blocker / "report.html"), "cannot write the report")


def test_plot_out_under_a_file_is_named(run_folder: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    result = invoke("plot", run_folder, "--kind", "gantt", "--out", blocker / "g.png")
    assert result.exit_code == 2, result.output
    one_clear_line(result, str(blocker / "g.png"), "cannot write the plot")


def test_the_execution_report_out_under_a_file_is_named(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "events.jsonl").write_text("")
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    with pytest.raises(ExecutionReportError, match="cannot write the report"):
        write_execution_report(folder, out=blocker / "report.html")


def test_hddl_out_under_a_file_is_named(tmp_path: Path) -> None:
    domain, problem = tmp_path / "d.hddl", tmp_path / "p.hddl"
    domain.write_text(HDDL_DOMAIN)
    problem.write_text(HDDL_PROBLEM)
    assert invoke("hddl", domain, problem, "--out", tmp_path / "ok.yaml").exit_code == 0
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    result = invoke("hddl", domain, problem, "--out", blocker / "d.yaml")
    assert result.exit_code == 2, result.output
    one_clear_line(result, str(blocker / "d.yaml"), "cannot write")


@pytest.mark.parametrize("where", ["under-a-file", "missing-folder"])
def test_generate_out_that_cannot_be_written_is_named(tmp_path: Path, where: str) -> None:
    parent = tmp_path / ("a_file" if where == "under-a-file" else "missing")
    if where == "under-a-file":
        parent.write_text("x")
    out = parent / "p.yaml"
    result = invoke("generate", "--tools", "5", "--out", out)
    assert result.exit_code == 2, result.output
    one_clear_line(result, str(out), "cannot write")


def test_bench_json_in_a_missing_folder_is_refused_before_any_run(tmp_path: Path) -> None:
    out = tmp_path / "missing" / "bench.json"
    result = invoke("bench", "psplib", "--instances", "1", "--schedules", "10", "--json", out)
    usage_error(result, "--json", str(out), "is not a folder")


# --- generate ------------------------------------------------------------------------------------

@pytest.mark.parametrize("tools", ["3", str(defaults.GENERATE_MAX_TOOLS + 1), "999999999999"])
def test_generate_tools_out_of_range_is_refused_naming_it(tools: str) -> None:
    result = invoke("generate", "--tools", tools)
    usage_error(result, "--tools", f"{tools} is not in the range 4<=x<={defaults.GENERATE_MAX_TOOLS}")


def test_a_generated_problem_with_a_newline_in_its_name_still_loads(tmp_path: Path) -> None:
    out = tmp_path / "p.yaml"
    result = invoke("generate", "--tools", "5", "--name", "a\nb", "--out", out)
    assert result.exit_code == 0, result.output
    assert load_problem(out).name == "a\nb"  # the header comment kept to its line


# --- show ----------------------------------------------------------------------------------------

def plan_with(tmp_path: Path, change: str) -> Path:
    doc = yaml.safe_load(REFUND_PLAN.read_text())
    if change == "duplicate-id":
        doc["tasks"].append(dict(doc["tasks"][0]))
    else:  # a cycle: t1 waits for t2, which reads t1
        doc["tasks"][0]["deps"] = ["t2"]
    path = tmp_path / f"{change}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@pytest.mark.parametrize("change, fault", [("duplicate-id", "task id 't1' is used more than once"),
                                           ("cycle", "dependency cycle")])
def test_show_of_an_invalid_plan_exits_1_with_the_errors(tmp_path: Path, change: str, fault: str) -> None:
    path = plan_with(tmp_path, change)
    result = invoke("show", path, "--problem", REFUND, "--width", "80", "--no-color")
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    assert f"{path}: " in result.output and fault in result.output
    assert f"{path}: not valid (1 errors)" in result.output


def test_show_of_a_valid_plan_still_exits_0() -> None:
    result = invoke("show", REFUND_PLAN, "--problem", REFUND, "--width", "80", "--no-color")
    assert result.exit_code == 0, result.output
    assert "not valid" not in result.output


# --- options: non-finite numbers, and --keep ----------------------------------------------------

@pytest.mark.parametrize("args, option", [
    (["run", REFUND, "--max-seconds", "nan"], "--max-seconds"),
    (["run", REFUND, "--max-seconds", "inf"], "--max-seconds"),
    (["run", REFUND, "--eval-timeout", "inf"], "--eval-timeout"),
    (["run", REFUND, "--eval-timeout", "nan"], "--eval-timeout"),
    (["run", REFUND, "--llm-ratio", "nan"], "--llm-ratio"),
    (["run", REFUND, "--llm-timeout", "nan"], "--llm-timeout"),
    (["bound", REFUND, "--mip-seconds", "nan"], "--mip-seconds"),
    (["bound", REFUND, "--path-seconds", "inf"], "--path-seconds"),
    (["execute", REFUND_PLAN, "--problem", REFUND, "--simulate", "--wait", "nan"], "--wait"),
    (["execute", REFUND_PLAN, "--problem", REFUND, "--simulate", "--timeout", "inf"], "--timeout"),
    (["plan", "--problem", REFUND, "--timeout", "nan"], "--timeout"),
    (["bench", "psplib", "--seconds", "nan"], "--seconds"),
    (["author", REFUND, "--out", "x.yaml", "--llm-base-url", "http://127.0.0.1:9/v1", "--llm-model", "m",
      "--llm-temperature", "nan"], "--llm-temperature"),
])
def test_a_non_finite_number_option_is_refused_naming_it(tmp_path: Path, args: list[object],
                                                          option: str) -> None:
    result = invoke(*args, *(["--out", tmp_path / "out"] if args[0] in ("run", "execute", "plan") else []))
    usage_error(result, option, "is not a finite number")
    assert not (tmp_path / "out").exists()


def test_keep_not_below_population_is_refused_naming_both(tmp_path: Path) -> None:
    result = invoke("run", REFUND, "--keep", "4", "--population", "4", "--out", tmp_path / "run")
    usage_error(result, "--keep", "--population")
    assert not (tmp_path / "run").exists()


# --- a person's part: reject, answer -------------------------------------------------------------

@pytest.mark.parametrize("note", ["", "   "])
def test_reject_with_a_blank_note_is_refused_and_nothing_is_decided(waiting_copy: Path, note: str) -> None:
    result = invoke("reject", waiting_copy, "t6", "--note", note)
    usage_error(result, "--note", "the note is empty")
    pending = invoke("pending", waiting_copy, "--json")
    assert pending.exit_code == 0, pending.output
    assert [item["task"] for item in json.loads(pending.output)] == ["t6"]


def test_answer_output_that_is_a_folder_is_named(waiting_copy: Path, tmp_path: Path) -> None:
    folder = tmp_path / "answers"
    folder.mkdir()
    result = invoke("answer", waiting_copy, "t6", "--output", folder)
    assert result.exit_code == 2, result.output
    one_clear_line(result, f"--output {folder}", "a folder")


def test_answer_output_that_is_not_utf8_is_named(waiting_copy: Path, tmp_path: Path) -> None:
    path = tmp_path / "answer.json"
    path.write_bytes(b"\xff\xfe{}")
    result = invoke("answer", waiting_copy, "t6", "--output", path)
    assert result.exit_code == 2, result.output
    one_clear_line(result, f"--output {path}", "not UTF-8 text")


# --- execute --resume onto a folder where a file belongs ----------------------------------------

@pytest.mark.parametrize("name", ["events.jsonl", "outcome.json"])
def test_resume_names_a_folder_where_a_run_file_belongs(waiting_copy: Path, name: str) -> None:
    target = waiting_copy / name
    target.unlink()
    target.mkdir()
    result = invoke("execute", "--resume", waiting_copy, "--no-report")
    assert result.exit_code == 2, result.output
    one_clear_line(result, str(target), "a folder where the run's file belongs")


# --- --llm-prompt-dir: the user's templates are input, named when bad ---------------------------

LLM_RUN = ["--operator", "llm", "--llm-base-url", "http://127.0.0.1:9/v1", "--llm-model", "m",
           "--llm-timeout", "1", "--llm-max-calls", "1", "--generations", "1", "--population", "4",
           "--keep", "2", "--jobs", "1", "--no-report"]


@pytest.mark.parametrize("content, fault", [(b"\xff\xfe You are", "not UTF-8 text"),
                                            (b"You are {{role}}.", "unknown placeholder(s) role")])
def test_a_bad_prompt_template_is_named_before_the_run(tmp_path: Path, content: bytes, fault: str) -> None:
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    (prompts / "system.txt").write_bytes(content)
    result = invoke("run", REFUND, *LLM_RUN, "--llm-prompt-dir", prompts, "--out", tmp_path / "run")
    assert result.exit_code == 2, result.output
    one_clear_line(result, str(prompts / "system.txt"), fault)
    assert not (tmp_path / "run").exists()


# --- a damaged journal: bad input naming the file and the table, never an internal error -------

@pytest.mark.parametrize("fault, sql", [
    ("meta: a value is not JSON", "UPDATE meta SET value = '{bad' WHERE key = 'problem'"),
    ("its Revised record is not JSON", "UPDATE history SET body = '{bad' WHERE kind = 'Revised'"),
    ("its Settled record is not JSON", "UPDATE history SET body = '{bad' WHERE kind = 'Settled'"),
    ("its Asked record is not JSON", "UPDATE history SET body = '{bad' WHERE kind = 'Asked'"),
])
@pytest.mark.parametrize("command", [["pending"], ["approve", "t6"], ["execute", "--resume"]])
def test_a_damaged_journal_value_is_named(waiting_copy: Path, fault: str, sql: str,
                                          command: list[str]) -> None:
    """The history is what a resume replays (the tables are its projections): damage there, or
    in the run's meta, is bad input naming the file and the row."""
    journal = waiting_copy / "journal.sqlite"
    with sqlite3.connect(journal) as db:
        db.execute(sql)
    args = [*command, waiting_copy] if command[0] == "execute" else [command[0], waiting_copy, *command[1:]]
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    one_clear_line(result, str(journal), fault, "the journal is damaged")
