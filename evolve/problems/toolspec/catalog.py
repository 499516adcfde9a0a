"""From tool specs (and a recorded session) to an evolve problem, every guess said.

evolve's catalog is a dataflow model: a tool reads facts and makes facts, and a fact has one
name however many tools make it. A spec gives parameter names and, at best, output property
names; this module decides which are the same fact:

- a tool's inputs are its required parameters, each a fact named like the parameter;
- its outputs are the properties of its declared output schema, and ``<tool>_result``, its
  whole result: a fact only that tool makes, so a goal naming a tool asks for that tool's
  answer, not for facts another tool could make as well;
- a recorded session (:mod:`evolve.problems.toolspec.trace`) feeds a parameter from the output
  its value came from (``calculate_pace.distance`` reads ``calculate_route``'s ``distance``;
  ``flight_search.originSkyId`` reads ``search_airport``'s ``skyId``: the catalog's
  ``inputs: {originSkyId: skyId}``, so the tool is still called with its own parameter names),
  adds outputs it saw used that the spec did not declare, and keeps the optional arguments it
  gave as literals (``arguments: {lines: 500}``);
- without a session, an input is made by every tool with an output of the same name.

What a run knows at start and must achieve come from the caller, or from the session: the
literal arguments of its calls are known, and the results of the calls nothing read later are
the goal. Durations, risks and costs come from the spec's ``x-evolve`` entries or a side file,
else a default. Each decision that is not in the input is a line of :attr:`Imported.notes`.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evolve import defaults
from evolve.model.documents import describe
from evolve.model.errors import InputError, UsageError
from evolve.model.feasibility import unreachable_criteria
from evolve.model.limits import MAX_NAME, MAX_TEXT, NAME, TOOL_NAME
from evolve.model.plan import Plan, Task
from evolve.model.problem import Problem
from evolve.model.problem_file import problem_from_dict
from evolve.problems.toolspec.meta import merged
from evolve.problems.toolspec.spec import ToolSpec
from evolve.problems.toolspec.trace import Call, Edge, dataflow

RESULT = "result"
"""The suffix of the fact holding a whole result, for tools that declare no output fields."""

LISTED = 6
"""Names spelled out in one note; the rest are counted (a 500-tool catalog gets short notes)."""


@dataclass(frozen=True)
class Imported:
    """An imported catalog: the problem document, the problem it loads as, and the guesses."""

    document: dict[str, Any]
    problem: Problem
    notes: tuple[str, ...]
    reference: Plan | None = None
    """The recorded session as a plan of the problem (one task per call), when one was given."""
    tool_names: Mapping[str, str] = field(default_factory=dict)
    """Each spec name's tool name in the catalog (they differ where a name had to be cleaned)."""


def listing(names: Sequence[str]) -> str:
    shown = ", ".join(names[:LISTED])
    return shown + (f" and {len(names) - LISTED} more" if len(names) > LISTED else "")


def clean_name(text: str, pattern: re.Pattern[str]) -> str:
    """``text`` as a valid name of ``pattern``: other characters become ``_``, a name starting
    with a digit gets a ``_`` in front, and it is cut at :data:`MAX_NAME`."""
    allowed = "A-Za-z0-9_\\-" if pattern is NAME else "A-Za-z0-9_.\\-:/"
    name = re.sub(f"[^{allowed}]", "_", text) or "_"
    if not re.match("[A-Za-z_]", name):
        name = "_" + name
    return name[:MAX_NAME]


def clean_text(text: str) -> str:
    """A description the loader accepts: control characters as spaces, at most :data:`MAX_TEXT`."""
    out = "".join(" " if unicodedata.category(c) in ("Cc", "Cf") and c not in "\n\t" else c for c in text)
    return out.strip()[:MAX_TEXT]


def result_fact(tool: str) -> str:
    """The fact holding the whole result of the catalog tool ``tool`` (``<tool>_result``)."""
    return clean_name(f"{tool.replace('.', '_')}_{RESULT}", NAME)


