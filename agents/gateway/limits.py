"""Concurrency limits per model string, shared by every gateway of the process.

A self-hosted server (vLLM) never answers 429: it queues, and its saturation shows only as
latency. So each model string's limit adapts (AIMD), between ``min_concurrency`` and the
configured ``concurrency``:

- the *baseline* of a kind of request (a role at an endpoint) is a low quantile of its recent
  replies' latencies (a window of ``window`` replies, its first ``warmup`` replies left out),
  so it follows the endpoint as it is now, faster or slower, rather than the fastest reply
  ever seen; each sample keeps the requests in flight when it was sent (its *load*);
- a reply is a sign of queueing when it took more than ``latency_tolerance`` times the
  baseline *and* was sent at a higher load than the baseline's, by no less than its latency
  grew (queueing makes latency grow at most in proportion to the load; growth beyond that,
  at no less than the baseline's load, means the requests themselves got longer, or the
  server slower for everyone: the window starts again from that reply instead of throttling);
- a sign of queueing, or an attempt that failed with 429, 5xx, a timeout or no connection,
  multiplies the limit by ``decrease_factor``, unless the attempt was sent before the last
  decrease (it was sent under the old limit, which that decrease answered: a burst counts
  once);
- every other reply adds 1 / limit, about one slot per round trip.

A server whose latency grows with its batch (vLLM's continuous batching: a full batch is
slower per request, but serves more of them) is therefore not throttled when the whole
window was taken at full load, and a server that only queues (latency in proportion to the
load) is held near the load it serves without queueing.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass(frozen=True)
class AIMDSettings:
    """How a model string's concurrency limit follows its latency and failures.

    Attributes:
        min_concurrency: the limit never drops below this.
        latency_tolerance: a reply slower than this many times its kind's baseline latency,
            sent at a higher load than the baseline's, is a sign of queueing.
        decrease_factor: the limit is multiplied by this on a decrease.
        window: recent replies per kind of request the baseline is drawn from.
        baseline_quantile: which quantile of the window's latencies is the baseline.
        warmup: first replies of each kind left out of its window (connection set-up,
            a cold server).
        min_samples: replies in a kind's window before its latency is judged.

    """

    min_concurrency: int = 1
    latency_tolerance: float = 2.0
    decrease_factor: float = 0.5
    window: int = 64
    baseline_quantile: float = 0.1
    warmup: int = 2
    min_samples: int = 3


@dataclass
class _Kind:
    """Recent replies of one kind of request: ``(load, latency)``, oldest first."""

    seen: int = 0
    samples: deque[tuple[int, float]] = field(default_factory=deque)


@dataclass
class _Adaptive:
    """The adaptive limit of one model string (guarded by the limiter's lock)."""

    settings: AIMDSettings
    limit: float
    kinds: dict[str, _Kind] = field(default_factory=dict)
    # When the limit last decreased: attempts sent before then were sent under the old limit.
    decreased_at: float = float("-inf")
    decreases: int = 0
    history: list[tuple[float, float]] = field(default_factory=list)


class ConcurrencyLimiter:
    """Counts requests in flight per model string and blocks callers over their limit.

    Each caller passes its own limit: it waits while the model already has that many requests
    in flight, whoever started them. Gateways of several roles that share a model therefore
    share its budget. When a caller also passes ``aimd`` settings, the model's limit adapts
    to latency and failures (reported with :meth:`observe`), never above the caller's limit.
    Waiters are admitted first come, first served, those that continue an exchange under way
    (``resumes``: a repair turn, a conversation's next turn) before those that start one, and a
    freed slot wakes only the waiter it admits: hundreds of threads waiting on one model (a
    round's synthesis chunks) would otherwise all wake, and fight for the GIL, at every reply.

    Args:
        clock: monotonic seconds (tests may pass their own).

    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self._in_flight: dict[str, int] = {}
        # Per model, the waiters that resume an exchange, then those that start one.
        self._waiting: dict[str, tuple[_Queue, _Queue]] = {}
        self._adaptive: dict[str, _Adaptive] = {}
        # The load each admitted waiter was admitted at, until it picks it up.
        self._loads: dict[threading.Event, int] = {}

    def in_flight(self, model: str) -> int:
        """Requests to ``model`` in flight now."""
        with self._lock:
            return self._in_flight.get(model, 0)

    def limit(self, model: str) -> int | None:
        """The adaptive limit of ``model`` now, or None when it does not adapt."""
        with self._lock:
            state = self._adaptive.get(model)
            return None if state is None else int(state.limit)

    def history(self, model: str) -> list[tuple[float, float]]:
        """``(time, limit)`` after each change of ``model``'s adaptive limit, oldest first."""
        with self._lock:
            state = self._adaptive.get(model)
            return [] if state is None else list(state.history)

    def baseline(self, model: str, kind: str = "") -> float | None:
        """The baseline latency of ``kind`` on ``model`` now; None before it is judged."""
        with self._lock:
            state = self._adaptive.get(model)
            recent = None if state is None else state.kinds.get(kind)
            if state is None or recent is None:
                return None
            base = _baseline(recent, state.settings)
            return None if base is None else base[1]

    def forget(self, model: str | None = None) -> None:
        """Drop what ``model``'s adaptive limit (every model's: None) has learned."""
        with self._lock:
            for name in list(self._adaptive) if model is None else [model]:
                self._adaptive.pop(name, None)
                self._admit(name)

    def _cap(self, model: str, limit: int) -> int:
        state = self._adaptive.get(model)
        return limit if state is None else max(1, min(limit, int(state.limit)))

    @contextmanager
    def slot(
        self, model: str, limit: int, aimd: AIMDSettings | None = None, resumes: bool = False
    ) -> Iterator[int]:
        """Hold one of ``limit`` slots of ``model`` for the duration of the block.

        With ``aimd``, the model's limit adapts (see the module) between ``aimd``'s
        ``min_concurrency`` and ``limit``, starting at ``limit``. ``resumes``: the request
        continues an exchange under way, and goes before waiting requests that start one.
        Yields the requests in flight to ``model`` once this one was admitted, itself
        included (its load).
        """
        if limit < 1:
            raise ValueError(f"concurrency limit must be at least 1, got {limit}")
        admitted: threading.Event | None = None
        with self._lock:
            if aimd is not None and model not in self._adaptive:
                self._adaptive[model] = _Adaptive(aimd, float(limit))
            resuming, starting = self._waiting.setdefault(model, (deque(), deque()))
            queue = resuming if resumes else starting
            ahead = resuming if resumes else resuming or starting
            if not ahead and self._in_flight.get(model, 0) < self._cap(model, limit):
                self._in_flight[model] = load = self._in_flight.get(model, 0) + 1
            else:
                admitted = threading.Event()
                queue.append((limit, admitted))
        if admitted is not None:
            try:
                admitted.wait()
                load = self._loads.pop(admitted)
            except BaseException:
                # Interrupted while waiting: give back a slot granted meanwhile, or the place.
                with self._lock:
                    if admitted.is_set():
                        self._loads.pop(admitted, None)
                        self._release(model)
                    else:
                        queue.remove((limit, admitted))
                raise
        try:
            yield load
        finally:
            with self._lock:
                self._release(model)

    def observe(
        self,
        model: str,
        limit: int,
        *,
        latency_s: float | None = None,
        load: int | None = None,
        overloaded: bool = False,
        cause: str = "",
        kind: str = "",
    ) -> str | None:
        """Report an attempt's outcome to ``model``'s adaptive limit (no-op if it has none).

        Args:
            model: the model string.
            limit: the caller's configured limit (the ceiling of additive increase).
            latency_s: wall time of the attempt.
            load: requests in flight to ``model`` when the attempt was sent, itself included
                (default: those in flight now, plus one).
            overloaded: the attempt failed in a way that says the server is overloaded
                (429, 5xx, timeout).
            cause: what the failure was (for the returned note).
            kind: what kind of request it was (the role at its endpoint): latency is
                compared with the baseline of its kind only.

        Returns:
            When the limit changed, a note saying how and why (for the attempt's
            ``llm_calls`` row); else None.

        """
        with self._lock:
            state = self._adaptive.get(model)
            if state is None:
                return None
            now = self._clock()
            s = state.settings
            if load is None:
                load = self._in_flight.get(model, 0) + 1
            why = f"overloaded ({cause})" if overloaded and cause else None
            if overloaded:
                why = why or "overloaded"
            elif latency_s is not None:
                why = self._judge(state, kind, max(latency_s, 0.0), max(load, 1))
            before = int(state.limit)
            if why is not None:
                # An attempt sent before the last decrease was sent under the old limit: the
                # decrease already answered it (so a burst of slow replies counts once).
                if now - (latency_s or 0.0) >= state.decreased_at:
                    state.limit = max(float(s.min_concurrency), state.limit * s.decrease_factor)
                    state.decreases += 1
                    state.decreased_at = now
                else:
                    why = None
            elif state.limit < limit:
                state.limit = min(float(limit), state.limit + 1.0 / max(state.limit, 1.0))
            after = int(state.limit)
            if after != before:
                state.history.append((now, state.limit))
                self._admit(model)
                return f"adaptive concurrency {before} -> {after}" + (f": {why}" if why else "")
            return None

    @staticmethod
    def _judge(state: _Adaptive, kind: str, latency: float, load: int) -> str | None:
        """Add a reply to its kind's window; why it is a sign of queueing, else None."""
        s = state.settings
        recent = state.kinds.setdefault(kind, _Kind())
        recent.seen += 1
        if recent.seen <= s.warmup:
            return None
        verdict = None
        base = _baseline(recent, s)
        if base is not None:
            base_load, base_latency = base
            ratio = latency / max(base_latency, 1e-3)
            if ratio > s.latency_tolerance:
                if load > base_load and ratio <= 2.0 * load / base_load:
                    verdict = (
                        f"{latency:.2f}s at {load} in flight, {ratio:.1f}x the baseline "
                        f"{base_latency:.2f}s at {base_load}"
                    )
                elif load >= base_load and ratio > 2.0 * load / base_load:
                    # Slower than any queue at this load explains: the requests got longer or
                    # the server slower for everyone. Learn it again from here. (A slow reply
                    # sent at a lower load says little: in a burst, the order requests reach
                    # the server in is not the order they were admitted in.)
                    recent.samples.clear()
        recent.samples.append((load, latency))
        while len(recent.samples) > s.window:
            recent.samples.popleft()
        return verdict

    def _release(self, model: str) -> None:
        # Called with the lock held: free one slot and admit waiters, in order, that now fit.
        self._in_flight[model] -= 1
        self._admit(model)

    def _admit(self, model: str) -> None:
        # Called with the lock held: the first waiter that fits, resuming ones first.
        while True:
            queue = next(
                (
                    q
                    for q in self._waiting.get(model, ())
                    if q and self._in_flight.get(model, 0) < self._cap(model, q[0][0])
                ),
                None,
            )
            if queue is None:
                return
            _, event = queue.popleft()
            self._in_flight[model] = self._loads[event] = self._in_flight.get(model, 0) + 1
            event.set()


_Queue = deque[tuple[int, threading.Event]]
"""Waiters for one model's slots, in order: each one's own limit and the event admitting it."""


def _baseline(recent: _Kind, s: AIMDSettings) -> tuple[int, float] | None:
    """``(load, latency)`` of the window's baseline reply, or None while it is too short."""
    if len(recent.samples) < s.min_samples:
        return None
    ordered = sorted(recent.samples, key=lambda sample: sample[1])
    return ordered[int(s.baseline_quantile * (len(ordered) - 1))]


SHARED_LIMITER = ConcurrencyLimiter()
"""The process-wide limiter gateways use unless given another."""
