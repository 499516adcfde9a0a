"""The ChatHTN fallback: a chat model proposes a decomposition the planner has no method for.

It implements :class:`evolve.problems.htn.DecompositionFallback`. The prompt
shows the task, the current world state and every operator (precondition and
effects) and compound task the domain knows; the model answers with
``{"subtasks": [...], "reason": "..."}``. This side only reads the reply (JSON
of the right shape, or a reason word); whether the proposal is *accepted* is
the planner's decision, made against the operators' schemas. Calls go through
the same client and on-disk cache as the LLM operator, keyed by model, prompt
and sampling settings, so a rerun of the same run makes no calls at all.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evolve import defaults
from evolve.llm.cache import ReplyCache, cached_call, default_cache_dir, prompt_hash
from evolve.llm.client import ChatClient, OwnsClient
from evolve.llm.factory import API_KEY_ENV, api_key_from_env
from evolve.llm.reply import Rejected, extract_json
from evolve.llm.usage import Usage
from evolve.problems.htn.domain import CompoundTask, Operator, Unknown, Value, to_doc
from evolve.problems.htn.fallback import FallbackReply

SYSTEM = """You extend a hierarchical task network (HTN) planner.
The planner has no method for a compound task in the current world state. Propose an ordered
list of subtasks that accomplishes it, using ONLY the operators and compound tasks listed.
An operator applies only when its precondition holds in the state at that point; its effects
then change the state. The planner checks your list and rejects it if any name is unknown or
any precondition fails in order.
Answer with one JSON object and nothing else: {"subtasks": ["name", ...], "reason": "one line"}"""
MAX_SUBTASKS = 16


def reply_schema(names: list[str]) -> dict[str, Any]:
    """The reply's JSON schema, with the known names as an enum for constrained decoding."""
    return {"type": "object", "properties": {
        "subtasks": {"type": "array", "maxItems": MAX_SUBTASKS, "items": {"type": "string", "enum": names}},
        "reason": {"type": "string"}}, "required": ["subtasks", "reason"], "additionalProperties": False}


def plain(state: Mapping[str, Value]) -> dict[str, Any]:
    return {k: str(v) if isinstance(v, Unknown) else v for k, v in sorted(state.items())}


def build_messages(task: str, state: Mapping[str, Value], operators: Mapping[str, Operator],
                   tasks: Mapping[str, CompoundTask]) -> list[dict[str, str]]:
    """The prompt: a deterministic function of the question, so the cache can answer a rerun."""
    ops = {name: {"pre": to_doc(op.pre), "effects": {
        "set": {k: str(v) if isinstance(v, Unknown) else v for k, v in op.effects.set.items()},
        "unset": list(op.effects.unset)}} for name, op in sorted(operators.items())}
    compound = {name: {"achieves": to_doc(t.achieves), "description": t.description}
                for name, t in sorted(tasks.items())}
    user = (f"Task to decompose: {task}\n"
            f"It must achieve: {json.dumps(to_doc(tasks[task].achieves)) if task in tasks else '[]'}\n"
            f"Current state: {json.dumps(plain(state), sort_keys=True)}\n"
            f"Operators: {json.dumps(ops, sort_keys=True)}\n"
            f"Compound tasks: {json.dumps(compound, sort_keys=True)}")
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def read_reply(text: str) -> tuple[tuple[str, ...], str]:
    """Subtask names and reason from the model's text; raises :class:`Rejected`."""
    doc = extract_json(text)
    if not isinstance(doc, dict) or not isinstance(doc.get("subtasks"), list):
        raise Rejected("schema", 'expected {"subtasks": [...], "reason": "..."}')
    subtasks = doc["subtasks"]
    if len(subtasks) > MAX_SUBTASKS or not all(isinstance(s, str) and s for s in subtasks):
        raise Rejected("schema", f"subtasks must be at most {MAX_SUBTASKS} non-empty names")
    reason = doc.get("reason")
    return tuple(subtasks), (reason.strip()[:200] if isinstance(reason, str) else "")


