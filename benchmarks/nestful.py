"""NESTFUL through ``evolve import-tools``: does the imported catalog's dataflow give the gold plan?

NESTFUL (IBM Research, Apache-2.0; ``pip install --no-deps nestful-wrapper`` ships its v1 data
offline) pairs a user request with the gold sequence of nested API calls that answers it, each
argument either a literal or a reference ``$var1.field$`` to an earlier call's output. This
script, for each sample:

1. converts the set's tool specs to an MCP ``tools/list`` result (``query_parameters`` as the
   input schema, ``output_parameters`` as the output schema) and the gold sequence to a recorded
   session: NESTFUL records no results, so each referenced field is given a unique placeholder
   value, and the reference becomes that value, which is exactly the equality the trace's
   dataflow detection looks for; the request's answer (``var_result``) names the goal;
2. imports them with :func:`evolve.problems.toolspec.import_tools` (the whole set's catalog, so
   the other tools of the set are there to be picked wrongly), the gold sequence becoming the
   reference plan, which must pass ``validate``;
3. builds evolve's plan (the greedy tool choice that seeds ``evolve run``; with ``--generations
   N`` a real ``run_search`` of N generations) and validates it;
4. compares tasks, makespan (unit durations: the longest chain of calls) and tool set with the
   gold sequence, and prints the counts matched / total.

It checks the import and the dataflow model, not the search: a problem this small has one
sensible plan once the dataflow is right. Mismatches are counted by cause (a tool the gold calls
twice is one task in a catalog plan, a fact has one value; a reference inside a longer string is
not an equal value, so its flow is not seen).

    python benchmarks/nestful.py                 # every v1 set, greedy plan
    python benchmarks/nestful.py --set glaive --generations 3
    python benchmarks/nestful.py --vendor tests/data/nestful --set glaive --count 12

Without the package the script says so and exits 0 (skipped).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evolve import EvolveError, Plan, Problem, SearchOptions, run_search, schedule, validate
from evolve.problems.toolspec import Imported, import_tools
from evolve.search.toolchoice import ToolChoice

SETS = {
    "glaive": "non-executable/non-executable-glaive",
    "sgd": "non-executable/non-executable-sgd",
    "executable": "executable/executable",
}
"""NESTFUL v1's sets, as ``data_v1/<path>-spec.json`` and ``-data.json``."""

REF = re.compile(r"^\$(var\d+)(?:\.([^$]+))?\$$")
EMBEDDED = re.compile(r"\$var\d+(?:\.[^$]+)?\$")
ANSWER = "var_result"
"""NESTFUL's pseudo-call whose arguments are the request's answer."""

JSON_TYPES = {"string", "number", "integer", "boolean", "array", "object", "null"}


def data_root() -> Path | None:
    """Where the installed package keeps its v1 data, or ``None`` when it is not installed."""
    found = importlib.util.find_spec("data_v1")
    if found is None or not found.submodule_search_locations:
        return None
    return Path(next(iter(found.submodule_search_locations)))


