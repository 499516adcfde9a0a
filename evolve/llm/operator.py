"""The LLM operator: the engine's ``Proposer`` that asks a chat model for children.

For each child it is given, it picks a parent (rank-weighted, from the child's
own random stream ``SeedSequence(seed, spawn_key=(generation, index))``), builds
a deterministic prompt, and looks the call up in the reply cache. In ``patch``
mode the prompt asks for a plan patch; in ``menu`` mode (see
:mod:`evolve.llm.menu`) it lists pre-scored edits of the parent and asks for
the index of one. The calls that miss run concurrently, at most
``concurrency`` at a time; every reply is then judged in child order. A reply
that cannot become a child gives ``Offspring(plan=None, meta=...)``: the engine
makes that child with a random operator instead and records why in the event,
so a bad or absent model slows a run down but never breaks it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from evolve import defaults
from evolve.llm.cache import ReplyCache, cache_key, prompt_hash
from evolve.llm.client import CallError, ChatClient, OwnsClient
from evolve.llm.menu import (
    Menu,
    MenuPicks,
    choice_from_reply,
    draft_menu,
    menu_offspring,
    menu_schema,
    pick_parent,
)
from evolve.llm.modes import MODES, Mode, measured_small, starting_mode
from evolve.llm.modes import RESPONSE_FORMATS as RESPONSE_FORMATS  # re-exported: they live in
from evolve.llm.modes import TOKEN_PARAMS as TOKEN_PARAMS  # modes.py, light for the command line
from evolve.llm.modes import ResponseFormat as ResponseFormat
from evolve.llm.modes import TokenParam as TokenParam
from evolve.llm.prompt import Templates, build_menu_messages, build_messages, default_ranking
from evolve.llm.reply import Rejected, child_from_reply, patch_schema
from evolve.llm.usage import Usage
from evolve.model.errors import UsageError
from evolve.model.problem import Problem
from evolve.search.algorithm import Candidate
from evolve.search.loop import Offspring, ProposalContext
from evolve.search.ranking import Ranking


@dataclass(frozen=True)
class Sampling:
    """The sampling settings sent with every call (and part of the cache key).

    ``token_param`` names the request field of the completion limit: ``max_tokens`` for most
    servers, ``max_completion_tokens`` for the models that refuse the other (OpenAI's
    reasoning models). Menu replies are short, so they get ``menu_max_tokens`` when that is
    the smaller limit.
    """

    temperature: float = defaults.LLM_TEMPERATURE
    max_tokens: int = defaults.LLM_MAX_TOKENS
    response_format: ResponseFormat = defaults.LLM_RESPONSE_FORMAT
    top_p: float | None = None
    token_param: TokenParam = defaults.LLM_TOKEN_PARAM
    menu_max_tokens: int = defaults.LLM_MENU_MAX_TOKENS

    def __post_init__(self) -> None:
        if self.response_format not in RESPONSE_FORMATS:
            raise UsageError(f"response_format must be one of {', '.join(RESPONSE_FORMATS)}, "
                             f"got {self.response_format!r}")
        if self.token_param not in TOKEN_PARAMS:
            raise UsageError(f"token_param must be one of {', '.join(TOKEN_PARAMS)}, "
                             f"got {self.token_param!r}")
        if self.max_tokens < 1 or self.menu_max_tokens < 1:
            raise UsageError("max_tokens must be at least 1")

    def request(self, seed: int, name: str, schema: Mapping[str, Any],
                max_tokens: int | None = None) -> dict[str, Any]:
        """The request-body settings for one call: ``seed`` varies the sample per child, and
        ``schema`` (named ``name``) is the reply's shape for the JSON modes that take one."""
        limit = self.max_tokens if max_tokens is None else min(max_tokens, self.max_tokens)
        body: dict[str, Any] = {"temperature": self.temperature, self.token_param: limit,
                                "seed": seed}
        if self.top_p is not None:
            body["top_p"] = self.top_p
        if self.response_format == "json_schema":
            body["response_format"] = {"type": "json_schema", "json_schema": {
                "name": name, "schema": dict(schema)}}
        elif self.response_format == "json_object":
            body["response_format"] = {"type": "json_object"}
        elif self.response_format == "json_object_schema":
            body["response_format"] = {"type": "json_object", "schema": dict(schema)}
        return body


@dataclass(frozen=True)
class Job:
    """One child's call, fully determined before anything is sent (``menu``: in menu mode)."""

    index: int
    parent: Candidate
    messages: list[dict[str, str]]
    settings: dict[str, Any]
    key: str
    prompt_hash: str
    menu: Menu | None = None


