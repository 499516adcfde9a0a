"""The on-disk reply cache: what makes an LLM-guided run reproducible and a rerun free.

An entry is keyed by a hash of (model, messages, sampling settings) and holds
the whole outcome of a call, including its latency and token counts, so a
rerun replays it exactly and writes the same events. Failed calls (a timeout,
an HTTP error after the retries) are outcomes too and are stored by default:
otherwise a rerun would call again, perhaps get an answer this time, and
diverge from the run it was meant to reproduce. Delete the folder, or use
another, to try again.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evolve.llm.client import CallError, ChatClient
from evolve.llm.usage import Usage


def canonical(data: object) -> str:
    """Stable JSON text: the same data always gives the same bytes, hence the same hash."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def cache_key(model: str, messages: Sequence[Mapping[str, str]],
              settings: Mapping[str, Any]) -> str:
    """The key of one call. The endpoint URL and the API key are left out on purpose: the same
    model answers the same way wherever it is served, and a key must never reach a file."""
    text = canonical({"model": model, "messages": list(messages), "settings": dict(settings)})
    return hashlib.sha256(text.encode()).hexdigest()


def prompt_hash(messages: Sequence[Mapping[str, str]]) -> str:
    """A short digest of the prompt alone, recorded in events to tell prompts apart."""
    return hashlib.sha256(canonical(list(messages)).encode()).hexdigest()[:16]


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/evolve/llm``, else ``~/.cache/evolve/llm``."""
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "evolve" / "llm"


class ReplyCache:
    """JSON files under ``root``, one per key, fanned out by the key's first two hex digits.

    Writes go to a temporary file renamed into place, so concurrent calls and an
    interrupted run never leave a half-written entry; an unreadable entry is
    treated as missing.
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            data = json.loads(self.path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def put(self, key: str, entry: Mapping[str, Any]) -> None:
        target = self.path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as stream:
                stream.write(canonical(dict(entry)))
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def call_entry(client: ChatClient, messages: Sequence[Mapping[str, str]],
               settings: Mapping[str, Any]) -> dict[str, Any]:
    """One call's whole outcome as a cache entry: the text, or the failure's kind and detail,
    with tokens, latency and attempts (a failure is an outcome too; see the module docstring)."""
    try:
        done = client.complete(messages, settings)
    except CallError as exc:
        return {"error": exc.kind, "detail": exc.message[:300], "prompt_tokens": 0, "completion_tokens": 0,
                "latency": round(exc.latency, 3), "attempts": exc.attempts}
    return {"text": done.text, "prompt_tokens": done.prompt_tokens,
            "completion_tokens": done.completion_tokens, "latency": round(done.latency, 3),
            "attempts": done.attempts}


def cached_call(client: ChatClient, cache: ReplyCache | None, usage: Usage,
                messages: Sequence[Mapping[str, str]],
                settings: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
    """The call's entry, from ``cache`` when it holds it (then nothing is sent), else made and
    stored; counted in ``usage`` either way. Returns the entry and whether it was cached."""
    key = cache_key(client.model, messages, client.request(settings))
    entry = cache.get(key) if cache is not None else None
    cached = entry is not None
    if entry is None:
        entry = call_entry(client, messages, settings)
        if cache is not None:
            cache.put(key, {"model": client.model, **entry})
    usage.called(cached=cached, prompt_tokens=int(entry.get("prompt_tokens", 0)),
                 completion_tokens=int(entry.get("completion_tokens", 0)),
                 attempts=0 if cached else int(entry.get("attempts", 0)),
                 latency=0.0 if cached else float(entry.get("latency", 0.0)))
    return entry, cached