def mcp_spec(tools: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """NESTFUL tool specs as an MCP ``tools/list`` result."""
    out = []
    for tool in tools:
        params = tool.get("query_parameters") or {}
        props = {name: schema_of(p) for name, p in params.items()}
        required = [name for name, p in params.items() if isinstance(p, Mapping) and p.get("required")]
        entry: dict[str, Any] = {"name": tool["name"], "description": tool.get("description", ""),
                                 "inputSchema": {"type": "object", "properties": props, "required": required}}
        outputs = tool.get("output_parameters") or {}
        if outputs:
            entry["outputSchema"] = {"type": "object",
                                     "properties": {name: schema_of(p) for name, p in outputs.items()}}
        out.append(entry)
    return {"tools": out}


def schema_of(param: object) -> dict[str, Any]:
    if not isinstance(param, Mapping):
        return {}
    schema: dict[str, Any] = {}
    if param.get("type") in JSON_TYPES:
        schema["type"] = param["type"]
    if isinstance(param.get("description"), str):
        schema["description"] = param["description"]
    return schema


@dataclass(frozen=True)
class Sample:
    """One converted sample: the session, the goal and the gold sequence."""

    id: str
    query: str
    trace: list[dict[str, Any]]
    goal: list[str]
    gold: list[dict[str, Any]]
    """The gold calls: ``{label, name, reads: [labels of the calls it references]}``."""
    embedded: bool
    """Whether some reference sits inside a longer string (its flow cannot be seen by equality)."""
    flaw: str = ""
    """What is wrong with the gold sample itself (a label given twice, a reference to no call or
    not closed by ``$``), or ``""``."""


def convert(sample: Mapping[str, Any], sample_id: str) -> Sample:
    """A NESTFUL sample as a recorded session with placeholder results."""
    calls = [c for c in sample["output"] if c.get("name") != ANSWER]
    answer = next((c for c in sample["output"] if c.get("name") == ANSWER), None)
    labels = {c.get("label"): i for i, c in enumerate(calls)}
    results: list[dict[str, Any]] = [{} for _ in calls]
    refs = [v for c in sample["output"] for v in (c.get("arguments") or {}).values()
            if isinstance(v, str) and REF.match(v)]
    for value in refs:
        var, path = REF.match(value).groups()  # type: ignore[union-attr]
        if var in labels and path:
            put(results[labels[var]], path.split("."), f"<{var}.{path}>")
    for i, result in enumerate(results):
        if not result:
            result["value"] = f"<{calls[i].get('label', i)}>"
    trace, gold, embedded = [], [], False
    for i, call in enumerate(calls):
        arguments, reads = {}, []
        for name, value in (call.get("arguments") or {}).items():
            match = REF.match(value) if isinstance(value, str) else None
            if match and match.group(1) in labels:
                var, path = match.groups()
                arguments[name] = get(results[labels[var]], path.split(".")) if path else results[labels[var]]
                reads.append(var)
            else:
                arguments[name] = value
                if isinstance(value, str) and EMBEDDED.search(value):
                    embedded = True
                    reads += [m.split(".")[0].strip("$") for m in EMBEDDED.findall(value)]
        trace.append({"name": call["name"], "arguments": arguments, "result": results[i]})
        gold.append({"label": call.get("label", f"var{i + 1}"), "name": call["name"],
                     "reads": sorted(set(r for r in reads if r in labels))})
    given = [c.get("label") for c in calls]
    flaws = [f"label {label} given twice" for label in dict.fromkeys(given) if given.count(label) > 1]
    for value in (v for c in sample["output"] for v in (c.get("arguments") or {}).values()):
        if isinstance(value, str) and value.startswith("$var"):
            match = REF.match(value)
            if match is None and not EMBEDDED.search(value):
                flaws.append(f"reference {value!r} not closed by '$'")
            elif match is not None and match.group(1) not in labels:
                flaws.append(f"reference {value!r} to no call")
    goal: list[str] = []
    if answer is not None:
        for value in (answer.get("arguments") or {}).values():
            match = REF.match(value) if isinstance(value, str) else None
            if match and match.group(1) in labels:
                goal.append(calls[labels[match.group(1)]]["name"])
    return Sample(id=sample_id, query=sample.get("input", ""), trace=trace,
                  goal=list(dict.fromkeys(goal)), gold=gold, embedded=embedded, flaw="; ".join(flaws))


def put(doc: dict[str, Any], path: list[str], value: object) -> None:
    for key in path[:-1]:
        nxt = doc.get(key)
        if not isinstance(nxt, dict):
            nxt = doc[key] = {}
        doc = nxt
    if not isinstance(doc.get(path[-1]), dict):
        doc[path[-1]] = value


def get(doc: Any, path: list[str]) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def gold_makespan(gold: Sequence[Mapping[str, Any]], duration: float) -> float:
    """The longest chain of the gold sequence's references, every call ``duration`` long."""
    finish: dict[str, float] = {}
    for call in gold:
        finish[call["label"]] = max((finish[r] for r in call["reads"] if r in finish), default=0.0) + duration
    return max(finish.values(), default=0.0)


def greedy_plan(problem: Problem) -> Plan | None:
    """The plan ``evolve run`` starts from: the greedy earliest-finish tool choice."""
    choice = ToolChoice(problem)
    return choice.plan_of(choice.base)


def searched_plan(problem: Problem, generations: int, folder: Path) -> Plan:
    options = SearchOptions(population=8, keep=4, generations=generations, seed=1, jobs=1)
    return run_search(problem, options=options, out_dir=folder, overwrite=True).result.best.plan


@dataclass(frozen=True)
class Outcome:
    """What one sample gave: ``matched`` when tasks, makespan and tool set all equal the gold."""

    id: str
    imported: bool
    reference_valid: bool
    plan_valid: bool
    tasks: bool
    makespan: bool
    tools: bool
    cause: str

    @property
    def matched(self) -> bool:
        return self.plan_valid and self.tasks and self.makespan and self.tools


def compare(sample: Sample, spec_path: Path, work: Path, generations: int = 0) -> Outcome:
    """Import, plan, validate and compare one sample (files written under ``work``)."""
    trace_path = work / f"{sample.id}.trace.json"
    trace_path.write_text(json.dumps(sample.trace), encoding="utf-8")
    try:
        imported: Imported = import_tools(spec_path, trace_path=trace_path, goal=sample.goal)
    except EvolveError as exc:
        return Outcome(sample.id, False, False, False, False, False, False, f"import: {exc}")
    problem = imported.problem
    reference = imported.reference
    ref_ok = reference is not None and not validate(problem, reference)
    plan = greedy_plan(problem) if generations <= 0 else searched_plan(problem, generations, work / sample.id)
    if plan is None or validate(problem, plan):
        return Outcome(sample.id, True, ref_ok, False, False, False, False, "no valid plan")
    gold_tools = {imported.tool_names[c["name"]] for c in sample.gold}
    tools = {t.tool for t in plan.tasks}
    unit = min((t.duration for t in problem.tools.values()), default=1.0)
    tasks_ok = len(plan.tasks) == len(sample.gold)
    span_ok = schedule(problem, plan).makespan == gold_makespan(sample.gold, unit)
    tools_ok = tools == gold_tools
    cause = ""
    if not (tasks_ok and span_ok and tools_ok):
        names = [c["name"] for c in sample.gold]
        if sample.flaw:
            cause = f"the gold sample is inconsistent ({sample.flaw})"
        elif len(set(names)) < len(names):
            cause = "the gold calls one tool twice (a catalog plan runs it once: a fact has one value)"
        elif sample.embedded:
            cause = "a reference inside a longer string (no equal value, so no flow seen)"
        elif not tools <= gold_tools:
            cause = f"other tools chosen: {', '.join(sorted(tools - gold_tools))}"
        else:
            cause = f"gold calls left out: {', '.join(sorted(gold_tools - tools))}"
    return Outcome(sample.id, True, ref_ok, True, tasks_ok, span_ok, tools_ok, cause)


def load_set(root: Path, name: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    base = root / SETS[name]
    spec = json.loads(Path(f"{base}-spec.json").read_text(encoding="utf-8"))
    data = json.loads(Path(f"{base}-data.json").read_text(encoding="utf-8"))
    return spec, data


def run_set(name: str, spec: list[dict[str, Any]], samples: list[Sample], generations: int,
            verbose: bool) -> list[Outcome]:
    with tempfile.TemporaryDirectory(prefix="nestful-") as tmp:
        work = Path(tmp)
        spec_path = work / f"{name}-tools.json"
        spec_path.write_text(json.dumps(mcp_spec(spec)), encoding="utf-8")
        outcomes = [compare(s, spec_path, work, generations) for s in samples]
    if verbose:
        for o in outcomes:
            if not o.matched:
                print(f"  {o.id}: {o.cause}")
    return outcomes


def report(name: str, outcomes: Sequence[Outcome], seconds: float) -> None:
    n = len(outcomes)

    def count(attr: str) -> str:
        return f"{sum(bool(getattr(o, attr)) for o in outcomes)}/{n}"

    print(f"{name:<11} imported {count('imported'):>8}  gold plan valid {count('reference_valid'):>8}  "
          f"plan valid {count('plan_valid'):>8}  tasks {count('tasks'):>8}  makespan {count('makespan'):>8}  "
          f"tools {count('tools'):>8}  matched {count('matched'):>8}  ({seconds:.1f} s)")
    causes = Counter(o.cause.split(" (")[0].split(":")[0] for o in outcomes if not o.matched)
    for cause, k in causes.most_common():
        print(f"{'':<11} {k:>4} not matched: {cause}")


def vendor(folder: Path, spec: list[dict[str, Any]], samples: list[Sample], source: str) -> None:
    """Write a converted sample for the tests: the MCP spec of the tools the samples call (and
    no other), the samples, and the notice."""
    used = {c["name"] for s in samples for c in s.gold}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tools.json").write_text(
        json.dumps(mcp_spec([t for t in spec if t["name"] in used]), indent=1) + "\n", encoding="utf-8")
    (folder / "samples.json").write_text(json.dumps(
        [{"id": s.id, "query": s.query, "trace": s.trace, "goal": s.goal, "gold": s.gold,
          "embedded": s.embedded, "flaw": s.flaw} for s in samples], indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(samples)} samples of {source} and {len(used)} tools to {folder}/")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", choices=[*SETS, "all"], default="all")
    parser.add_argument("--limit", type=int, default=None, help="First N samples of each set.")
    parser.add_argument("--generations", type=int, default=0,
                        help="Run the search for this many generations instead of the greedy plan only.")
    parser.add_argument("--verbose", action="store_true", help="Print each sample not matched.")
    parser.add_argument("--vendor", type=Path, default=None,
                        help="Write converted samples of the set (--set, not all) to this folder.")
    parser.add_argument("--count", type=int, default=12, help="Samples to vendor.")
    args = parser.parse_args(argv)
    root = data_root()
    if root is None:
        print("skipped: nestful-wrapper is not installed (pip install --no-deps nestful-wrapper)")
        return 0
    names = list(SETS) if args.set == "all" else [args.set]
    total: list[Outcome] = []
    for name in names:
        spec, data = load_set(root, name)
        samples = [convert(s, f"{name}-{i}") for i, s in enumerate(data)][: args.limit]
        if args.vendor is not None:
            vendor(args.vendor, spec, samples[: args.count], f"NESTFUL v1 {SETS[name]}")
            return 0
        began = time.perf_counter()
        outcomes = run_set(name, spec, samples, args.generations, args.verbose)
        report(name, outcomes, time.perf_counter() - began)
        total += outcomes
    if len(names) > 1:
        report("all", total, 0.0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
