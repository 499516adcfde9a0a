"""One call that builds the LLM operator from the settings the command line exposes.

The API key is read from the environment only (``EVOLVE_LLM_API_KEY``, then
``OPENAI_API_KEY``), never taken as an argument, so it cannot end up in shell
history, logs, events or the reply cache. Local servers need none. Once read
into the client, both variables are removed from this process's environment
(``scrub_env``): the evaluator's worker processes (joblib/loky, a local Dask
cluster, Ray) start later and inherit the environment, and a plugin objective
has no business holding the key.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evolve import defaults
from evolve.llm.cache import ReplyCache, default_cache_dir
from evolve.llm.client import ChatClient
from evolve.llm.modes import Mode
from evolve.llm.operator import LLMOperator, ResponseFormat, Sampling, TokenParam
from evolve.llm.prompt import Templates

API_KEY_ENV = ("EVOLVE_LLM_API_KEY", "OPENAI_API_KEY")


def api_key_from_env(names: str | Sequence[str] = API_KEY_ENV) -> str | None:
    """The first non-empty variable of ``names``, or ``None``."""
    for name in [names] if isinstance(names, str) else names:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return None


def scrub_api_keys(names: str | Sequence[str] = API_KEY_ENV) -> None:
    """Remove ``names`` (and the default key variables) from the environment, so no process
    started from here on inherits a key."""
    for name in {*([names] if isinstance(names, str) else names), *API_KEY_ENV}:
        os.environ.pop(name, None)


def make_llm_operator(
    base_url: str,
    model: str,
    *,
    api_key_env: str | Sequence[str] = API_KEY_ENV,
    max_calls: int | None = None,
    timeout: float = defaults.LLM_TIMEOUT,
    concurrency: int = defaults.LLM_CONCURRENCY,
    cache_dir: str | Path | None = None,
    use_cache: bool = True,
    cache_failures: bool = True,
    prompt_dir: str | Path | None = None,
    temperature: float = defaults.LLM_TEMPERATURE,
    max_tokens: int = defaults.LLM_MAX_TOKENS,
    top_p: float | None = None,
    response_format: ResponseFormat = defaults.LLM_RESPONSE_FORMAT,
    max_retries: int = defaults.LLM_MAX_RETRIES,
    backoff: float = defaults.LLM_BACKOFF,
    inspirations: int = defaults.LLM_INSPIRATIONS,
    mode: Mode = defaults.LLM_MODE,
    menu_size: int = defaults.LLM_MENU_SIZE,
    token_param: TokenParam = defaults.LLM_TOKEN_PARAM,
    menu_max_tokens: int = defaults.LLM_MENU_MAX_TOKENS,
    scrub_env: bool = True,
    extra_body: Mapping[str, Any] | None = None,
) -> LLMOperator:
    """An :class:`LLMOperator` talking to ``base_url`` (e.g. ``http://127.0.0.1:8080/v1``).

    ``cache_dir`` defaults to ``~/.cache/evolve/llm``; ``use_cache=False`` turns the
    cache off (then reruns call again and may differ). ``prompt_dir`` may hold a
    any of ``system.txt``, ``user.txt``, ``menu_system.txt``, ``menu_user.txt`` replacing
    the shipped templates. ``timeout`` bounds each whole call. ``scrub_env`` removes the key
    variables from ``os.environ`` once the key is read (see the module docstring). Close the
    operator (or use it in a ``with``) when the run ends.
    """
    api_key = api_key_from_env(api_key_env)
    if scrub_env:
        scrub_api_keys(api_key_env)
    client = ChatClient(base_url, model, api_key=api_key, timeout=timeout,
                        max_retries=max_retries, backoff=backoff, extra_body=extra_body)
    root = cache_dir if cache_dir is not None else default_cache_dir()
    cache = ReplyCache(root) if use_cache else None
    return LLMOperator(
        client,
        cache=cache,
        templates=Templates.load(prompt_dir),
        sampling=Sampling(temperature=temperature, max_tokens=max_tokens,
                          response_format=response_format, top_p=top_p, token_param=token_param,
                          menu_max_tokens=menu_max_tokens),
        max_calls=max_calls,
        concurrency=concurrency,
        inspirations=inspirations,
        cache_failures=cache_failures,
        mode=mode,
        menu_size=menu_size,
    )


def chat_client(base_url: str, model: str, *, timeout: float = defaults.LLM_TIMEOUT,
                extra_body: Mapping[str, Any] | None = None) -> ChatClient:
    """A client with the default retries, its key from the environment only (the small-model
    calls of an HTN run: hoisted decisions, argument filling); ``extra_body``: request fields
    sent with every call (``{"enable_thinking": false}``: a reasoning model answers the JSON
    without thousands of tokens of reasoning first)."""
    return ChatClient(base_url, model, api_key=api_key_from_env(API_KEY_ENV), timeout=timeout,
                      max_retries=defaults.LLM_MAX_RETRIES, backoff=defaults.LLM_BACKOFF,
                      extra_body=extra_body)
