"""The gateway's parts without a server: settings, backoff, cache, errors, offline import."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import pytest

from evosyn.agents.gateway import (
    Completion,
    ConcurrencyLimiter,
    Gateway,
    GatewaySettings,
    ResponseCache,
    Usage,
    redact,
    request_digest,
    resolve_settings,
    retry_after,
)
from evosyn.config import LLMSection, ModelSettings


def test_role_settings_override_the_default() -> None:
    llm = LLMSection(
        default=ModelSettings(model="openai/gpt-4o", timeout=30, max_tokens=512),
        roles={"teacher": ModelSettings(model="hosted_vllm/qwen", api_base="http://gpu:8000/v1")},
    )
    teacher = resolve_settings(llm, "teacher")
    assert (teacher.model, teacher.api_base) == ("hosted_vllm/qwen", "http://gpu:8000/v1")
    assert (teacher.timeout, teacher.max_tokens) == (30, 512)
    reflector = resolve_settings(llm, "reflector")
    assert (reflector.model, reflector.api_base) == ("openai/gpt-4o", None)


@pytest.mark.parametrize(
    ("role", "temperature"),
    [("designer", 1.0), ("planner", 1.0), ("generator", 1.0), ("teacher", 0.0), ("x", 0.0)],
)
def test_temperature_defaults_by_role(role: str, temperature: float) -> None:
    llm = LLMSection(default=ModelSettings(model="openai/m"))
    assert resolve_settings(llm, role).temperature == temperature


def test_configured_temperature_wins() -> None:
    llm = LLMSection(
        default=ModelSettings(model="openai/m", temperature=0.2),
        roles={"planner": ModelSettings(temperature=0.7)},
    )
    assert resolve_settings(llm, "planner").temperature == 0.7
    assert resolve_settings(llm, "designer").temperature == 0.2
    assert resolve_settings(llm, "designer", temperature=0.0).temperature == 0.0


def test_missing_model_names_the_field() -> None:
    with pytest.raises(ValueError, match=r"llm\.roles\.teacher\.model"):
        resolve_settings(LLMSection(), "teacher")


def test_overrides_are_validated() -> None:
    llm = LLMSection(default=ModelSettings(model="openai/m"))
    assert resolve_settings(llm, "teacher", concurrency=3, cache=True).concurrency == 3
    with pytest.raises(ValueError, match="max_attempts"):
        resolve_settings(llm, "teacher", max_attempts=0)


def test_gateway_fields_added_to_model_settings_flow_through() -> None:
    # Once evosyn.config.ModelSettings has the gateway's knobs, they resolve per role too.
    class Wired(ModelSettings):
        concurrency: int | None = None
        cache: bool | None = None

    llm = LLMSection(
        default=Wired(model="openai/m", concurrency=4),
        roles={"teacher": Wired(cache=True)},
    )
    teacher = resolve_settings(llm, "teacher")
    assert (teacher.concurrency, teacher.cache) == (4, True)
    assert resolve_settings(llm, "planner").cache is None  # the default: on within a campaign


def test_backoff_is_full_jitter_under_a_cap_and_honours_retry_after() -> None:
    settings = GatewaySettings(model="openai/m", backoff_base_s=1.0, backoff_max_s=5.0)
    gateway = Gateway("teacher", settings, seed=1)
    waits = [gateway.backoff(attempt, None) for attempt in range(8) for _ in range(50)]
    assert all(0.0 <= w <= 5.0 for w in waits)
    assert max(waits[:50]) <= 1.0  # attempt 0 waits at most base
    assert len({round(w, 6) for w in waits}) > 100  # jittered, not fixed
    assert all(gateway.backoff(0, 3.0) >= 3.0 for _ in range(20))
    capped = Gateway("teacher", settings.model_copy(update={"retry_after_max_s": 2.0}))
    assert capped.backoff(0, 1000.0) <= 2.0


class _Response:
    def __init__(self, headers: dict[str, str]) -> None:
        self.headers = headers


class _HTTPFailure(Exception):
    def __init__(self, headers: dict[str, str]) -> None:
        super().__init__("failure")
        self.response = _Response(headers)


def test_retry_after_forms() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    assert retry_after(_HTTPFailure({"Retry-After": "2.5"})) == 2.5
    assert retry_after(_HTTPFailure({"retry-after-ms": "250", "Retry-After": "9"})) == 0.25
    date = format_datetime(now + timedelta(seconds=30), usegmt=True)
    assert retry_after(_HTTPFailure({"Retry-After": date}), now=now) == pytest.approx(30.0)
    assert retry_after(_HTTPFailure({"Retry-After": "soon"})) is None
    assert retry_after(_HTTPFailure({})) is None
    assert retry_after(ValueError("no response")) is None


def test_redact_hides_environment_secrets_and_key_shapes() -> None:
    env = {"ANTHROPIC_API_KEY": "anth-secret-value", "HOME": "/home/me"}
    text = "bad key anth-secret-value; header Bearer abc.def; sk-proj-ABCDEFGH12345 in /home/me"
    clean = redact(text, env)
    assert "anth-secret-value" not in clean
    assert "abc.def" not in clean
    assert "sk-proj-ABCDEFGH12345" not in clean
    assert "/home/me" in clean


def test_digest_covers_model_messages_tools_and_params() -> None:
    msgs = [{"role": "user", "content": "hi"}]
    base = request_digest("openai/m", msgs, None, {"temperature": 0.0, "seed": 1})
    assert base == request_digest("openai/m", msgs, None, {"seed": 1, "temperature": 0.0})
    assert base != request_digest("openai/n", msgs, None, {"temperature": 0.0, "seed": 1})
    assert base != request_digest(
        "openai/m", msgs, [{"type": "function"}], {"temperature": 0.0, "seed": 1}
    )
    assert base != request_digest("openai/m", msgs, None, {"temperature": 0.0, "seed": 2})
    other = [{"role": "user", "content": "hi!"}]
    assert base != request_digest("openai/m", other, None, {"temperature": 0.0, "seed": 1})


def test_cache_round_trip_and_bad_files(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c")
    digest = request_digest("openai/m", [], None, {})
    assert cache.get(digest, Completion) is None
    value = Completion(call_id="x", model="openai/m", text="hi", usage=Usage(tokens_in=1))
    path = cache.put(digest, value)
    assert path == cache.path(digest)
    assert cache.get(digest, Completion) == value
    path.write_text('{"not": "a completion"}', "utf-8")
    assert cache.get(digest, Completion) is None
    cache.put(digest, value)
    assert cache.get(digest, Completion) == value
    assert [p.name for p in path.parent.iterdir()] == [path.name]


def test_importing_litellm_does_not_fetch_the_price_map() -> None:
    env = {k: v for k, v in os.environ.items() if k != "LITELLM_LOCAL_MODEL_COST_MAP"}
    # Any attempt to reach the internet would fail fast against a dead proxy and be logged.
    env |= {"HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9"}
    done = subprocess.run(
        [sys.executable, "-c", "import evosyn, litellm; print(len(litellm.model_cost) > 100)"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"
    assert "cost map" not in done.stderr.lower()


def test_limiter_holds_the_limit_with_many_waiters_and_frees_every_slot() -> None:
    limiter = ConcurrencyLimiter()
    lock, now, peak, done = threading.Lock(), [0], [0], []
    gate = threading.Event()

    def call(i: int) -> None:
        with limiter.slot("m", 3):
            with lock:
                now[0] += 1
                peak[0] = max(peak[0], now[0])
            gate.wait()
            with lock:
                now[0] -= 1
                done.append(i)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(40)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 5
    while limiter.in_flight("m") < 3 and time.monotonic() < deadline:
        time.sleep(0.001)
    time.sleep(0.05)
    # Three hold a slot, 37 wait; another model is not held up by them.
    assert limiter.in_flight("m") == 3 and not done
    with limiter.slot("other", 1):
        assert limiter.in_flight("other") == 1
    gate.set()
    for t in threads:
        t.join(timeout=10)
    assert peak[0] == 3 and sorted(done) == list(range(40))
    assert limiter.in_flight("m") == 0


def test_limiter_admits_waiters_first_come_first_served() -> None:
    limiter = ConcurrencyLimiter()
    order: list[int] = []

    def call(i: int) -> None:
        with limiter.slot("m", 1):
            order.append(i)

    with limiter.slot("m", 1):
        threads = []
        for i in range(5):
            threads.append(threading.Thread(target=call, args=(i,)))
            threads[-1].start()
            time.sleep(0.02)  # queued before the next one starts
    for t in threads:
        t.join(timeout=10)
    assert order == [0, 1, 2, 3, 4]
