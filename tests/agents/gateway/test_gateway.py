"""The gateway against a local OpenAI-compatible server over real HTTP (no internet, no key)."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openai_server import Faults, OpenAIServer, Reply

from evosyn.agents.gateway import (
    Completion,
    ConcurrencyLimiter,
    ContextLengthError,
    FatalLLMError,
    Gateway,
    RetryableLLMError,
)
from evosyn.config import LLMSection, ModelSettings
from evosyn.records import LLMCall
from evosyn.storage import Lake
from evosyn.storage.sql import query
from evosyn.tasks.lake_step import Calls, flush_calls

KEY = "sk-test-0123456789abcdefSECRET"
HELLO = [{"role": "user", "content": "hello there"}]


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIServer]:
    """A fresh scriptable server, with a dummy OpenAI key in the environment."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with OpenAIServer() as srv:
        yield srv


def make_gateway(
    server: OpenAIServer,
    tmp_path: Path,
    role: str = "teacher",
    model: str = "openai/test-model",
    limiter: ConcurrencyLimiter | None = None,
    **overrides: Any,
) -> Gateway:
    llm = LLMSection(default=ModelSettings(model=model, api_base=server.url, timeout=5.0))
    overrides.setdefault("backoff_base_s", 0.01)
    overrides.setdefault("cache_dir", str(tmp_path / "cache"))
    return Gateway.from_config(
        llm, role, limiter=limiter or ConcurrencyLimiter(), seed=0, **overrides
    )


def rows(gateway: Gateway) -> list[LLMCall]:
    return gateway.records("c1", 1)


def test_success_returns_text_and_counts_tokens(server: OpenAIServer, tmp_path: Path) -> None:
    gateway = make_gateway(server, tmp_path)
    answer = gateway.complete(HELLO)
    assert isinstance(answer, Completion)
    assert answer.text == "hello there"
    assert answer.finish_reason == "stop"
    assert (answer.usage.tokens_in, answer.usage.tokens_out) == (2, 2)
    assert answer.cached is False
    [row] = rows(gateway)
    assert (row.outcome, row.attempt, row.role, row.model) == (
        "ok",
        0,
        "teacher",
        "openai/test-model",
    )
    assert (row.tokens_in, row.tokens_out) == (2, 2)
    assert row.call_id == answer.call_id
    assert row.cost is None  # the test model is not in litellm's price map
    assert row.error_class is None
    body = server.requests[0].body
    assert body["model"] == "test-model"
    assert body["temperature"] == 0.0


def test_sampling_roles_default_to_temperature_one(server: OpenAIServer, tmp_path: Path) -> None:
    make_gateway(server, tmp_path, role="planner").complete(HELLO)
    make_gateway(server, tmp_path, role="planner", max_tokens=7).complete(HELLO, seed=3)
    first, second = (r.body for r in server.requests)
    assert first["temperature"] == 1.0
    assert "max_tokens" not in first
    assert (second["max_tokens"], second["seed"]) == (7, 3)


def test_tool_call_reply_is_plain_dicts(server: OpenAIServer, tmp_path: Path) -> None:
    tool = {
        "type": "function",
        "function": {
            "name": "get_reservation",
            "description": "Look a reservation up.",
            "parameters": {"type": "object", "properties": {"id": {"type": "string"}}},
        },
    }
    server.script(Reply.tool_call("get_reservation", {"id": "ABC123"}, call_id="call_7"))
    answer = make_gateway(server, tmp_path).complete(HELLO, tools=[tool])
    assert answer.text is None
    assert answer.finish_reason == "tool_calls"
    assert answer.tool_calls == [
        {
            "id": "call_7",
            "type": "function",
            "function": {"name": "get_reservation", "arguments": '{"id": "ABC123"}'},
        }
    ]
    assert server.requests[0].body["tools"][0]["function"]["name"] == "get_reservation"