@dataclass
class Draft:
    """The catalog while it is being decided (mutable on purpose: one builder owns it)."""

    specs: Sequence[ToolSpec]
    notes: list[str] = field(default_factory=list)
    tool: dict[str, str] = field(default_factory=dict)
    """Spec name -> catalog tool name."""
    inputs: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    """Catalog tool -> its (parameter, fact) inputs, in order."""
    outputs: dict[str, list[str]] = field(default_factory=dict)
    bound: dict[str, dict[str, str]] = field(default_factory=dict)
    """Catalog tool -> parameter -> the output fact a session showed it reads."""
    origin: dict[tuple[str, str], str] = field(default_factory=dict)
    """(catalog tool, parameter) -> the tool whose output the session fed it."""
    arguments: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Catalog tool -> the optional parameters the session gave literal values (kept as given)."""

    def result_fact(self, tool: str) -> str:
        return result_fact(tool)

    def output_fact(self, tool: str, path: tuple[str, ...]) -> str:
        return self.result_fact(tool) if not path else clean_name("_".join(path), NAME)


def start(specs: Sequence[ToolSpec], spec_source: str) -> Draft:
    """Tools, inputs from required parameters and outputs from declared schemas."""
    d = Draft(specs=specs)
    cleaned: list[str] = []
    params_cleaned: list[str] = []
    no_schema: list[str] = []
    for spec in specs:
        name = clean_name(spec.name, TOOL_NAME)
        if name != spec.name:
            cleaned.append(f"{spec.name} -> {name}")
        if name in d.tool.values():
            raise InputError(spec_source, f"{spec.where}.name",
                             f"{describe(spec.name)} becomes the tool name {name!r}, which another tool has")
        d.tool[spec.name] = name
        d.inputs[name] = [(p, clean_name(p, NAME)) for p in spec.required]
        params_cleaned += [f"{name}.{p} -> {f}" for p, f in d.inputs[name] if p != f]
        declared = [clean_name(p, NAME) for p in spec.outputs or ()]
        d.outputs[name] = list(dict.fromkeys([*declared, d.result_fact(name)]))
        if spec.outputs is None:
            no_schema.append(name)
    if cleaned:
        d.notes.append(f"tool names made valid: {listing(cleaned)}")
    if params_cleaned:
        d.notes.append(f"parameter names made valid fact names: {listing(params_cleaned)}")
    d.notes.append(f"each tool also outputs '<tool>_{RESULT}', its whole result (a fact only it "
                   "makes: a goal naming a tool means it)")
    if no_schema:
        d.notes.append(f"no output schema, so no output but '<tool>_{RESULT}' until a session shows "
                       f"fields used: {listing(no_schema)}")
    return d


def add_trace(d: Draft, calls: Sequence[Call], trace_source: str) -> tuple[Edge, ...]:
    """Rename inputs after the outputs a session shows they read; add outputs it saw used."""
    for call in calls:
        if call.tool not in d.tool:
            raise InputError(trace_source, f"{call.where}.name",
                             f"{describe(call.tool)} is not a tool of the spec")
    edges = dataflow(calls)
    specs = {s.name: s for s in d.specs}
    kept = []
    for edge in edges:
        reader, source = d.tool[calls[edge.call].tool], d.tool[calls[edge.source].tool]
        where = f"{calls[edge.call].where}.arguments.{edge.argument}"
        seen = f"result{''.join('.' + k for k in edge.path)} of {label(calls, edge.source)}"
        if reader == source:
            d.notes.append(f"{where} equals the {seen}, a call of the same tool: not taken as "
                           "dataflow (a tool reading its own output could never start)")
            continue
        fact = d.output_fact(source, edge.path)
        if fact not in d.outputs[source]:
            d.outputs[source].append(fact)
            d.notes.append(f"{source} outputs {fact!r}: the session used it ({seen}) though the "
                           "spec declares no such output")
        previous = d.bound.setdefault(reader, {}).get(edge.argument)
        if previous is not None and previous != fact:
            d.notes.append(f"{where} reads {fact!r} but an earlier call of {reader} read {previous!r} "
                           "there: the first is kept")
            continue
        d.bound[reader][edge.argument] = fact
        d.origin[(reader, edge.argument)] = source
        if edge.others:
            d.notes.append(f"{where} is the {seen} (the most recent call holding the value); the "
                           f"value was also seen at {listing(list(edge.others))}")
        spec = specs[calls[edge.call].tool]
        if edge.argument not in [p for p, _ in d.inputs[reader]]:
            kind = "an optional parameter" if edge.argument in spec.optional else "not in its schema"
            d.inputs[reader].append((edge.argument, clean_name(edge.argument, NAME)))
            d.notes.append(f"{reader}.{edge.argument} ({kind}) is an input: the session fed it "
                           f"the {seen}")
        kept.append(edge)
    renamed = []
    for tool, pairs in d.inputs.items():
        binding = d.bound.get(tool, {})
        facts = [(p, binding.get(p, f)) for p, f in pairs]
        renamed += [f"{tool}.{p} <- {f}" for p, f in facts if p in binding and clean_name(p, NAME) != f]
        first: dict[str, str] = {}
        for p, f in facts:
            if f in first:
                d.notes.append(f"{tool}.{first[f]} and {tool}.{p} both read the fact {f!r}: one input "
                               "(a fact has one value in a plan), given to both parameters")
            first.setdefault(f, p)
        d.inputs[tool] = facts
    if renamed:
        d.notes.append(f"parameters fed the output the session showed (the tool is still called "
                       f"with its own parameter names): {listing(renamed)}")
    keep_arguments(d, calls, {(e.call, e.argument) for e in kept})
    return tuple(kept)


def keep_arguments(d: Draft, calls: Sequence[Call], fed: set[tuple[int, str]]) -> None:
    """The optional parameters the session gave a literal value (not fed from an earlier result)
    become the tool's literal ``arguments``, so a plan's call passes them as the session did; the
    first call's value is kept where two calls of one tool differ."""
    specs = {s.name: s for s in d.specs}
    kept, differ = [], []
    for i, call in enumerate(calls):
        tool = d.tool[call.tool]
        inputs = {p for p, _ in d.inputs[tool]}
        for param, value in call.arguments.items():
            if param not in specs[call.tool].optional or param in inputs or (i, param) in fed:
                continue
            given = d.arguments.setdefault(tool, {})
            if param not in given:
                given[param] = value
                kept.append(f"{tool}.{param} = {json.dumps(value)[:40]}")
            elif given[param] != value:
                differ.append(f"{label(calls, i)}.{param}")
    if kept:
        d.notes.append(f"optional arguments the session gave, kept as literal arguments: {listing(kept)}")
    if differ:
        d.notes.append(f"calls that gave another value than the first call of their tool (the first "
                       f"is kept): {listing(differ)}")


