"""In-loop argument filling (the sources' "mode B"): a small model fills a prompted operator's
tool arguments when its task is dispatched.

The operator's ``prompt`` is rendered from the live world state (``{{key}}``), the model answers
one JSON object (json mode, temperature 0, the same client and reply cache as every call; the
attempt is part of the seed, so a retry asks again instead of replaying a refused reply), and the
answer is checked against the operator's ``args`` (name -> ``string`` / ``number`` / ``integer``
/ ``boolean``: exactly those names, of those types) or, without ``args``, must be an object of
scalars. :meth:`ArgFiller.fill` returns a :class:`Filled`: the arguments, or the reason they
were refused (the runtime makes that a retryable failure of the task), with the requests the
endpoint was sent (0 for a cached reply), which the run counts. Nothing in the reply is executed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evolve import defaults
from evolve.llm.cache import ReplyCache, cached_call, default_cache_dir
from evolve.llm.client import ChatClient, OwnsClient
from evolve.llm.decide import SYSTEM, Refused, of_kind, render, response_format
from evolve.llm.factory import chat_client
from evolve.llm.reply import Rejected, extract_json
from evolve.llm.usage import Usage
from evolve.problems.htn.domain import Operator

MAX_TOKENS = 256


def checked(operator: Operator, text: str) -> dict[str, Any]:
    """The arguments in the reply; raises :class:`Refused` (``parse``, ``schema``)."""
    try:
        doc = extract_json(text)
    except Rejected as exc:
        raise Refused(exc.reason, exc.detail) from None
    if not isinstance(doc, dict):
        raise Refused("schema", "expected one JSON object of arguments")
    if operator.args is None:
        bad = [k for k, v in doc.items() if v is not None and not isinstance(v, (str, int, float, bool))]
        if bad:
            raise Refused("schema", f"{bad[0]} must be a string, number, true/false or null")
        return dict(doc)
    if set(doc) != set(operator.args):
        raise Refused("schema", f"expected exactly the arguments {sorted(operator.args)}, got {sorted(doc)}")
    for name, kind in operator.args.items():
        value = doc[name]
        if not of_kind(value, kind):
            raise Refused("schema", f"{name} must be a {kind}, got {type(value).__name__}")
    return dict(doc)


@dataclass(frozen=True)
class Filled:
    """One ask's outcome: ``args`` (``None`` when refused, then ``refused`` / ``detail`` say why),
    whether the reply came from the cache, and the requests sent to the endpoint for it."""

    args: dict[str, Any] | None
    cached: bool
    requests: int
    refused: str | None = None
    detail: str = ""


class ArgFiller(OwnsClient):
    """Fills prompted operators' arguments (see the module docstring)."""

    def __init__(self, client: ChatClient, *, cache: ReplyCache | None = None,
                 seed: int = defaults.SEED, response_format: str = "json_object") -> None:
        self.client = client
        self.cache = cache
        self.seed = seed
        self.format = response_format
        self.usage = Usage()

    def fill(self, operator: Operator, state: Mapping[str, Any], attempt: int) -> Filled:
        assert operator.prompt is not None
        names = f" with exactly {', '.join(operator.args)}" if operator.args else ""
        user = f"{render(operator.prompt, state)}\n\nAnswer with one JSON object{names}."
        messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]
        properties = {name: {"type": kind} for name, kind in (operator.args or {}).items()}
        schema = {"type": "object", "properties": properties, "required": list(properties),
                  "additionalProperties": operator.args is None}
        settings = {"temperature": 0.0, "max_tokens": MAX_TOKENS, "seed": self.seed + attempt,
                    "response_format": response_format(self.format, "arguments", schema)}
        entry, cached = cached_call(self.client, self.cache, self.usage, messages, settings)
        requests = 0 if cached else int(entry.get("attempts", 1))
        if "error" in entry:
            self.usage.call_failed(str(entry["error"]))
            return Filled(None, cached, requests, str(entry["error"]), str(entry.get("detail", ""))[:200])
        try:
            args = checked(operator, str(entry.get("text", "")))
        except Refused as exc:
            self.usage.judged(exc.reason)
            return Filled(None, cached, requests, exc.reason, exc.detail[:200])
        self.usage.judged(None)
        return Filled(args, cached, requests)


def make_arg_filler(base_url: str, model: str, *, timeout: float = defaults.LLM_TIMEOUT,
                    seed: int = defaults.SEED, extra_body: Mapping[str, Any] | None = None) -> ArgFiller:
    """An :class:`ArgFiller` for ``base_url`` (the key from the environment only, replies cached
    under the default cache folder); ``extra_body`` sent with each call."""
    client = chat_client(base_url, model, timeout=timeout, extra_body=extra_body)
    return ArgFiller(client, cache=ReplyCache(default_cache_dir()), seed=seed)
