"""Hoisted decisions: the one narrow guess a small model makes before planning.

A domain may declare ``decide: {failure_class: {prompt: "...{{test_output}}...", enum: [flaky,
lint, test], default: test}}``. The prompt is rendered from the state (``{{key}}``; a key not in
it renders empty), the model is asked for one JSON object (json mode, temperature 0, through the
same client and reply cache as every other call) and the answer is validated: a value of the
enum is merged into the state, which a select then branches on like on any key; a reply out of
the enum, unparsable, or a failed call takes the ``default`` with the reason recorded; without a
default the run does not start (fail closed), naming why. Nothing in the reply is executed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from evolve import defaults
from evolve.llm.cache import ReplyCache, cached_call, default_cache_dir, prompt_hash
from evolve.llm.client import ChatClient, OwnsClient
from evolve.llm.factory import chat_client
from evolve.llm.reply import Rejected, extract_json
from evolve.llm.usage import Usage
from evolve.model.errors import RunFailed
from evolve.problems.htn.domain import Decision, Domain, Scalar

SYSTEM = ("You make one narrow decision for an automated runbook. "
          "Answer with one JSON object and nothing else.")
TEMPLATE = re.compile(r"\{\{\s*([A-Za-z_][\w.\-]*)\s*\}\}")
MAX_TOKENS = 64


def render(template: str, state: Mapping[str, Any]) -> str:
    """``{{key}}`` replaced by the state's value (text as it is, others as JSON would write them)."""
    def value(match: re.Match[str]) -> str:
        found = state.get(match.group(1))
        if found is None:
            return ""
        if isinstance(found, bool):
            return "true" if found else "false"
        return str(found)
    return TEMPLATE.sub(value, template)


def answer_fields(decision: Decision) -> tuple[Decision, ...]:
    """The fields of the decision's answer, its own key first."""
    return (decision, *decision.fields)


def allowed(field: Decision) -> str:
    """What a field's value may be, as the prompt says it."""
    if field.enum is not None:
        return f'{field.key} one of {", ".join(repr(v) for v in field.enum)}'
    return f"{field.key} a {field.kind}" if field.kind is not None else ""


def messages_for(decision: Decision, state: Mapping[str, Any]) -> list[dict[str, str]]:
    fields = answer_fields(decision)
    shape = ", ".join(f'"{f.key}": <value>' for f in fields)
    rules = [text for text in (allowed(f) for f in fields) if text]
    if len(fields) == 1 and decision.kind is None:
        told = " with the value" + (f' one of {", ".join(repr(v) for v in decision.enum)}'
                                    if decision.enum is not None else "")
    else:
        told = f" with {'; '.join(rules)}" if rules else ""
    user = f"{render(decision.prompt, state)}\n\nAnswer {{{shape}}}{told}."
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


KINDS: dict[str, tuple[type, ...]] = {"string": (str,), "number": (int, float), "integer": (int,),
                                      "boolean": (bool,)}


def of_kind(value: object, kind: str) -> bool:
    """Whether ``value`` is of the declared type (``true`` is a boolean, not a number)."""
    return isinstance(value, KINDS[kind]) and (kind == "boolean" or not isinstance(value, bool))


def judged(decision: Decision, text: str) -> dict[str, Scalar]:
    """The answer's value of every field (the decision's key first), judged as one object; raises
    :class:`Refused` (``parse``, ``schema``, ``enum``, ...) when any field is missing or wrong."""
    try:
        doc = extract_json(text)
    except Rejected as exc:
        raise Refused(exc.reason, exc.detail) from None
    fields = answer_fields(decision)
    if not isinstance(doc, dict) or any(f.key not in doc for f in fields):
        raise Refused("schema", "expected {" + ", ".join(f'"{f.key}": ...' for f in fields) + "}")
    values: dict[str, Scalar] = {}
    for field in fields:
        value = doc[field.key]
        if value is not None and not isinstance(value, (str, int, float, bool)):
            raise Refused("schema", f"{field.key} must be a string, number, true/false or null")
        if field.kind is not None and value is not None and not of_kind(value, field.kind):
            raise Refused("schema", f"{field.key} must be a {field.kind}, got {type(value).__name__}")
        if field.enum is not None and not any(type(value) is type(v) and value == v for v in field.enum):
            raise Refused("enum", f"{field.key}: {value!r} is not one of {list(field.enum)}")
        values[field.key] = value
    return values


def response_format(kind: str, name: str, schema: dict[str, Any]) -> dict[str, Any]:
    """``json_object`` (json mode), ``json_object_schema`` (json mode with the schema, which
    llama.cpp servers turn into a grammar) or ``json_schema`` (OpenAI's structured outputs)."""
    if kind == "json_object_schema":
        return {"type": "json_object", "schema": schema}
    if kind == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}
    return {"type": "json_object"}