def label(calls: Sequence[Call], index: int) -> str:
    """How a note names a call: its number in the session and its tool."""
    return f"call {index + 1} ({calls[index].tool})"


def fact_of(d: Draft, tool: str, param: str) -> str | None:
    return next((f for p, f in d.inputs[tool] if p == param), None)


def decide_known(d: Draft, known: Sequence[str] | None, calls: Sequence[Call],
                 edges: Sequence[Edge]) -> list[str]:
    """The facts known at start: as given, else the session's literal arguments plus every input
    no tool makes (each taken fact said in a note)."""
    made = {f for outs in d.outputs.values() for f in outs}
    needed = list(dict.fromkeys(f for ins in d.inputs.values() for _, f in ins))
    if known is not None:
        for name in known:
            if NAME.fullmatch(name) is None:
                raise UsageError(f"--known {name!r}: not a valid fact name")
        return list(dict.fromkeys(known))
    out: list[str] = []
    if calls:
        fed = {(e.call, e.argument) for e in edges}
        for i, call in enumerate(calls):
            tool = d.tool[call.tool]
            for param in call.arguments:
                fact = fact_of(d, tool, param)
                if fact is not None and (i, param) not in fed and param not in d.bound.get(tool, {}):
                    out.append(fact)
        out = list(dict.fromkeys(out))
        if out:
            d.notes.append(f"known at start (literal arguments in the session): {listing(out)}")
        called = {d.tool[c.tool] for c in calls}
        needed = list(dict.fromkeys(f for t in called for _, f in d.inputs[t]))
        idle = [t for t in d.inputs if t not in called
                and any(f not in made and f not in out for _, f in d.inputs[t])]
        if idle:
            d.notes.append(f"tools the session did not call whose inputs nothing makes stay unusable "
                           f"(give --known to use them): {listing(idle)}")
    rest = [f for f in needed if f not in made and f not in out]
    if rest:
        d.notes.append(f"known at start (inputs no tool makes, taken as given): {listing(rest)}")
    return out + rest


