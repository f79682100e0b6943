"""The direct openai-SDK path and the litellm path give the same completions, rows and errors."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openai_server import OpenAIServer, Reply

from evosyn.agents.gateway import (
    ConcurrencyLimiter,
    ContextLengthError,
    FatalLLMError,
    Gateway,
)
from evosyn.agents.gateway.client import direct_model
from evosyn.config import LLMSection, ModelSettings

KEY = "sk-test-0123456789abcdefSECRET"
HELLO = [{"role": "user", "content": "hello there"}]
TOOL = {
    "type": "function",
    "function": {
        "name": "get_reservation",
        "description": "Look a reservation up.",
        "parameters": {"type": "object", "properties": {"id": {"type": "string"}}},
    },
}


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIServer]:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with OpenAIServer() as srv:
        yield srv


def gateway(server: OpenAIServer, tmp_path: Path, client: str, **kw: Any) -> Gateway:
    llm = LLMSection(
        default=ModelSettings(model="openai/test-model", api_base=server.url, timeout=5.0)
    )
    return Gateway.from_config(
        llm,
        "teacher",
        limiter=ConcurrencyLimiter(),
        seed=0,
        client=client,
        cache=False,
        backoff_base_s=0.01,
        cache_dir=str(tmp_path),
        **kw,
    )


def test_which_models_go_direct() -> None:
    assert direct_model("openai/x", "http://h/v1", "auto") == "x"
    assert direct_model("hosted_vllm/Qwen/Q", "http://h/v1", "auto") == "Qwen/Q"
    assert direct_model("openai/gpt-4o", None, "auto") is None  # OpenAI itself: litellm
    assert direct_model("anthropic/claude", "http://h", "auto") is None
    assert direct_model("openai/x", "http://h/v1", "litellm") is None


def run_script(server: OpenAIServer, gw: Gateway) -> list[Any]:
    """The same scripted exchanges through one path; what each returned or raised."""
    server.reset()
    server.script(
        Reply.text("fine"),
        Reply.tool_call("get_reservation", {"id": "ABC123"}, call_id="call_7"),
        Reply.rate_limited(retry_after=0.05),
        Reply.server_error(503),
        Reply.text("after retries"),
        Reply.context_length(),
        Reply.unauthorized(leak_key=True),
    )
    out: list[Any] = []
    for tools in (None, [TOOL], None):
        answer = gw.complete(HELLO, tools=tools, seed=1)
        out.append(answer.model_dump(exclude={"call_id"}))
    for expected in (ContextLengthError, FatalLLMError):
        with pytest.raises(expected) as caught:
            gw.complete(HELLO)
        assert KEY not in str(caught.value)
        out.append(
            (type(caught.value).__name__, caught.value.error_class, caught.value.status_code)
        )
    rows = gw.records("c", 1)
    out.append([(r.attempt, r.outcome, r.error_class, r.tokens_in, r.tokens_out) for r in rows])
    out.append(
        [(r.body.get("seed"), r.body.get("temperature"), r.body["model"]) for r in server.requests]
    )
    return out


def test_both_paths_agree(server: OpenAIServer, tmp_path: Path) -> None:
    direct = run_script(server, gateway(server, tmp_path, "auto"))
    via_litellm = run_script(server, gateway(server, tmp_path, "litellm"))
    assert direct == via_litellm
    errors = [entry for entry in direct if isinstance(entry, tuple)]
    assert errors == [
        ("ContextLengthError", "ContextWindowExceededError", 400),
        ("FatalLLMError", "AuthenticationError", 401),
    ]
    rows = direct[-2]
    assert [r[2] for r in rows[:5]] == [
        None,
        None,
        "RateLimitError",
        "ServiceUnavailableError",
        None,
    ]