class LLMDecomposer(OwnsClient):
    """Asks an OpenAI-compatible endpoint for decompositions (see the module docstring)."""

    name = "llm"

    def __init__(self, client: ChatClient, *, cache: ReplyCache | None = None,
                 temperature: float = defaults.HTN_FALLBACK_TEMPERATURE,
                 max_tokens: int = defaults.HTN_FALLBACK_MAX_TOKENS,
                 response_format: str = defaults.LLM_RESPONSE_FORMAT, seed: int = defaults.SEED,
                 max_calls: int | None = None) -> None:
        self.client = client
        self.model = client.model
        self.cache = cache
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.response_format = response_format
        self.seed = seed
        self.max_calls = max_calls
        self.consulted = 0
        self.usage = Usage()

    def settings(self, names: list[str]) -> dict[str, Any]:
        body: dict[str, Any] = {"temperature": self.temperature, "max_tokens": self.max_tokens,
                                "seed": self.seed}
        if self.response_format == "json_schema":
            body["response_format"] = {"type": "json_schema", "json_schema": {
                "name": "decomposition", "schema": reply_schema(names)}}
        elif self.response_format == "json_object":
            body["response_format"] = {"type": "json_object"}
        elif self.response_format == "json_object_schema":
            body["response_format"] = {"type": "json_object", "schema": reply_schema(names)}
        return body

    def decompose(self, task: str, state: Mapping[str, Value], operators: Mapping[str, Operator],
                  tasks: Mapping[str, CompoundTask]) -> FallbackReply:
        if self.max_calls is not None and self.consulted >= self.max_calls:
            self.usage.skipped()
            return FallbackReply(None, error="budget", detail=f"--llm-max-calls {self.max_calls} reached")
        self.consulted += 1
        messages = build_messages(task, state, operators, tasks)
        settings = self.settings(sorted({*operators, *tasks}))
        entry, cached = cached_call(self.client, self.cache, self.usage, messages, settings)
        meta = {"model": self.model, "prompt_hash": prompt_hash(messages), "cached": cached,
                "tokens": {"prompt": entry.get("prompt_tokens", 0),
                           "completion": entry.get("completion_tokens", 0)},
                "latency_s": entry.get("latency", 0.0)}
        if "error" in entry:
            self.usage.call_failed(str(entry["error"]))
            return FallbackReply(None, error=str(entry["error"]), detail=str(entry.get("detail", "")),
                                 meta=meta)
        try:
            subtasks, reason = read_reply(str(entry.get("text", "")))
        except Rejected as exc:
            self.usage.judged(exc.reason)
            return FallbackReply(None, error=exc.reason, detail=exc.detail, meta=meta)
        self.usage.judged(None)
        return FallbackReply(subtasks, reason=reason, meta=meta)

    def usage_summary(self) -> dict[str, Any]:
        return {"model": self.model, "max_calls": self.max_calls, **self.usage.summary()}

    def checkpoint_state(self) -> dict[str, Any]:
        return {"consulted": self.consulted, "usage": self.usage.state()}

    def restore_checkpoint(self, state: dict[str, Any]) -> None:
        self.consulted = int(state["consulted"])
        self.usage.restore(state["usage"])


def make_htn_fallback(base_url: str, model: str, *, timeout: float = defaults.LLM_TIMEOUT,
                      cache_dir: str | Path | None = None, use_cache: bool = True,
                      max_calls: int | None = None, seed: int = defaults.SEED,
                      response_format: str = defaults.LLM_RESPONSE_FORMAT,
                      max_retries: int = defaults.LLM_MAX_RETRIES,
                      backoff: float = defaults.LLM_BACKOFF) -> LLMDecomposer:
    """An :class:`LLMDecomposer` for ``base_url``; the API key comes from the environment only."""
    client = ChatClient(base_url, model, api_key=api_key_from_env(API_KEY_ENV), timeout=timeout,
                        max_retries=max_retries, backoff=backoff)
    root = cache_dir if cache_dir is not None else default_cache_dir()
    return LLMDecomposer(client, cache=ReplyCache(root) if use_cache else None, seed=seed,
                         response_format=response_format, max_calls=max_calls)