def separate_sources(d: Draft, initial: Sequence[str], calls: Sequence[Call]) -> None:
    """An input the session fed from one tool's output reads a fact of its own,
    ``<source tool>_<fact>``, made by that tool alone, when the plain fact would let something
    else stand in for it: a fact also known at start, or one another tool of the session makes
    too (``step2.id`` fed by ``step1``'s ``id`` must not read ``step0``'s). Tools the session
    did not call stay alternatives: the catalog is for choosing among them."""
    known = set(initial)
    called = {d.tool[c.tool] for c in calls}
    moved = []
    for (reader, param), source in d.origin.items():
        fact = d.bound[reader][param]
        rivals = [t for t in called if t != source and fact in d.outputs[t]]
        if fact not in known and not rivals:
            continue
        own = clean_name(f"{source.replace('.', '_')}_{fact}", NAME)
        if own not in d.outputs[source]:
            d.outputs[source].append(own)
        d.inputs[reader] = [(p, own if f == fact and p == param else f) for p, f in d.inputs[reader]]
        d.bound[reader][param] = own
        why = "known at start" if fact in known else f"made by {listing(sorted(rivals))} too"
        moved.append(f"{reader}.{param} <- {own} ({fact!r} is {why})")
    if moved:
        d.notes.append(f"inputs the session fed from one tool's output read an output of their own: "
                       f"{listing(moved)}")


def decide_goal(d: Draft, goal: Sequence[str], calls: Sequence[Call], edges: Sequence[Edge]) -> list[str]:
    """The criteria: as given (a fact, or a tool meaning its whole result), else the results of
    the session's calls nothing read later, else the results of the tools none of whose outputs
    another tool reads."""
    made = list(dict.fromkeys(f for outs in d.outputs.values() for f in outs))
    if goal:
        out: list[str] = []
        for item in goal:
            tool = d.tool.get(item, item if item in d.outputs else None)
            if tool is not None:
                out.append(d.result_fact(tool))
            elif item in made:
                out.append(item)
            else:
                raise UsageError(f"--goal {item!r}: neither a tool of the spec nor an output of one "
                                 f"(outputs: {listing(made)})")
        return list(dict.fromkeys(out))
    if calls:
        read = {e.source for e in edges}
        sinks = [i for i in range(len(calls)) if i not in read]
        out = list(dict.fromkeys(d.result_fact(d.tool[calls[i].tool]) for i in sinks))
        d.notes.append(f"goal (outputs of the calls whose results no later call used: "
                       f"{listing([label(calls, i) for i in sinks])}): {listing(out)}")
        return out
    read_facts = {f for ins in d.inputs.values() for _, f in ins}
    out = [d.result_fact(t) for t, outs in d.outputs.items() if not read_facts & set(outs)]
    if not out:
        raise UsageError("no goal: every tool's outputs are read by some tool; give --goal or --trace")
    d.notes.append(f"goal (the results of the tools whose outputs no tool reads; give --goal to "
                   f"choose): {listing(out)}")
    return out


