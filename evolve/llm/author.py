"""Authoring an HTN domain from one session's trace, by evolution: the model proposes, the
symbolic validator decides.

A model is asked ``n`` times (temperature above 0, a seed per call) to generalise the trace into a
domain: conditional steps as guarded methods, tool results as ``$result`` bindings, no tool the
trace does not use. Each reply is saved to the run folder, read by evolve's own readers (pi-htn's
format or ours) and gated by :func:`~evolve.problems.htn.validate_domain` over every synthetic
world state (no operator runs). Score = 1000 x states with a plan - failures + a small richness
term (methods and guards, below 1 in all). While no candidate passes every state, each
generation asks the model ``n`` times to mend the best one, showing it the validator's failures.
Only a candidate that passes every state (and uses only the trace's tools) can be the answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evolve import defaults
from evolve.llm.cache import ReplyCache, cached_call
from evolve.llm.client import ChatClient, OwnsClient
from evolve.llm.trace import TraceCall
from evolve.llm.usage import Usage
from evolve.model.documents import read_document
from evolve.model.errors import InputError
from evolve.problems.htn import Domain, domain_from_dict, is_htn_document, validate_domain
from evolve.problems.htn.domain import atoms
from evolve.problems.htn.pihtn import from_pihtn, is_pihtn_document

SYSTEM = """You author reusable HTN (hierarchical task network) domains for a symbolic planner.
You are given the tool-call trace of one successful session. Generalise it, do not replay it:
find which steps were conditional and express each branch as a guarded alternative, order the
alternatives of a choice from the preferred one to a last one that always applies, and capture
tool outputs the later steps depend on with $result.<field> effects. Use only the tools of the
trace. Answer with one fenced ```yaml block and nothing else, in this schema:

domain: <name>
worldState: {<key>: <string | number | true | false | null>, ...}
root: {name: <task>, type: sequence | select, tasks: [<node>, ...]}

A node is compound, {name, type: select | sequence, conditions?, tasks: [<node>, ...]}: a
sequence runs its tasks in order, a select runs the first of its tasks whose conditions hold;
or primitive, {name, conditions?, operator: {tool: <a tool of the trace>, prompt?}, effects?:
[{set: {<key>: <value or $result.<field>>}}]}. conditions is a list of predicates, all of which
must hold: {eq: [<key>, <value>]}, {has: <key>} (set, not false or null), {not: <predicate>}.
Every name is unique."""


def trace_lines(calls: Sequence[TraceCall], limit: int = 300) -> str:
    def short(value: Any) -> str:
        text = json.dumps(value, sort_keys=True, default=str)
        return text if len(text) <= limit else text[:limit] + "..."

    return "\n".join(f"{i + 1}. {c.tool}({short(dict(c.args))}) -> {short(c.result)}"
                     for i, c in enumerate(calls))


def tools_of(calls: Sequence[TraceCall]) -> list[str]:
    return list(dict.fromkeys(c.tool for c in calls))


def author_messages(name: str, calls: Sequence[TraceCall]) -> list[dict[str, str]]:
    user = (f'Author the domain "{name}".\nTools of the trace: {", ".join(tools_of(calls))}\n\n'
            f"Trace:\n{trace_lines(calls)}")
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def mutation_messages(name: str, calls: Sequence[TraceCall], text: str,
                      failures: Sequence[str]) -> list[dict[str, str]]:
    shown = "\n".join(f"- {f}" for f in failures[:12])
    more = f"\n- ... and {len(failures) - 12} more" if len(failures) > 12 else ""
    user = (f'Author the domain "{name}".\nTools of the trace: {", ".join(tools_of(calls))}\n\n'
            f"Trace:\n{trace_lines(calls)}\n\nA candidate domain:\n```yaml\n{text.strip()}\n```\n\n"
            f"The validator (every world state the guards tell apart must have a plan) found:\n"
            f"{shown}{more}\n\nReturn the whole corrected domain, in the same fenced ```yaml block.")
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


FENCE = re.compile(r"```[ \t]*(?:ya?ml|YAML)?[ \t]*\n(.*?)```", re.DOTALL)


def yaml_text(reply: str) -> str:
    """The reply's first fenced block, else the reply itself."""
    found = FENCE.search(reply)
    return found.group(1) if found else reply


@dataclass(frozen=True)
class Verdict:
    """What the validator made of one candidate file."""

    domain: Domain | None
    states: int
    planned: int
    failures: tuple[str, ...]

    @property
    def valid(self) -> bool:
        return self.domain is not None and not self.failures and self.planned == self.states


def richness(domain: Domain) -> float:
    """Methods and guard tests, at :data:`~evolve.defaults.AUTHOR_RICHNESS` each, below 1."""
    count = len(domain.methods) + sum(len(atoms(m.pre)) for m in domain.methods)
    return min(0.99, defaults.AUTHOR_RICHNESS * count)


def score(verdict: Verdict) -> float:
    if verdict.domain is None:
        return -float(len(verdict.failures) or 1)
    return 1000.0 * verdict.planned - len(verdict.failures) + richness(verdict.domain)