def test_rate_limit_honours_retry_after(server: OpenAIServer, tmp_path: Path) -> None:
    server.script(
        Reply.rate_limited(retry_after=0.3), Reply.rate_limited(retry_after=0.3), Reply.text("ok")
    )
    gateway = make_gateway(server, tmp_path)
    assert gateway.complete(HELLO).text == "ok"
    times = [r.at for r in server.requests]
    assert len(times) == 3
    assert all(b - a >= 0.3 for a, b in itertools.pairwise(times))
    got = rows(gateway)
    assert [(r.attempt, r.outcome, r.error_class) for r in got] == [
        (0, "error", "RateLimitError"),
        (1, "error", "RateLimitError"),
        (2, "ok", None),
    ]
    assert len({r.call_id for r in got}) == 1


def test_server_errors_are_retried(server: OpenAIServer, tmp_path: Path) -> None:
    server.script(Reply.server_error(500), Reply.server_error(503), Reply.text("fine"))
    gateway = make_gateway(server, tmp_path)
    assert gateway.complete(HELLO).text == "fine"
    assert server.request_count == 3
    assert [r.outcome for r in rows(gateway)] == ["error", "error", "ok"]
    assert rows(gateway)[1].error_class == "ServiceUnavailableError"


@pytest.mark.parametrize(
    ("reply", "error_type", "status", "error_class"),
    [
        (Reply.unauthorized(leak_key=False), FatalLLMError, 401, "AuthenticationError"),
        (Reply.context_length(), ContextLengthError, 400, "ContextWindowExceededError"),
        (Reply(status=400, error_message="bad field"), FatalLLMError, 400, "BadRequestError"),
        (Reply(status=403, error_message="forbidden"), FatalLLMError, 403, None),
        (Reply(status=404, error_message="no such model"), FatalLLMError, 404, "NotFoundError"),
    ],
)
def test_errors_that_cannot_succeed_are_not_retried(
    server: OpenAIServer,
    tmp_path: Path,
    reply: Reply,
    error_type: type[FatalLLMError],
    status: int,
    error_class: str | None,
) -> None:
    server.script(reply, Reply.text("never reached"))
    gateway = make_gateway(server, tmp_path)
    with pytest.raises(error_type) as caught:
        gateway.complete(HELLO)
    assert server.request_count == 1
    assert caught.value.status_code == status
    assert caught.value.attempts == 1
    if error_class is not None:
        assert caught.value.error_class == error_class
    assert "teacher call to openai/test-model failed after 1 attempt(s)" in str(caught.value)
    assert reply.error_message.split()[0] in str(caught.value)
    [row] = rows(gateway)
    assert (row.outcome, row.error_class) == ("error", caught.value.error_class)


def test_timeout_is_retried(server: OpenAIServer, tmp_path: Path) -> None:
    server.script(Reply.slow(2.0), Reply.text("in time"))
    gateway = make_gateway(server, tmp_path, timeout=0.3)
    assert gateway.complete(HELLO).text == "in time"
    first, second = rows(gateway)
    assert (first.outcome, first.error_class) == ("error", "Timeout")
    assert 0.25 <= first.latency_s < 1.5
    assert second.outcome == "ok"


def test_attempts_are_bounded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with OpenAIServer(faults=Faults(p_server_error=1.0)) as failing:
        gateway = make_gateway(failing, tmp_path, max_attempts=3)
        with pytest.raises(RetryableLLMError) as caught:
            gateway.complete(HELLO)
        assert failing.request_count == 3
    assert caught.value.attempts == 3
    assert caught.value.status_code == 500
    assert "after 3 attempt(s)" in str(caught.value)
    assert [r.attempt for r in rows(gateway)] == [0, 1, 2]
    assert {r.outcome for r in rows(gateway)} == {"error"}