def tool_fields(d: Draft, side: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each tool's document entry, durations and risks from the side file or the spec, else the
    defaults (the tools that got one are listed in a note)."""
    tools: dict[str, dict[str, Any]] = {}
    no_duration, no_risk = [], []
    for spec in d.specs:
        name = d.tool[spec.name]
        meta = merged(spec.meta, side.get(spec.name, {}))
        if "duration" not in meta:
            no_duration.append(name)
        if "risk" not in meta:
            no_risk.append(name)
        entry: dict[str, Any] = {"duration": meta.get("duration", defaults.IMPORT_DURATION)}
        if spec.description and "description" not in meta:
            entry["description"] = clean_text(spec.description)
        pairs = d.inputs[name]
        if all(p == f for p, f in pairs):
            entry["inputs"] = [f for _, f in pairs]
        else:  # the callable is called with its own parameter names, each given its fact's value
            entry["inputs"] = dict(pairs)
        if d.arguments.get(name):
            entry["arguments"] = dict(d.arguments[name])
        entry["outputs"] = list(d.outputs[name])
        entry["risk"] = meta.get("risk", defaults.IMPORT_RISK)
        entry.update({k: v for k, v in meta.items() if k not in ("duration", "risk")})
        if entry["risk"] == "read":
            del entry["risk"]
        tools[name] = entry
    if no_duration:
        d.notes.append(f"duration {defaults.IMPORT_DURATION:g} (neither spec nor side file gives one): "
                       f"{listing(no_duration)}")
    if no_risk:
        d.notes.append(f"risk {defaults.IMPORT_RISK} (neither spec nor side file gives one): "
                       f"{listing(no_risk)}")
    return tools


def reference_plan(d: Draft, calls: Sequence[Call], edges: Sequence[Edge],
                   initial: Sequence[str], risks: Mapping[str, str]) -> Plan:
    """The session as a plan: a task per call, each input bound to the call that fed it, else a
    known fact, else the latest earlier call whose tool makes it."""
    fed = {(e.call, e.argument): e.source for e in edges}
    known = set(initial)
    tasks = []
    for i, call in enumerate(calls):
        tool = d.tool[call.tool]
        inputs: dict[str, str] = {}
        deps: list[str] = []
        for param, fact in d.inputs[tool]:
            source = fed.get((i, param))
            if source is None and fact not in known:
                source = next((j for j in range(i - 1, -1, -1)
                               if fact in d.outputs[d.tool[calls[j].tool]]), None)
            if source is None:
                inputs[fact] = f"${fact}"
            else:
                inputs[fact] = f"$t{source + 1}.{fact}"
                deps.append(f"t{source + 1}")
        write = risks.get(tool) == "write"
        tasks.append(Task(id=f"t{i + 1}", tool=tool, deps=tuple(dict.fromkeys(deps)), inputs=inputs,
                          idempotency_key=defaults.IDEMPOTENCY_KEY if write else None))
    return Plan(tasks=tuple(tasks))


def build_catalog(
    specs: Sequence[ToolSpec],
    spec_source: str,
    *,
    side: Mapping[str, Mapping[str, Any]] | None = None,
    calls: Sequence[Call] = (),
    trace_source: str = "<trace>",
    goal: Sequence[str] = (),
    known: Sequence[str] | None = None,
    name: str | None = None,
) -> Imported:
    """The problem the specs (and session) describe; raises :class:`UsageError` when the goal
    cannot be reached from what is known."""
    d = start(specs, spec_source)
    edges = add_trace(d, calls, trace_source) if calls else ()
    initial = decide_known(d, known, calls, edges)
    separate_sources(d, initial, calls)
    criteria = decide_goal(d, goal, calls, edges)
    tools = tool_fields(d, side or {})
    doc: dict[str, Any] = {"name": name or "imported", "initial": initial, "criteria": criteria,
                           "tools": tools}
    problem = problem_from_dict(doc, spec_source)
    unreachable = unreachable_criteria(problem)
    if unreachable:
        raise UsageError(f"{spec_source}: the goal cannot be reached from what is known: "
                         f"{'; '.join(unreachable[:3])} (give --known or --goal)")
    risks = {t.name: t.risk for t in problem.tools.values()}
    reference = reference_plan(d, calls, edges, initial, risks) if calls else None
    return Imported(document=doc, problem=problem, notes=tuple(d.notes), reference=reference,
                    tool_names=dict(d.tool))
