"""The sources' last rows (issue 48): a replan's audit trail and the stale patch, duplicate writes
prevented by a replan, the template as the safety net, resource ids checked against the run's
facts, and the sources' names (HTNPlanner, cached_methods, the evidence plan, typed plans)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from evolve.cli.main import cli
from evolve.execute import ExecuteOptions, start_run
from evolve.execute.replan import Proposal, Situation
from evolve.llm.testing import Script, Scripted, ScriptedServer
from evolve.model.errors import InputError
from evolve.model.patch import apply_patch
from evolve.model.plan import Plan, Task
from evolve.model.plan_file import load_plan, plan_from_dict
from evolve.model.problem_file import problem_from_dict, read_problem
from evolve.model.validate import validate

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


# -- the refund example: the audit trail, and the duplicate write it prevented ------------------


@pytest.fixture(scope="module")
def refund_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("refund") / "run"
    result = CliRunner().invoke(cli, [
        "execute", str(EXAMPLES / "refund_plan.yaml"), "--problem", str(EXAMPLES / "refund.yaml"),
        "--tools", f"{EXAMPLES / 'refund_tools.py'}:TOOLS", "--out", str(folder)])
    assert result.exit_code == 0, result.output
    return folder


def test_the_replan_records_its_base_revision_and_its_evidence(refund_run: Path) -> None:
    outcome = json.loads((refund_run / "outcome.json").read_text())
    [revision] = outcome["revisions"]
    assert revision["base_version"] == 0
    evidence = revision["evidence"]
    assert (evidence["task"], evidence["tool"]) == ("t7", "payments.issue_refund")
    assert evidence["assumption"] == "len($t2.refunds) == 0"
    [refund] = evidence["observed"]["$t2.refunds"]  # the refund already issued, as observed
    assert (refund["refund_id"], refund["status"]) == ("rf_9001", "ISSUED")
    db = sqlite3.connect(f"file:{refund_run / 'journal.sqlite'}?mode=ro", uri=True)
    try:
        patch = json.loads(db.execute("SELECT patch FROM revisions WHERE revision = 1").fetchone()[0])
    finally:
        db.close()
    assert patch["base_version"] == 0 and patch["evidence"] == evidence
    html = (refund_run / "report.html").read_text()
    assert "patch of revision 0" in html and "observed $t2.refunds" in html and "rf_9001" in html


def test_a_write_invalidated_before_it_ran_counts_as_prevented(refund_run: Path) -> None:
    outcome = json.loads((refund_run / "outcome.json").read_text())
    assert outcome["tasks"]["t7"]["status"] == "invalidated" and outcome["calls_by_risk"]["write"] == 0
    assert outcome["duplicate_writes_prevented"] == 1  # the second refund, as the sources count it


# -- the stale patch -----------------------------------------------------------------------------

CHAIN: dict[str, Any] = {
    "name": "chain",
    "initial": ["x"],
    "criteria": ["c"],
    "tools": {
        "make_a": {"duration": 10, "inputs": ["x"], "outputs": ["a"]},
        "make_a_slowly": {"duration": 50, "inputs": ["x"], "outputs": ["a"]},
        "make_a_at_last": {"duration": 90, "inputs": ["x"], "outputs": ["a"]},
        "make_b": {"duration": 10, "inputs": ["a"], "outputs": ["b"]},
        "make_c": {"duration": 10, "inputs": ["b"], "outputs": ["c"]},
        "check_a": {"duration": 5, "inputs": ["a"], "outputs": ["checked"]},
    },
}


def chain(first: str, *extra: dict[str, Any]) -> dict[str, Any]:
    return {"tasks": [
        {"id": "t1", "tool": first, "inputs": {"x": "$x"}, "on_failure": "replan"},
        {"id": "t2", "tool": "make_b", "deps": ["t1"], "inputs": {"a": "$t1.a"}},
        {"id": "t3", "tool": "make_c", "deps": ["t2"], "inputs": {"b": "$t2.b"}},
        *extra]}


class Remembering:
    """Proposes a plan made once against revision 0, every time: after the first replan the
    plan it edited is gone, so its second proposal is a stale patch."""

    name = "remembering"

    def __init__(self) -> None:
        self.tools = iter(["make_a_slowly", "make_a_at_last"])

    def propose(self, situation: Situation, revision: int, seed: int, folder: Path) -> Proposal | None:
        return Proposal(plan=plan_from_dict(chain(next(self.tools))), source=self.name, base_version=0)


def run(tmp_path: Path, problem: Mapping[str, Any], plan: Mapping[str, Any], fail: Mapping[str, float],
        replanner: Any) -> dict[str, Any]:
    executor = start_run(problem_from_dict(dict(problem)), plan_from_dict(dict(plan)), tmp_path / "run",
                         plan_source="plan", tools_spec=None, simulate=True, fail_rates=dict(fail),
                         options=ExecuteOptions(), replanner=replanner)
    return executor.run()


def test_a_patch_whose_base_is_not_the_current_revision_is_refused(tmp_path: Path) -> None:
    outcome = run(tmp_path, CHAIN, chain("make_a"), {"make_a": 1.0, "make_a_slowly": 1.0}, Remembering())
    [first] = outcome["revisions"]  # the first patch was made against revision 0 and applied
    assert first["base_version"] == 0
    assert outcome["reason"] == "no_plan"
    assert outcome["message"].startswith("stale patch: written for revision 0, the plan is at revision 1")
    assert outcome["tasks"].keys() == {"t1", "t2", "t3", "t4", "t5", "t6"}  # nothing of the stale one


def test_apply_patch_refuses_a_stale_patch_and_reads_the_audit_keys() -> None:
    plan = Plan(tasks=(Task("t1", "make_a", inputs={"x": "$x"}), Task("t2", "make_b", deps=("t1",))))
    patch = {"base_version": 1, "remove": ["t2"], "reason": "t2 is not needed",
             "evidence": ["tr-8472-03"]}
    assert apply_patch(plan, patch, revision=1).ids() == ["t1"]
    assert apply_patch(plan, patch).ids() == ["t1"]  # a caller that knows no revision
    with pytest.raises(InputError, match="stale patch: written for revision 1, the plan is at revision 2"):
        apply_patch(plan, patch, revision=2)


# -- the template as the safety net -------------------------------------------------------------


class NoPlan:
    name = "none"

    def propose(self, situation: Situation, revision: int, seed: int, folder: Path) -> Proposal | None:
        return None


TEMPLATED = {**CHAIN, "template": chain("make_a_slowly")}


def test_the_template_stands_in_when_the_replanner_finds_no_plan(tmp_path: Path) -> None:
    check = {"id": "t4", "tool": "check_a", "deps": ["t1"], "inputs": {"a": "$t1.a"}, "on_failure": "replan"}
    plan = chain("make_a_slowly", check)
    outcome = run(tmp_path, TEMPLATED, plan, {"check_a": 1.0}, NoPlan())
    assert (outcome["status"], outcome["reason"]) == ("completed", "goal_met")
    [fallback] = outcome["fallbacks"]
    assert (fallback["revision"], fallback["reason"]) == (1, "template_fallback")
    assert "the none replanner found no valid, complete plan" in fallback["message"]
    assert outcome["tasks"]["t4"]["status"] == "failed" and outcome["tasks"]["t3"]["status"] == "done"
    evidence = outcome["revisions"][0]["evidence"]
    assert (evidence["task"], evidence["error"]) == ("t4", "simulated failure of check_a (rate 1)")
    assert "$t1.a" in evidence["observed"]  # the input the failed call read
    assert outcome["calls"] == 4  # the done work (t1, t2) was not run again

    bare = run(tmp_path / "bare", CHAIN, plan, {"check_a": 1.0}, NoPlan())  # no template: as before
    assert bare["reason"] == "no_plan" and bare["fallbacks"] == []


def test_the_agent_falls_back_to_the_template_for_its_first_plan(tmp_path: Path) -> None:
    from evolve import PlanExecuteAgent

    def tool(output: str) -> Any:
        return lambda inputs, call: {output: f"{output}!"}

    tools = {name: tool(spec["outputs"][0]) for name, spec in CHAIN["tools"].items()}
    asked: list[int] = []

    def planner(goal: str, history: Any, error: Any) -> list[dict[str, Any]]:
        asked.append(1)
        return [{"id": "s1", "tool": "make_c", "inputs": {"b": "$b"}}]  # never valid: no $b

    agent = PlanExecuteAgent(problem_from_dict(TEMPLATED), tools, planner=planner, out=tmp_path / "agent",
                             facts={"x": 1}, report=False)
    result = agent.run()
    assert result.reason == "goal_met" and len(asked) == agent.attempts
    [fallback] = result.outcome["fallbacks"]
    assert (fallback["revision"], fallback["reason"]) == (0, "template_fallback")
    assert fallback["message"].startswith(f"no valid plan after {agent.attempts} answer(s)")


# -- resource ids against the request ----------------------------------------------------------


def test_a_literal_resource_id_must_be_the_runs() -> None:
    problem = read_problem(EXAMPLES / "refund.yaml")
    plan = Plan(tasks=(Task("t1", "orders.get", inputs={"order_id": 8473}),))
    found = {e.rule: e for e in validate(problem, plan, {"order_id": 8472, "complaint": "charged twice"})}
    assert found["resource-mismatch"].task == "t1"
    assert "'order_id' is 8473, but this run is for order_id 8472" in found["resource-mismatch"].message
    same = Plan(tasks=(Task("t1", "orders.get", inputs={"order_id": "8472"}),))
    assert "resource-mismatch" not in {e.rule for e in validate(problem, same, {"order_id": 8472})}
    assert "resource-mismatch" not in {e.rule for e in validate(problem, plan)}  # no run: not judged
    referenced = load_plan(EXAMPLES / "refund_plan.yaml")
    assert validate(problem, referenced, {"order_id": 8472}) == []  # $order_id is always the run's


def test_evolve_validate_checks_the_facts_and_writes_the_evidence_plan(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"tasks": [{"id": "t1", "tool": "orders.get", "inputs": {"order_id": 8473}}]}))
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["validate", str(plan), "--problem", str(EXAMPLES / "refund.yaml"),
                                      "--fact", "order_id=8472", "--json", "--evidence-out"])
    assert result.exit_code == 1, result.output
    assert "resource-mismatch" in {e["rule"] for e in json.loads(result.output)["errors"]}
    written = json.loads((tmp_path / "outputs" / "evidence-plan.json").read_text())
    assert written["status"] == "blocked" and written["items"][0]["id"] == "t1"
    assert "resource-mismatch" in {e["rule"] for e in written["errors"]}

    out = tmp_path / "ready.json"
    result = CliRunner().invoke(cli, ["validate", str(EXAMPLES / "refund_plan.yaml"), "--problem",
                                      str(EXAMPLES / "refund.yaml"), "--evidence-out", str(out)])
    assert result.exit_code == 0, result.output
    ready = json.loads(out.read_text())
    assert ready["status"] == "ready" and ready["errors"] == []
    waves = ready["waves"]
    assert waves[0] == ["t1", "t4"] and waves[-1] == ["t9"]
    t2 = next(item for item in ready["items"] if item["id"] == "t2")
    assert (t2["depends_on"], t2["wave"], t2["change"]) == (["t1"], 2, "payments.lookup")


# -- the sources' names -----------------------------------------------------------------------


def test_a_typed_plan_with_integer_step_ids_reads_as_t_n() -> None:
    typed = {"goal": "resolve the duplicate charge", "steps": [
        {"id": 1, "description": "fetch the order", "tool": "orders.get", "args": {"order_id": "$order_id"}},
        {"id": 2, "description": "look up the payments", "tool": "payments.lookup",
         "args": {"order": "$1.order"}, "depends_on": [1]}]}
    plan = plan_from_dict(typed)
    assert plan.ids() == ["t1", "t2"]
    assert plan.tasks[1].deps == ("t1",) and plan.tasks[1].inputs == {"order": "$t1.order"}
    assert plan.tasks[0].name == "fetch the order"
    assert validate(read_problem(EXAMPLES / "refund.yaml"), plan) == []
    numbered = plan_from_dict({"tasks": [{"id": 1, "tool": "orders.get"},
                                         {"id": 2, "tool": "x", "deps": [1]}]})
    assert numbered.ids() == ["t1", "t2"] and numbered.tasks[1].deps == ("t1",)
    with pytest.raises(InputError, match="not both"):
        plan_from_dict({"tasks": [], "steps": []})


def test_htn_planner_and_its_cached_methods() -> None:
    from evolve import HTNPlanner
    from evolve.problems.htn import Decomposition, Planner, domain_from_dict
    from evolve.problems.htn.fallback import FallbackReply

    assert HTNPlanner is Planner
    domain, _ = domain_from_dict({"name": "deliver", "htn": {
        "state": {"ordered": True}, "goal": "deliver",
        "operators": {
            "buy": {"duration": 30, "effects": {"set": {"materials": True}}},
            "assemble": {"duration": 50, "pre": [{"has": "materials"}],
                         "effects": {"set": {"prepared": True}}},
            "ship": {"duration": 20, "pre": [{"has": "prepared"}], "effects": {"set": {"shipped": True}}}},
        "methods": {"deliver_m": {"task": "deliver", "subtasks": ["prepare", "ship"]}},
        "tasks": {"prepare": {"achieves": [{"has": "prepared"}]}}}})

    class Model:
        name = "model"
        calls = 0

        def decompose(self, task: str, state: Any, operators: Any, tasks: Any) -> FallbackReply:
            self.calls += 1
            return FallbackReply(("buy", "assemble"))

    model = Model()
    planner = HTNPlanner(domain, model)
    assert planner.cached_methods == ()
    first = planner.plan()
    assert isinstance(first, Decomposition)
    assert [s.operator for s in first.steps] == ["buy", "assemble", "ship"]
    assert [m.name for m in planner.cached_methods] == ["prepare_learned1"] and model.calls == 1
    assert isinstance(planner.plan(), Decomposition) and model.calls == 1  # kept for the next call


# -- the model switches and the two-field decision ----------------------------------------------

HTN = EXAMPLES / "htn"
SWITCHES = {"chat_template_kwargs": {"enable_thinking": False}, "reasoning_effort": "low"}


def test_the_extra_body_reaches_the_decision_and_the_argument_filling(
        serve: Callable[[Script], ScriptedServer], tmp_path: Path) -> None:
    from examples.htn.scripted import small_model

    server = serve(small_model)
    result = CliRunner().invoke(cli, [
        "execute", str(HTN / "k8s_medic.yaml"), "--tools", "examples.htn.scripted:TOOLS",
        "--llm-base-url", server.url, "--llm-model", "small", "--out", str(tmp_path / "run"), "--no-report",
        "--llm-extra-body", json.dumps(SWITCHES)], env={"XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert result.exit_code == 0, result.output
    assert len(server.requests) == 2  # the hoisted decision and the incident note
    for request in server.requests:
        assert request["chat_template_kwargs"] == {"enable_thinking": False}
        assert request["reasoning_effort"] == "low" and request["temperature"] == 0.0

    again = CliRunner().invoke(cli, [  # from the environment; a switch changes the cache key
        "execute", str(HTN / "k8s_medic.yaml"), "--tools", "examples.htn.scripted:TOOLS",
        "--llm-base-url", server.url, "--llm-model", "small", "--out", str(tmp_path / "again"),
        "--no-report"], env={"XDG_CACHE_HOME": str(tmp_path / "cache"),
                             "EVOLVE_LLM_EXTRA_BODY": '{"enable_thinking": false}'})
    assert again.exit_code == 0, again.output
    assert len(server.requests) == 4 and all(r["enable_thinking"] is False for r in server.requests[2:])


@pytest.mark.parametrize(("value", "why"), [
    ("{not json", "not JSON"), ("[1]", "expected a JSON object, got list"),
    ('{"model": "other"}', "may not set model")])
def test_a_bad_extra_body_is_one_line(value: str, why: str, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["execute", str(HTN / "k8s_medic.yaml"), "--simulate",
                                      "--out", str(tmp_path / "run"), "--llm-extra-body", value])
    assert result.exit_code == 2 and "--llm-extra-body" in result.output and why in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize(("reply", "refused"), [
    ('{"action": "set-image", "image": "nginx:1.27"}', None),
    ('{"action": "set-image"}', "schema"),  # the image is missing: the whole answer is refused
    ('{"action": "set-image", "image": 127}', "schema"),
    ('{"action": "scale-up", "image": "nginx:1.27"}', "enum")])
def test_a_decision_of_two_fields_is_judged_as_one_object(
        reply: str, refused: str | None, serve: Callable[[Script], ScriptedServer]) -> None:
    from evolve.llm.client import ChatClient
    from evolve.llm.decide import Decider
    from evolve.problems import load_problem
    from evolve.problems.htn import HtnProblem

    problem = load_problem(HTN / "k8s_medic.yaml")
    assert isinstance(problem, HtnProblem)
    server = serve(lambda body, seen: Scripted(reply))
    with Decider(ChatClient(server.url, "small", timeout=10)) as decider:
        decided = decider.decide(problem.htn())
    [record] = decided.records
    prompt = server.requests[0]["messages"][1]["content"]
    assert 'Answer {"action": <value>, "image": <value>} with action one of' in prompt
    schema = server.requests[0]["response_format"]
    assert schema == {"type": "json_object"}
    if refused is None:
        assert (record["value"], record["fields"], record["source"]) == ("set-image", {"image": "nginx:1.27"},
                                                                        "model")
        assert decided.domain.state["image"] == "nginx:1.27"
    else:
        assert (record["value"], record["fields"], record["refused"]) == ("restore", {"image": None}, refused)
        assert decided.domain.state["action"] == "restore" and decided.domain.state["image"] is None
