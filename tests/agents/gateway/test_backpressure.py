"""Backpressure: the adaptive per-model limit and the circuit breaker, over real HTTP."""

from __future__ import annotations

import statistics
import threading
from pathlib import Path
from typing import Any

import pytest
from openai_server import Batching, OpenAIServer, Reply, Saturation

from evosyn.agents.gateway import AIMDSettings, ConcurrencyLimiter, Gateway
from evosyn.config import LLMSection, ModelSettings
from evosyn.records import LLMCall

pytestmark = pytest.mark.heavy

MODEL = "openai/test-model"


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")


def gateway(
    server: OpenAIServer, tmp_path: Path, limiter: ConcurrencyLimiter, **kw: Any
) -> Gateway:
    llm = LLMSection(default=ModelSettings(model=MODEL, api_base=server.url, timeout=10.0))
    kw.setdefault("backoff_base_s", 0.01)
    return Gateway.from_config(
        llm, "teacher", limiter=limiter, seed=0, cache=False, cache_dir=str(tmp_path), **kw
    )


def hammer(gw: Gateway, threads: int, calls: int) -> list[LLMCall]:
    """``threads`` callers making ``calls`` calls each; the gateway's rows in start order."""
    errors: list[BaseException] = []

    def run(t: int) -> None:
        for i in range(calls):
            try:
                gw.complete([{"role": "user", "content": f"t{t} c{i}"}])
            except BaseException as exc:  # surfaced below
                errors.append(exc)

    workers = [threading.Thread(target=run, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=120)
    assert not errors
    return sorted(gw.records("c", 1), key=lambda r: r.started_at)


def test_the_queue_stays_short_when_a_queueing_server_saturates(tmp_path: Path) -> None:
    # The server runs 4 requests at once for 0.2 s and queues the rest, never answering 429.
    load = Saturation(capacity=4, service_s=0.2)
    queued: dict[bool, float] = {}
    for adaptive in (False, True):
        limiter = ConcurrencyLimiter()
        with OpenAIServer(saturation=load) as server:
            gw = gateway(server, tmp_path, limiter, concurrency=32, adaptive_concurrency=adaptive)
            # A round starts with a few requests, one at a time: the limiter learns the
            # latency at a low load there. (Started all at once from cold, every reply is sent
            # at the full load, and queueing cannot be told from longer requests by latency;
            # on a busy machine the 32 threads' first calls were sent together that way.)
            for i in range(4):
                gw.complete([{"role": "user", "content": f"ramp {i}"}])
            rows = hammer(gw, threads=32, calls=5)
            arrivals = sorted(server.requests, key=lambda r: r.at)
        assert [r.outcome for r in rows] == ["ok"] * 164
        # What the server saw, not the client's clock: how many requests were in it (served
        # or queued) when each of the second half arrived. A slow client sends fewer at once,
        # never more, so a busy test machine cannot make the adapted run look worse.
        settled = arrivals[len(arrivals) // 2 :]
        queued[adaptive] = statistics.median(r.in_flight for r in settled)
        if adaptive:
            # The limit came down from 32 (toward the server's capacity).
            assert min([32.0, *(limit for _, limit in limiter.history(MODEL))]) <= 16
    # A fixed limit of 32 keeps nearly 28 requests queued behind the 4 served. Adapted, the
    # limit saws between the latency tolerance (2x the service time: 4 served, about 4 queued)
    # and about twice that, as the baseline follows the queued replies: medians 10 to 17 in
    # the server against 31 to 32 with the fixed limit, idle or busy.
    assert queued[False] > 6 * load.capacity, queued
    assert queued[True] < 0.7 * queued[False], queued


def test_a_constant_latency_server_keeps_the_limit_at_the_cap(tmp_path: Path) -> None:
    # A fast warm-up (the first replies in 10 ms), then 3 s whatever the load: no queueing.
    # (3 s, not 1: on a busy test machine the client alone can add seconds to a reply, and a
    # reply twice its baseline at a higher load is queueing; at 2 s a run of `make test` whose
    # pytest took 12.6 min instead of 10 saw the limit halved once.)
    limiter = ConcurrencyLimiter()
    with OpenAIServer(default=Reply.echo_user(delay_s=3.0)) as server:
        server.script(*[Reply.text("warm")] * 6)
        gw = gateway(server, tmp_path, limiter, concurrency=8)
        rows = hammer(gw, threads=8, calls=3)
        # Never halved (8 at once on an idle machine; a busy one may start a thread late).
        assert server.max_in_flight > 4
    assert [r.outcome for r in rows] == ["ok"] * 24
    assert limiter.limit(MODEL) == 8 and not limiter.history(MODEL)
    assert all(r.note is None for r in rows)


def test_a_server_slower_in_a_full_batch_is_not_throttled(tmp_path: Path) -> None:
    # vLLM-like: a request alone takes 0.25 s, one in a full batch of 8 twice as long, but
    # the full batch serves four times as many per second: the limit should stay near 8.
    limiter = ConcurrencyLimiter()
    batching = Batching(max_batch=8, service_s=0.25, full_slowdown=2.0)
    with OpenAIServer(batching=batching) as server:
        gw = gateway(server, tmp_path, limiter, concurrency=8)
        rows = hammer(gw, threads=8, calls=10)
    assert [r.outcome for r in rows] == ["ok"] * 80
    # Settled without collapsing: never below half the cap, back at it in the end.
    assert min([8.0, *(limit for _, limit in limiter.history(MODEL))]) >= 4
    assert (limiter.limit(MODEL) or 0) >= 7
    # Served in full batches: most of the second half arrived with the batch (nearly) full.
    arrivals = sorted(server.requests, key=lambda r: r.at)
    assert statistics.median(r.in_flight for r in arrivals[40:]) >= 6


def test_rate_limits_halve_the_limit_and_it_grows_back(tmp_path: Path) -> None:
    limiter = ConcurrencyLimiter()
    # Replies in 0.5 s: at 0.05 s a busy `make test` (pytest 13.7 min) added enough client time
    # to one reply (0.13 s at 8 in flight) to read as queueing and halve the limit.
    with OpenAIServer(default=Reply.echo_user(delay_s=0.5)) as server:
        gw = gateway(server, tmp_path, limiter, concurrency=8)
        hammer(gw, threads=8, calls=2)  # the baseline
        server.script(Reply.rate_limited(retry_after=0.05))
        gw.complete([{"role": "user", "content": "one 429"}])
        assert limiter.limit(MODEL) == 4
        rows = hammer(gw, threads=8, calls=12)
    history = [limit for _, limit in limiter.history(MODEL)]
    assert history[0] == 4.0 and history[-1] == 8.0  # halved, then one slot at a time back
    assert limiter.limit(MODEL) == 8
    notes = [r.note for r in gw.records("c", 1) if r.note]
    assert notes[0] == "adaptive concurrency 8 -> 4: overloaded (RateLimitError 429)"
    assert notes[1:] == [f"adaptive concurrency {n} -> {n + 1}" for n in range(4, 8)]
    assert [r.outcome for r in rows].count("error") == 1 and len(rows) == 16 + 2 + 96


def settle(
    limiter: ConcurrencyLimiter, n: int, latency: float, load: int, kind: str = "", cap: int = 16
) -> None:
    """``n`` replies of ``latency`` sent at ``load`` (the first fill warm-up and window)."""
    for _ in range(n):
        limiter.observe(MODEL, cap, latency_s=latency, load=load, kind=kind)


def test_aimd_halves_on_queueing_and_overload_and_grows_back() -> None:
    now = [0.0]
    limiter = ConcurrencyLimiter(clock=lambda: now[0])
    settings = AIMDSettings(min_concurrency=2, latency_tolerance=2.0)
    with limiter.slot(MODEL, 16, settings):
        pass
    assert limiter.limit(MODEL) == 16
    settle(limiter, 5, latency=1.0, load=2)  # two warm-up replies, then the baseline
    assert limiter.baseline(MODEL) == 1.0
    limiter.observe(MODEL, 16, latency_s=1.5, load=8)  # within tolerance
    assert limiter.limit(MODEL) == 16
    note = limiter.observe(MODEL, 16, latency_s=3.0, load=8)  # slower with the load: halve
    assert limiter.limit(MODEL) == 8
    assert note == (
        "adaptive concurrency 16 -> 8: 3.00s at 8 in flight, 3.0x the baseline 1.00s at 2"
    )
    # Sent before that decrease (under the old limit): counted once.
    assert limiter.observe(MODEL, 16, latency_s=3.0, load=8) is None
    assert limiter.limit(MODEL) == 8
    now[0] = 10.0
    note = limiter.observe(MODEL, 16, overloaded=True, cause="RateLimitError 429")
    assert note == "adaptive concurrency 8 -> 4: overloaded (RateLimitError 429)"
    for _ in range(3):
        now[0] += 10.0
        limiter.observe(MODEL, 16, overloaded=True)
    assert limiter.limit(MODEL) == 2  # never below min_concurrency
    settle(limiter, 40, latency=1.0, load=2)
    # Additive: about one more per limit's worth of good replies.
    assert 6 <= (limiter.limit(MODEL) or 0) <= 9
    settle(limiter, 2000, latency=1.0, load=2)
    assert limiter.limit(MODEL) == 16  # never above the configured limit


def test_the_baseline_follows_the_endpoint_not_the_fastest_reply() -> None:
    limiter = ConcurrencyLimiter(clock=lambda: 100.0)
    with limiter.slot(MODEL, 16, AIMDSettings()):
        pass
    # A fast warm-up at low load, then the real latency at full load: 100x slower, far more
    # than queueing at 4x the load explains, so the baseline is learnt again, not throttled.
    settle(limiter, 6, latency=0.01, load=4)
    settle(limiter, 40, latency=1.0, load=16)
    assert limiter.limit(MODEL) == 16 and not limiter.history(MODEL)
    assert limiter.baseline(MODEL) == 1.0
    # A slower reply at the baseline's own load is a longer request, not a queue.
    settle(limiter, 3, latency=2.5, load=16)
    assert limiter.limit(MODEL) == 16


def test_the_warm_up_replies_are_not_the_baseline() -> None:
    limiter = ConcurrencyLimiter(clock=lambda: 0.0)
    with limiter.slot(MODEL, 16, AIMDSettings(warmup=2)):
        pass
    settle(limiter, 2, latency=0.05, load=1)  # a cold start's first replies: left out
    settle(limiter, 3, latency=1.0, load=1)
    assert limiter.baseline(MODEL) == 1.0


def test_each_kind_of_request_is_compared_with_its_own_baseline() -> None:
    limiter = ConcurrencyLimiter(clock=lambda: 0.0)
    with limiter.slot(MODEL, 8, AIMDSettings()):
        pass
    settle(limiter, 5, latency=0.5, load=1, kind="planner@http://a/v1", cap=8)  # short replies
    settle(limiter, 5, latency=6.0, load=1, kind="teacher@http://a/v1", cap=8)  # long ones
    assert limiter.limit(MODEL) == 8
    limiter.observe(MODEL, 8, latency_s=13.0, load=4, kind="teacher@http://a/v1")  # queueing
    assert limiter.limit(MODEL) == 4
    assert limiter.baseline(MODEL, "teacher@http://a/v1") == 6.0


def test_a_lowered_limit_holds_callers_back_and_a_raised_one_admits_them() -> None:
    limiter = ConcurrencyLimiter()
    settings = AIMDSettings()
    entered = threading.Semaphore(0)
    release = threading.Event()

    def hold() -> None:
        with limiter.slot(MODEL, 4, settings):
            entered.release()
            release.wait(10)

    with limiter.slot(MODEL, 4, settings):
        limiter.observe(MODEL, 4, latency_s=1.0)
        limiter.observe(MODEL, 4, overloaded=True)  # 4 -> 2: one more may enter
        workers = [threading.Thread(target=hold) for _ in range(3)]
        for w in workers:
            w.start()
        assert entered.acquire(timeout=5)
        assert not entered.acquire(timeout=0.2)
        assert limiter.in_flight(MODEL) == 2
        for _ in range(20):
            limiter.observe(MODEL, 4, latency_s=1.0)  # grows back to 4: the others enter
        assert entered.acquire(timeout=5) and entered.acquire(timeout=5)
        assert limiter.in_flight(MODEL) == 4
        release.set()
    for w in workers:
        w.join(timeout=5)
    assert limiter.in_flight(MODEL) == 0


def test_circuit_breaker_pauses_the_role_and_records_why(tmp_path: Path) -> None:
    with OpenAIServer() as server:
        # Three failures open the breaker; the probe after the pause fails and reopens it.
        server.script(*[Reply.server_error(503)] * 4, Reply.text("back"))
        gw = gateway(
            server,
            tmp_path,
            ConcurrencyLimiter(),
            breaker_failures=3,
            breaker_pause_s=0.3,
            max_attempts=6,
        )
        assert gw.complete([{"role": "user", "content": "hi"}]).text == "back"
        assert not gw.breaker_open
        times = [r.at for r in server.requests]
    rows = gw.records("c", 1)
    assert [r.outcome for r in rows] == ["error"] * 4 + ["ok"]
    notes = [r.note or "" for r in rows]
    # The first 503 halves the adaptive limit (the others were sent after it: each halves).
    assert notes[0] == "adaptive concurrency 8 -> 4: overloaded (ServiceUnavailableError 503)"
    assert "circuit breaker" not in notes[0] + notes[1]
    assert "circuit breaker opened" in notes[2] and "circuit breaker opened" in notes[3]
    assert "circuit breaker" not in notes[4]
    assert "circuit breaker opened: 3 consecutive transient failures" in notes[2]
    assert "ServiceUnavailableError 503" in notes[2]
    assert "teacher paused 0.3s" in notes[2]
    # Paused: the probe and the call after it waited out the pause each time.
    assert times[3] - times[2] >= 0.3
    assert times[4] - times[3] >= 0.3


def test_fatal_errors_do_not_open_the_breaker(tmp_path: Path) -> None:
    with OpenAIServer() as server:
        server.script(*[Reply.context_length()] * 3)
        gw = gateway(server, tmp_path, ConcurrencyLimiter(), breaker_failures=2)
        for _ in range(3):
            with pytest.raises(Exception, match="context"):
                gw.complete([{"role": "user", "content": "long"}])
        assert not gw.breaker_open


def test_a_dead_server_fails_calls_fast_once_the_breaker_is_open(tmp_path: Path) -> None:
    import time

    from openai_server import Faults

    with OpenAIServer(faults=Faults(p_server_error=1.0)) as server:
        # One attempt per call: waiting out a pause would be a retry, so held-back calls fail.
        gw = gateway(
            server,
            tmp_path,
            ConcurrencyLimiter(),
            breaker_failures=3,
            breaker_pause_s=30,
            max_attempts=1,
        )
        started = time.monotonic()
        for _ in range(6):
            with pytest.raises(Exception, match="failed after 1 attempt"):
                gw.complete([{"role": "user", "content": "hi"}])
        assert time.monotonic() - started < 10
        assert server.request_count == 3
    rows = gw.records("c", 1)
    assert [r.error_class for r in rows] == ["InternalServerError"] * 3 + ["CircuitOpenError"] * 3
    assert "circuit breaker opened" in (rows[2].note or "")
    assert all(r.note is None for r in rows[3:])


def test_a_request_that_resumes_an_exchange_is_admitted_before_new_ones() -> None:
    limiter = ConcurrencyLimiter()
    order: list[str] = []

    def wait(name: str, resumes: bool) -> threading.Thread:
        def run() -> None:
            with limiter.slot(MODEL, 1, resumes=resumes):
                order.append(name)

        thread = threading.Thread(target=run)
        thread.start()
        return thread

    with limiter.slot(MODEL, 1):  # the one slot is taken: everyone below queues
        threads = []
        for name, resumes in [("new-1", False), ("new-2", False), ("repair", True)]:
            threads.append(wait(name, resumes))
            # Each waiter is in the queue before the next one comes.
            for _ in range(200):
                if len(order) == 0 and _queued(limiter) == len(threads):
                    break
                threading.Event().wait(0.01)
    for thread in threads:
        thread.join(timeout=5)
    # The repair turn went first; the new requests kept their order.
    assert order == ["repair", "new-1", "new-2"]
    assert limiter.in_flight(MODEL) == 0


def _queued(limiter: ConcurrencyLimiter) -> int:
    with limiter._lock:
        return sum(len(q) for q in limiter._waiting.get(MODEL, ()))
