"""The HTTP client and the reply cache, against a real server on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evolve.fitness.evaluation import Evaluation
from evolve.llm import CallError, ChatClient, LLMOperator, ReplyCache, cache_key, make_llm_operator
from evolve.llm.factory import api_key_from_env
from evolve.llm.operator import Job
from evolve.llm.testing import Scripted, ScriptedServer
from evolve.model.plan import Plan
from evolve.search.algorithm import Candidate

MESSAGES = [{"role": "user", "content": "say something useful"}]


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[ScriptedServer]:
    """A scripted server on 127.0.0.1 running the script the test passes indirectly."""
    with ScriptedServer(request.param) as running:
        yield running


def client_for(server: ScriptedServer, sleeps: list[float], **kwargs: Any) -> ChatClient:
    settings: dict[str, Any] = {"timeout": 1.0, "max_retries": 3, "backoff": 0.25}
    settings.update(kwargs)
    return ChatClient(server.url, "m", sleep=sleeps.append, **settings)


def ok(body: dict[str, Any], seen: int) -> Scripted:
    return Scripted("four words of text")


@pytest.mark.parametrize("server", [ok], indirect=True)
def test_a_reply_carries_text_usage_and_the_request_is_as_given(server: ScriptedServer) -> None:
    with client_for(server, []) as client:
        done = client.complete(MESSAGES, {"temperature": 0.2, "seed": 5})
    assert done.text == "four words of text" and done.attempts == 1
    assert done.prompt_tokens == 3 and done.completion_tokens == 4
    assert server.requests == [{"model": "m", "messages": MESSAGES, "temperature": 0.2, "seed": 5}]


def limited_twice(body: dict[str, Any], seen: int) -> Scripted:
    if seen == 0:
        return Scripted(status=429, headers={"Retry-After": "0.05"})
    if seen == 1:
        return Scripted(status=503)
    return Scripted("finally")


@pytest.mark.parametrize("server", [limited_twice], indirect=True)
def test_429_and_5xx_are_retried_with_backoff(server: ScriptedServer) -> None:
    sleeps: list[float] = []
    with client_for(server, sleeps) as client:
        done = client.complete(MESSAGES, {})
    assert done.text == "finally" and done.attempts == 3
    assert sleeps == [0.05, 0.5]  # Retry-After honoured, then backoff * 2**1


def always_500(body: dict[str, Any], seen: int) -> Scripted:
    return Scripted(status=500)


@pytest.mark.parametrize("server", [always_500], indirect=True)
def test_retries_end(server: ScriptedServer) -> None:
    sleeps: list[float] = []
    with client_for(server, sleeps, max_retries=2, max_backoff=0.3) as client, \
            pytest.raises(CallError) as caught:
        client.complete(MESSAGES, {})
    assert caught.value.kind == "http" and caught.value.attempts == 3
    assert sleeps == [0.25, 0.3]  # capped at max_backoff
    assert len(server.requests) == 3


def bad_request(body: dict[str, Any], seen: int) -> Scripted:
    return Scripted(status=400)


@pytest.mark.parametrize("server", [bad_request], indirect=True)
def test_client_errors_are_not_retried(server: ScriptedServer) -> None:
    with client_for(server, []) as client, pytest.raises(CallError) as caught:
        client.complete(MESSAGES, {})
    assert caught.value.kind == "http" and "HTTP 400" in caught.value.message
    assert len(server.requests) == 1


def hangs(body: dict[str, Any], seen: int) -> Scripted:
    return Scripted("too late", delay=30.0)


@pytest.mark.parametrize("server", [hangs], indirect=True)
def test_a_hang_ends_at_the_timeout_without_retry(server: ScriptedServer) -> None:
    began = time.perf_counter()
    with client_for(server, [], timeout=0.3) as client, pytest.raises(CallError) as caught:
        client.complete(MESSAGES, {})
    assert caught.value.kind == "timeout" and caught.value.attempts == 1
    assert 0.25 <= time.perf_counter() - began < 3.0
    assert len(server.requests) == 1


def not_chat(body: dict[str, Any], seen: int) -> Scripted:
    return Scripted(raw="<html>gateway says hello</html>")


@pytest.mark.parametrize("server", [not_chat], indirect=True)
def test_a_body_of_another_shape_is_a_protocol_error(server: ScriptedServer) -> None:
    with client_for(server, []) as client, pytest.raises(CallError) as caught:
        client.complete(MESSAGES, {})
    assert caught.value.kind == "protocol" and "gateway" in caught.value.message


def test_a_closed_port_is_a_connection_error_after_retries() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    sleeps: list[float] = []
    client = ChatClient(f"http://127.0.0.1:{port}/v1", "m", timeout=1.0, max_retries=1,
                        sleep=sleeps.append)
    with client, pytest.raises(CallError) as caught:
        client.complete(MESSAGES, {})
    assert caught.value.kind == "connection" and caught.value.attempts == 2


@pytest.mark.parametrize("server", [ok], indirect=True)
def test_the_key_comes_from_the_environment_and_goes_nowhere_else(
        server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVOLVE_LLM_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fallback")
    assert api_key_from_env() == "sk-fallback"
    monkeypatch.setenv("EVOLVE_LLM_API_KEY", "sk-secret-123")
    assert api_key_from_env() == "sk-secret-123"
    operator = make_llm_operator(server.url, "m", cache_dir=tmp_path)
    with operator:
        operator.client.complete(MESSAGES, {})
        entry = operator.call(operator_job(operator))
    assert server.auth == ["Bearer sk-secret-123", "Bearer sk-secret-123"]
    stored = "".join(p.read_text() for p in tmp_path.rglob("*.json"))
    assert stored and "sk-secret" not in stored and "sk-secret" not in json.dumps(entry)
    assert "sk-secret" not in json.dumps(operator.usage_summary())


def operator_job(operator: LLMOperator) -> Job:
    parent = Candidate(id="c0", plan=Plan(), hash="h", generation=0, evaluation=Evaluation())
    settings = {"temperature": 0.0}
    return Job(index=0, parent=parent, messages=MESSAGES, settings=settings,
               key=cache_key(operator.model, MESSAGES, settings), prompt_hash="p")


def test_cache_keys_follow_model_prompt_and_settings() -> None:
    base = cache_key("m", MESSAGES, {"temperature": 0.7, "seed": 1})
    assert base == cache_key("m", [dict(m) for m in MESSAGES], {"seed": 1, "temperature": 0.7})
    assert base != cache_key("m2", MESSAGES, {"temperature": 0.7, "seed": 1})
    assert base != cache_key("m", [{"role": "user", "content": "other"}],
                             {"temperature": 0.7, "seed": 1})
    assert base != cache_key("m", MESSAGES, {"temperature": 0.8, "seed": 1})
    assert base != cache_key("m", MESSAGES, {"temperature": 0.7, "seed": 2})


def test_cache_round_trip_and_damaged_entries(tmp_path: Path) -> None:
    cache = ReplyCache(tmp_path)
    key = cache_key("m", MESSAGES, {})
    assert cache.get(key) is None
    cache.put(key, {"text": "hello", "latency": 0.5})
    assert cache.get(key) == {"text": "hello", "latency": 0.5}
    assert list(tmp_path.rglob(".tmp-*")) == []
    cache.path(key).write_text("{half a record")
    assert cache.get(key) is None


def trickles(body: dict[str, Any], seen: int) -> Scripted:
    """A byte every 50 ms for a minute: never idle long enough to trip a per-read timeout."""
    return Scripted("x" * 1200, trickle=0.05)


@pytest.mark.parametrize("server", [trickles], indirect=True)
def test_the_deadline_bounds_the_whole_call_not_each_read(server: ScriptedServer) -> None:
    began = time.perf_counter()
    with client_for(server, [], timeout=0.5) as client, pytest.raises(CallError) as caught:
        client.complete(MESSAGES, {})
    assert caught.value.kind == "timeout" and "deadline" in caught.value.message
    assert time.perf_counter() - began < 10.0  # the body alone would take 60 s and more


def stalls_after_headers(body: dict[str, Any], seen: int) -> Scripted:
    return Scripted("late", trickle=60.0)


@pytest.mark.parametrize("server", [stalls_after_headers], indirect=True)
def test_a_read_blocked_past_the_deadline_is_cut(server: ScriptedServer) -> None:
    began = time.perf_counter()
    with client_for(server, [], timeout=0.5, read_timeout=60.0) as client, \
            pytest.raises(CallError) as caught:
        client.complete(MESSAGES, {})
    assert caught.value.kind == "timeout" and caught.value.attempts == 1
    assert time.perf_counter() - began < 10.0


def limited_slowly(body: dict[str, Any], seen: int) -> Scripted:
    return Scripted(status=429, headers={"Retry-After": "30"})


@pytest.mark.parametrize("server", [limited_slowly], indirect=True)
def test_backoff_counts_against_the_deadline(server: ScriptedServer) -> None:
    began = time.perf_counter()
    client = ChatClient(server.url, "m", timeout=0.5, max_retries=5)
    with client, pytest.raises(CallError) as caught:
        client.complete(MESSAGES, {})
    assert caught.value.kind == "timeout" and "HTTP 429" in caught.value.message
    assert len(server.requests) == 1 and time.perf_counter() - began < 10.0