def judge(path: Path, tools: Sequence[str], max_states: int, seed: int) -> Verdict:
    """Read ``path`` (pi-htn's format or ours) and validate it; no operator runs."""
    try:
        doc = read_document(path)
        if is_pihtn_document(doc):
            doc = from_pihtn(doc, str(path))
        if not is_htn_document(doc):
            raise InputError(str(path), "", "neither a pi-htn domain (root) nor an evolve one (htn)")
        domain, _ = domain_from_dict(doc, str(path))
    except InputError as exc:
        return Verdict(None, 0, 0, (str(exc),))
    foreign = [f"operator {name} uses tool {op.tool or name!r}, which the trace does not"
               for name, op in domain.operators.items() if (op.tool or name) not in tools]
    report = validate_domain(domain, max_states=max_states, seed=seed)
    failures = foreign + [f"no plan in state {json.dumps(r.state, sort_keys=True)}: {r.blocked}"
                          for r in report.failures]
    return Verdict(domain, len(report.results), len(report.results) - len(report.failures),
                   tuple(failures))


@dataclass(frozen=True)
class Candidate:
    id: str
    generation: int
    parent: str | None
    file: str | None
    verdict: Verdict
    score: float
    call: dict[str, Any] = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        return {"id": self.id, "generation": self.generation, "parent": self.parent, "file": self.file,
                "score": round(self.score, 4), "valid": self.verdict.valid, "states": self.verdict.states,
                "planned": self.verdict.planned, "failures": list(self.verdict.failures), **self.call}


class Author(OwnsClient):
    """The authoring calls: one client, the reply cache, a call budget and the usage counters."""

    def __init__(self, client: ChatClient, *, cache: ReplyCache | None = None,
                 temperature: float = defaults.AUTHOR_TEMPERATURE,
                 max_tokens: int = defaults.AUTHOR_MAX_TOKENS, max_calls: int | None = None) -> None:
        self.client, self.cache, self.max_calls = client, cache, max_calls
        self.sampling = {"temperature": temperature, "max_tokens": max_tokens}
        self.asked = 0
        self.usage = Usage()

    def ask(self, messages: list[dict[str, str]], seed: int) -> tuple[str | None, dict[str, Any]]:
        """The reply's text (``None``: the call failed, or the budget is spent) and its record."""
        if self.max_calls is not None and self.asked >= self.max_calls:
            self.usage.skipped()
            return None, {"error": "budget", "detail": f"--llm-max-calls {self.max_calls} reached"}
        self.asked += 1
        entry, cached = cached_call(self.client, self.cache, self.usage, messages,
                                    {**self.sampling, "seed": seed})
        record = {"seed": seed, "cached": cached}
        if "error" in entry:
            self.usage.call_failed(str(entry["error"]))
            return None, {**record, "error": str(entry["error"]), "detail": str(entry.get("detail", ""))}
        return str(entry.get("text", "")), record


@dataclass(frozen=True)
class Authored:
    """The run: every candidate, the best by score, and the best that passes (``None``: none)."""

    candidates: tuple[Candidate, ...]
    best: Candidate
    passer: Candidate | None


def evolve_domain(calls: Sequence[TraceCall], author: Author, folder: Path, *, name: str,
                  n: int = defaults.AUTHOR_CANDIDATES, generations: int = defaults.AUTHOR_GENERATIONS,
                  max_states: int = defaults.HTN_VALIDATE_STATES, seed: int = defaults.SEED,
                  on_candidate: Callable[[Candidate], None] | None = None) -> Authored:
    """Generation 0 from the trace, then mutations of the best while none passes (see the module
    docstring); every prompt, reply and verdict is written under ``folder``."""
    tools = tools_of(calls)
    (folder / "candidates").mkdir(parents=True, exist_ok=True)
    first = author_messages(name, calls)
    (folder / "prompt.json").write_text(json.dumps(first, indent=2) + "\n")
    made: list[Candidate] = []
    log = (folder / "candidates.jsonl").open("w", encoding="utf-8")

    def make(cid: str, generation: int, parent: Candidate | None, messages: list[dict[str, str]],
             call_seed: int) -> None:
        if parent is not None:
            (folder / "candidates" / f"{cid}.prompt.json").write_text(json.dumps(messages, indent=2) + "\n")
        text, record = author.ask(messages, call_seed)
        if text is None:
            failed = f"the call failed: {record['error']}: {record.get('detail', '')}"
            verdict = Verdict(None, 0, 0, (failed,))
            file = None
        else:
            path = folder / "candidates" / f"{cid}.yaml"
            path.write_text(yaml_text(text), encoding="utf-8")
            verdict = judge(path, tools, max_states, seed)
            file = str(path.relative_to(folder))
            author.usage.judged(None if verdict.valid else "unreadable" if verdict.domain is None
                                else "validator")
        candidate = Candidate(cid, generation, parent.id if parent else None, file, verdict, score(verdict),
                              record)
        made.append(candidate)
        log.write(json.dumps(candidate.record(), sort_keys=True) + "\n")
        log.flush()
        if on_candidate is not None:
            on_candidate(candidate)

    with log:
        for i in range(n):
            make(f"g0c{i + 1}", 0, None, first, seed + i)
        for generation in range(1, generations + 1):
            best = ranked(made)
            if best.verdict.valid:
                break
            text = (folder / best.file).read_text(encoding="utf-8") if best.file else ""
            messages = mutation_messages(name, calls, text, best.verdict.failures)
            for i in range(n):
                make(f"g{generation}c{i + 1}", generation, best, messages, seed + generation * n + i)
    passers = [c for c in made if c.verdict.valid]
    return Authored(tuple(made), ranked(made), ranked(passers) if passers else None)


def ranked(candidates: Sequence[Candidate]) -> Candidate:
    """The highest score; the earliest among equals."""
    return max(candidates, key=lambda c: c.score)