def test_cache_hit_skips_the_server(server: OpenAIServer, tmp_path: Path) -> None:
    gateway = make_gateway(server, tmp_path, cache=True)
    first = gateway.complete(HELLO)
    again = gateway.complete(HELLO)
    assert server.request_count == 1
    assert again.cached is True
    assert (again.text, again.usage) == (first.text, first.usage)
    assert again.call_id != first.call_id
    # Another role's gateway with the same settings reads the same cache folder.
    other = make_gateway(server, tmp_path, cache=True)
    assert other.complete(HELLO).cached is True
    assert server.request_count == 1
    # A different message or sampling parameter is a different request.
    gateway.complete([{"role": "user", "content": "something else"}])
    gateway.complete(HELLO, temperature=0.5)
    assert server.request_count == 3
    outcomes = [(r.outcome, r.tokens_in, r.tokens_out, r.cost) for r in rows(gateway)]
    assert outcomes == [
        ("ok", 2, 2, None),
        ("cached", 0, 0, 0.0),
        ("ok", 2, 2, None),
        ("ok", 2, 2, None),
    ]
    files = list((tmp_path / "cache").rglob("*"))
    assert len([f for f in files if f.suffix == ".json"]) == 3
    assert not [f for f in files if f.suffix == ".tmp"]


def test_cache_off_always_calls(server: OpenAIServer, tmp_path: Path) -> None:
    gateway = make_gateway(server, tmp_path)
    gateway.complete(HELLO)
    gateway.complete(HELLO)
    assert server.request_count == 2
    assert not (tmp_path / "cache").exists()


def test_errors_are_not_cached(server: OpenAIServer, tmp_path: Path) -> None:
    server.script(Reply.unauthorized(leak_key=False))
    gateway = make_gateway(server, tmp_path, cache=True)
    with pytest.raises(FatalLLMError):
        gateway.complete(HELLO)
    assert gateway.complete(HELLO).cached is False
    assert server.request_count == 2