class LLMOperator(OwnsClient):
    """Proposes children by plan patches or menu picks from an OpenAI-compatible chat endpoint.

    ``max_calls`` bounds the LLM proposals of the run (cache hits included, so a
    rerun consults exactly the same ones); children past it are left to the
    random operators. ``mode`` is ``patch``, ``menu`` or ``auto`` (see
    :mod:`evolve.llm.modes`). Use as a context manager, or call :meth:`close`.
    """

    name = "llm"

    def __init__(self, client: ChatClient, *, cache: ReplyCache | None = None,
                 templates: Templates | None = None, sampling: Sampling | None = None,
                 max_calls: int | None = None, concurrency: int = defaults.LLM_CONCURRENCY,
                 inspirations: int = defaults.LLM_INSPIRATIONS,
                 cache_failures: bool = True, mode: Mode = defaults.LLM_MODE,
                 menu_size: int = defaults.LLM_MENU_SIZE) -> None:
        if concurrency < 1:
            raise UsageError(f"concurrency must be at least 1, got {concurrency}")
        if max_calls is not None and max_calls < 0:
            raise UsageError(f"max_calls must be >= 0, got {max_calls}")
        if mode not in MODES:
            raise UsageError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        if menu_size < 2:
            raise UsageError(f"menu_size must be at least 2, got {menu_size}")
        self.client = client
        self.model = client.model
        self.cache = cache
        self.templates = templates or Templates.load()
        self.sampling = sampling or Sampling()
        self.max_calls = max_calls
        self.concurrency = concurrency
        self.inspirations = inspirations
        self.cache_failures = cache_failures
        self.mode = mode
        self.active: Literal["patch", "menu"] = starting_mode(mode, self.model)
        self.switched_after: int | None = None
        self.menu_size = menu_size
        self.usage = Usage()
        self.consulted = 0

    def usage_summary(self) -> dict[str, Any]:
        """Calls, cache hits, replies accepted and rejected by reason, tokens, the mode and, in
        menu mode, how the picks compare with a random pick of the same menus: for the summary."""
        return {"model": self.model, "max_calls": self.max_calls, "mode": self.mode,
                "active_mode": self.active, "switched_to_menu_after": self.switched_after,
                **self.usage.summary()}

    def checkpoint_state(self) -> dict[str, Any]:
        """What a resumed run needs to go on spending the same budget (the engine's hook)."""
        return {"consulted": self.consulted, "usage": self.usage.state(), "active": self.active,
                "switched_after": self.switched_after}

    def restore_checkpoint(self, state: dict[str, Any]) -> None:
        self.consulted = int(state["consulted"])
        self.usage.restore(state["usage"])
        self.active = "menu" if state.get("active") == "menu" else "patch"
        switched = state.get("switched_after")
        self.switched_after = None if switched is None else int(switched)

    def settle_mode(self) -> None:
        """In ``auto``, leave patches for the menu once they have been measured not to work."""
        if self.mode == "auto" and self.active == "patch" and measured_small(
                self.usage.accepted, self.usage.accepted + sum(self.usage.rejected.values())):
            self.active = "menu"
            self.switched_after = self.consulted

    def propose(self, problem: Problem, parents: Sequence[Candidate], indices: Sequence[int],
                generation: int, seed: int,
                context: ProposalContext | None = None) -> list[Offspring]:
        """One offspring per index, in order; a ``None`` plan makes the engine fall back.
        ``context`` is the search's (menu mode needs it to draft and score edits)."""
        if not parents:
            return [Offspring(None) for _ in indices]
        self.settle_mode()
        if self.active == "menu" and context is None:
            raise UsageError("menu mode needs the search's ProposalContext")
        jobs: list[Job | None] = []
        for index in indices:
            if self.max_calls is not None and self.consulted >= self.max_calls:
                self.usage.skipped()
                jobs.append(None)
                continue
            job = self.prepare(problem, parents, index, generation, seed, context)
            self.consulted += job is not None
            jobs.append(job)
        entries = self.fetch([job for job in jobs if job is not None])
        ranking = context.ranking if context is not None else None
        return [Offspring(None) if job is None else self.judge(problem, job, entries[job.key], ranking)
                for job in jobs]

    def prepare(self, problem: Problem, parents: Sequence[Candidate], index: int,
                generation: int, seed: int, context: ProposalContext | None = None) -> Job | None:
        """The call for child ``index``: its parent, prompt and sampling seed, and in menu mode
        its menu (``None`` when no edit of the parent can be drafted: no call is made)."""
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(generation, index)))
        parent = pick_parent(parents, rng)
        ranking = context.ranking if context is not None else default_ranking()
        menu: Menu | None = None
        if self.active == "menu" and context is not None:
            menu = draft_menu(problem, parent, context, rng, self.menu_size)
            if menu is None:
                return None
            count = len(menu.options)
            messages = build_menu_messages(problem, parent, menu.text(), count, self.templates,
                                           ranking, context.last_error)
            settings = self.sampling.request(int(rng.integers(2**31 - 1)), "menu_choice",
                                             menu_schema(count), self.sampling.menu_max_tokens)
        else:
            seen = {parent.hash}
            others: list[Candidate] = []
            for other in parents:
                if len(others) >= self.inspirations:
                    break
                if other.hash not in seen:
                    seen.add(other.hash)
                    others.append(other)
            messages = build_messages(problem, parent, others, self.templates, ranking,
                                      context.last_error if context is not None else None)
            settings = self.sampling.request(int(rng.integers(2**31 - 1)), "plan_patch",
                                             patch_schema(problem))
        return Job(index=index, parent=parent, messages=messages, settings=settings,
                   key=cache_key(self.model, messages, self.client.request(settings)),
                   prompt_hash=prompt_hash(messages),
                   menu=menu)

    def fetch(self, jobs: Sequence[Job]) -> dict[str, dict[str, Any]]:
        """The outcome of every job by cache key: from the cache, else from concurrent calls."""
        entries: dict[str, dict[str, Any]] = {}
        misses: dict[str, Job] = {}
        for job in jobs:
            cached = self.cache.get(job.key) if self.cache is not None else None
            if cached is not None and "error" in cached and not self.cache_failures:
                cached = None  # a failure stored by an earlier run: ask again
            if cached is not None:
                entries[job.key] = cached
                self.usage.called(cached=True, prompt_tokens=int(cached.get("prompt_tokens", 0)),
                                  completion_tokens=int(cached.get("completion_tokens", 0)),
                                  attempts=0, latency=0.0)
            else:
                misses.setdefault(job.key, job)
        if misses:
            workers = min(self.concurrency, len(misses))
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="evolve-llm") as pool:
                for key, entry in zip(misses, pool.map(self.call, misses.values()), strict=True):
                    entries[key] = entry
        return entries

    def call(self, job: Job) -> dict[str, Any]:
        """One call to the endpoint, its outcome stored in the cache (failures too, by default)."""
        entry: dict[str, Any]
        try:
            done = self.client.complete(job.messages, job.settings)
        except CallError as exc:
            entry = {"error": exc.kind, "detail": exc.message[:300], "prompt_tokens": 0,
                     "completion_tokens": 0, "latency": round(exc.latency, 3),
                     "attempts": exc.attempts}
        else:
            entry = {"text": done.text, "prompt_tokens": done.prompt_tokens,
                     "completion_tokens": done.completion_tokens, "latency": round(done.latency, 3),
                     "attempts": done.attempts, "finish_reason": done.finish_reason}
        self.usage.called(cached=False, prompt_tokens=entry["prompt_tokens"],
                          completion_tokens=entry["completion_tokens"],
                          attempts=entry["attempts"], latency=entry["latency"])
        if self.cache is not None and ("text" in entry or self.cache_failures):
            self.cache.put(job.key, {"model": self.model, **entry})
        return entry

    def judge(self, problem: Problem, job: Job, entry: Mapping[str, Any],
              ranking: Ranking | None = None) -> Offspring:
        """The child a reply describes, or a ``None`` plan with the reason it was rejected."""
        meta: dict[str, Any] = {
            "model": self.model, "mode": "patch" if job.menu is None else "menu",
            "prompt_hash": job.prompt_hash, "parent": job.parent.id,
            "tokens": {"prompt": entry.get("prompt_tokens", 0),
                       "completion": entry.get("completion_tokens", 0)},
            "latency_s": entry.get("latency", 0.0), "attempts": entry.get("attempts", 0),
        }
        if "error" in entry:
            self.usage.call_failed(str(entry["error"]))
            meta.update(accepted=False, rejected=str(entry["error"]),
                        detail=entry.get("detail", ""))
            return Offspring(None, meta={"llm": meta})
        text = str(entry.get("text", ""))
        try:
            if job.menu is not None:
                choice, reason = choice_from_reply(text, len(job.menu.options))
            else:
                child, reason = child_from_reply(problem, job.parent.plan, text)
        except Rejected as exc:
            self.usage.judged(exc.reason)
            meta.update(accepted=False, rejected=exc.reason, detail=exc.detail[:300])
            return Offspring(None, meta={"llm": meta})
        self.usage.judged(None)
        meta.update(accepted=True, reason=reason)
        if job.menu is not None:
            order = ranking or default_ranking()
            self.usage.picked(MenuPicks.outcome(job.menu, choice, order))
            meta["best_choice"] = job.menu.best_choice(order)
            return menu_offspring(job.menu, choice, meta, "llm")
        return Offspring(child, parents=(job.parent.id,), operator="llm", meta={"llm": meta})