class Refused(Exception):
    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True)
class Decided:
    """The state after the decisions, and one record a decision (for the run folder)."""

    domain: Domain
    records: tuple[dict[str, Any], ...]


class Decider(OwnsClient):
    """Asks the domain's decisions (see the module docstring)."""

    def __init__(self, client: ChatClient, *, cache: ReplyCache | None = None, seed: int = 0,
                 response_format: str = "json_object") -> None:
        self.client = client
        self.cache = cache
        self.seed = seed
        self.response_format = response_format
        self.usage = Usage()

    def settings(self, decision: Decision) -> dict[str, Any]:
        fields = answer_fields(decision)
        # an answer of several fields carries free text (a code line, an image name): room for it
        body: dict[str, Any] = {"temperature": 0.0, "max_tokens": MAX_TOKENS * len(fields), "seed": self.seed}
        properties = {f.key: {**({"enum": list(f.enum)} if f.enum is not None else {}),
                              **({"type": f.kind} if f.kind is not None else {})} for f in fields}
        schema = {"type": "object", "properties": properties, "required": [f.key for f in fields],
                  "additionalProperties": False}
        body["response_format"] = response_format(self.response_format, "decision", schema)
        return body

    def decide(self, domain: Domain, given: set[str] | frozenset[str] = frozenset(),
               budget: int | None = None) -> Decided:
        """Every decision of ``domain`` whose key is not in ``given`` (plan input wins), in order,
        each rendered from the state the earlier ones made. ``budget``: the model calls the run
        may make (its ``limits.max_llm_calls``); decisions that need more are not asked (a
        :class:`~evolve.model.errors.RunFailed` naming ``llm_budget``: the run does not start)."""
        asked = [key for key in domain.decisions if key not in given]
        if budget is not None and len(asked) > budget:
            raise RunFailed(f"{domain.source}: llm_budget: limits.max_llm_calls {budget}, and the hoisted "
                            f"decisions {', '.join(asked)} need {len(asked)} model call(s) before "
                            "planning; raise the budget or give their values with --input")
        state: dict[str, Scalar] = dict(domain.state)
        records = []
        for key, decision in domain.decisions.items():
            if key in given:
                records.append({"key": key, "value": state.get(key), "source": "input"})
                continue
            messages = messages_for(decision, state)
            settings = self.settings(decision)
            entry, cached = cached_call(self.client, self.cache, self.usage, messages, settings)
            record: dict[str, Any] = {"key": key, "prompt_hash": prompt_hash(messages), "cached": cached,
                                      "requests": 0 if cached else int(entry.get("attempts", 1))}
            try:
                if "error" in entry:
                    self.usage.call_failed(str(entry["error"]))
                    raise Refused(str(entry["error"]), str(entry.get("detail", "")))
                values = judged(decision, str(entry.get("text", "")))
                self.usage.judged(None)
                record.update(source="model")
            except Refused as exc:
                self.usage.judged(exc.reason)
                if not decision.has_default:
                    raise RunFailed(f"{domain.source}: htn.decide.{key}: the model's answer was "
                                    f"refused ({exc.reason}: {exc.detail}) and there is no default") from None
                values = {f.key: f.default for f in answer_fields(decision)}
                record.update(source="default", refused=exc.reason, detail=exc.detail[:200])
            record["value"] = values[key]
            if decision.fields:
                record["fields"] = {f.key: values[f.key] for f in decision.fields}
            state.update(values)
            records.append(record)
        return Decided(replace(domain, state=state), tuple(records))


def model_calls(records: Iterable[Mapping[str, Any]]) -> int:
    """The model calls the decisions of ``records`` made, as ``limits.max_llm_calls`` counts
    them: one per decision asked whose reply did not come from the reply cache (a value given
    as input asks nothing; HTTP retries of one ask are not counted apart)."""
    return sum(1 for r in records if r.get("source") != "input" and r.get("cached") is False)


def make_decider(base_url: str, model: str, *, timeout: float = defaults.LLM_TIMEOUT,
                 cache_dir: str | None = None, seed: int = defaults.SEED,
                 extra_body: Mapping[str, Any] | None = None) -> Decider:
    """A :class:`Decider` for ``base_url``: the key from the environment only, replies cached under
    the default cache folder (or ``cache_dir``); ``extra_body`` sent with each call."""
    client = chat_client(base_url, model, timeout=timeout, extra_body=extra_body)
    return Decider(client, cache=ReplyCache(cache_dir if cache_dir is not None else default_cache_dir()),
                   seed=seed)