def test_concurrency_limit_is_never_exceeded(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    limiter = ConcurrencyLimiter()
    with OpenAIServer(default=Reply(echo=True, delay_s=0.15)) as slow:
        # Two roles sharing one model share its limit.
        gateways = [
            make_gateway(slow, tmp_path, role=role, limiter=limiter, concurrency=2)
            for role in ("teacher", "verifier")
        ]
        errors: list[BaseException] = []

        def call(i: int) -> None:
            try:
                gateways[i % 2].complete([{"role": "user", "content": f"n{i}"}])
            except BaseException as exc:  # surfaced below
                errors.append(exc)

        threads = [threading.Thread(target=call, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        assert not errors
        assert slow.request_count == 8
        assert slow.max_in_flight == 2
    assert limiter.in_flight("openai/test-model") == 0


def test_api_key_never_in_rows_or_errors(server: OpenAIServer, tmp_path: Path) -> None:
    server.script(Reply.unauthorized(leak_key=True), Reply.rate_limited(0.0), Reply.text("ok"))
    gateway = make_gateway(server, tmp_path)
    with pytest.raises(FatalLLMError) as caught:
        gateway.complete(HELLO)
    gateway.complete(HELLO)
    # The key did reach the server (litellm read it from the environment) ...
    assert server.requests[0].authorization == f"Bearer {KEY}"
    # ... and the server quoted it back, but nothing of ours repeats it.
    text = f"{caught.value!s} {caught.value!r} {caught.value.args}"
    assert KEY not in text
    assert "***" in str(caught.value)
    assert caught.value.__cause__ is None
    assert all(KEY not in r.model_dump_json() for r in rows(gateway))
    [key] = flush_calls(Lake(tmp_path / "lake"), Calls([gateway], "c1", 1, "gw-keys"))
    assert KEY.encode() not in (tmp_path / "lake" / key).read_bytes()


def test_rows_are_written_to_the_lake_and_read_back(server: OpenAIServer, tmp_path: Path) -> None:
    lake = Lake(tmp_path / "lake")
    server.script(Reply.server_error(), Reply.text("one"))
    gateway = make_gateway(server, tmp_path, role="reflector")
    gateway.complete(HELLO, call_id="call-a")
    assert gateway.pending == 2
    flush_calls(lake, Calls([gateway], "c1", 2, "r2"))
    assert gateway.pending == 0
    assert flush_calls(lake, Calls([gateway], "c1", 2, "r2")) == []
    back = lake.read(LLMCall, "c1", 2)
    assert [(r.call_id, r.attempt, r.outcome, r.role) for r in back] == [
        ("call-a", 0, "error", "reflector"),
        ("call-a", 1, "ok", "reflector"),
    ]
    assert (back[1].tokens_in, back[1].tokens_out) == (2, 1)
    assert back[0].error_class == "InternalServerError"
    # The summary query of docs/llm.md runs over the catalog.
    columns, table = query(
        lake,
        "SELECT role, model, count(*) AS attempts, "
        "count(*) FILTER (WHERE outcome = 'error') AS errors, "
        "sum(tokens_in) AS tokens_in, sum(tokens_out) AS tokens_out "
        "FROM llm_calls GROUP BY ALL ORDER BY attempts DESC",
    )
    assert columns == ["role", "model", "attempts", "errors", "tokens_in", "tokens_out"]
    assert table == [("reflector", "openai/test-model", 2, 1, 2, 1)]
    # Later attempts flushed under the same batch name add a file; none replaces another.
    gateway.complete(HELLO, call_id="call-b")
    flush_calls(lake, Calls([gateway], "c1", 2, "r2"))
    assert sorted(r.call_id for r in lake.read(LLMCall, "c1", 2)) == ["call-a", "call-a", "call-b"]


def test_cost_is_recorded_for_priced_models(server: OpenAIServer, tmp_path: Path) -> None:
    gateway = make_gateway(server, tmp_path, model="openai/gpt-4o-mini")
    answer = gateway.complete(HELLO)
    assert answer.cost is not None and answer.cost > 0
    assert rows(gateway)[0].cost == answer.cost


def test_chat_completions_without_v1(server: OpenAIServer, tmp_path: Path) -> None:
    llm = LLMSection(
        default=ModelSettings(model="openai/test-model", api_base=f"http://127.0.0.1:{server.port}")
    )
    gateway = Gateway.from_config(llm, "teacher", limiter=ConcurrencyLimiter())
    assert gateway.complete(HELLO).text == "hello there"
    assert server.requests[0].path == "/chat/completions"


def test_streaming_is_refused(server: OpenAIServer, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="stream"):
        make_gateway(server, tmp_path).complete(HELLO, stream=True)
    assert server.request_count == 0


def test_unwritable_cache_does_not_lose_the_answer(server: OpenAIServer, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x", "utf-8")
    gateway = make_gateway(server, tmp_path, cache=True, cache_dir=str(blocker))
    assert gateway.complete(HELLO).text == "hello there"
    assert gateway.complete(HELLO).cached is False
    assert server.request_count == 2


def test_overlapping_flushes_write_every_attempt_once(server: OpenAIServer, tmp_path: Path) -> None:
    # Synthesis chunks run in parallel threads on one gateway, each flushing when it ends.
    lake = Lake(tmp_path / "lake")
    gateway = make_gateway(server, tmp_path, role="teacher")

    def chunk(k: int) -> None:
        for i in range(10):
            gateway.complete(HELLO, call_id=f"call-{k}-{i}")
            if i % 3 == 2:
                flush_calls(lake, Calls([gateway], "c1", 1, f"chunk-{k}"))
        flush_calls(lake, Calls([gateway], "c1", 1, f"chunk-{k}"))

    threads = [threading.Thread(target=chunk, args=(k,)) for k in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    ids = [r.call_id for r in lake.read(LLMCall, "c1", 1)]
    assert sorted(ids) == sorted(f"call-{k}-{i}" for k in range(6) for i in range(10))
    assert gateway.pending == 0
