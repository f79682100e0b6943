"""Concurrency limits per model string, shared by every gateway of the process.

A self-hosted server (vLLM) never answers 429: it queues. Its saturation shows only as
latency, so each model string's limit adapts to it (AIMD): while replies come back near the
baseline latency of their kind (the calling role's, so long and short replies on one model
are not compared with each other) the limit grows by about one per round trip, up to the configured
``concurrency``; when a reply takes more than ``latency_tolerance`` times the baseline, or an
attempt fails with 429, 5xx or a timeout, the limit is halved (at most once per round trip,
so one burst of slow replies counts once), down to ``min_concurrency``.
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
    """How a model string's concurrency limit follows its latency.

    Attributes:
        min_concurrency: the limit never drops below this.
        latency_tolerance: a reply slower than this many times the baseline latency is a
            sign of queueing: the limit is decreased.
        decrease_factor: the limit is multiplied by this on a decrease.
        baseline_drift: share of the gap by which the baseline rises toward a slower reply
            (the baseline is the fastest latency seen, drifting up so a server that became
            slower for good is not punished for ever).

    """

    min_concurrency: int = 1
    latency_tolerance: float = 2.0
    decrease_factor: float = 0.5
    baseline_drift: float = 0.01


@dataclass
class _Adaptive:
    """The adaptive limit of one model string (guarded by the limiter's lock)."""

    settings: AIMDSettings
    limit: float
    # Baseline latency per kind of request (the calling role): a teacher's long replies and
    # a planner's short ones on one model are each compared with their own kind.
    baselines: dict[str, float] = field(default_factory=dict)
    hold_until: float = 0.0
    decreases: int = 0
    history: list[tuple[float, float]] = field(default_factory=list)


class ConcurrencyLimiter:
    """Counts requests in flight per model string and blocks callers over their limit.

    Each caller passes its own limit: it waits while the model already has that many requests
    in flight, whoever started them. Gateways of several roles that share a model therefore
    share its budget. When a caller also passes ``aimd`` settings, the model's limit adapts
    to latency and failures (reported with :meth:`observe`), never above the caller's limit.
    Waiters are admitted first come, first served, and a freed slot wakes only the waiter it
    admits: hundreds of threads waiting on one model (a round's synthesis chunks) would
    otherwise all wake, and fight for the GIL, at every reply.

    Args:
        clock: monotonic seconds (tests may pass their own).

    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self._in_flight: dict[str, int] = {}
        self._waiting: dict[str, deque[tuple[int, threading.Event]]] = {}
        self._adaptive: dict[str, _Adaptive] = {}

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

    def _cap(self, model: str, limit: int) -> int:
        state = self._adaptive.get(model)
        return limit if state is None else max(1, min(limit, int(state.limit)))

    @contextmanager
    def slot(self, model: str, limit: int, aimd: AIMDSettings | None = None) -> Iterator[None]:
        """Hold one of ``limit`` slots of ``model`` for the duration of the block.

        With ``aimd``, the model's limit adapts (see the module) between ``aimd``'s
        ``min_concurrency`` and ``limit``, starting at ``limit``.
        """
        if limit < 1:
            raise ValueError(f"concurrency limit must be at least 1, got {limit}")
        admitted: threading.Event | None = None
        with self._lock:
            if aimd is not None and model not in self._adaptive:
                self._adaptive[model] = _Adaptive(aimd, float(limit))
            queue = self._waiting.setdefault(model, deque())
            if not queue and self._in_flight.get(model, 0) < self._cap(model, limit):
                self._in_flight[model] = self._in_flight.get(model, 0) + 1
            else:
                admitted = threading.Event()
                queue.append((limit, admitted))
        if admitted is not None:
            try:
                admitted.wait()
            except BaseException:
                # Interrupted while waiting: give back a slot granted meanwhile, or the place.
                with self._lock:
                    if admitted.is_set():
                        self._release(model)
                    else:
                        self._waiting[model].remove((limit, admitted))
                raise
        try:
            yield
        finally:
            with self._lock:
                self._release(model)

    def observe(
        self,
        model: str,
        limit: int,
        *,
        latency_s: float | None = None,
        overloaded: bool = False,
        kind: str = "",
    ) -> None:
        """Report an attempt's outcome to ``model``'s adaptive limit (no-op if it has none).

        Args:
            model: the model string.
            limit: the caller's configured limit (the ceiling of additive increase).
            latency_s: wall time of a successful attempt.
            overloaded: the attempt failed in a way that says the server is overloaded
                (429, 5xx, timeout).
            kind: what kind of request it was (the role): latency is compared with the
                baseline of its kind only.

        """
        with self._lock:
            state = self._adaptive.get(model)
            if state is None:
                return
            now = self._clock()
            s = state.settings
            slow = False
            baseline = state.baselines.get(kind)
            if latency_s is not None and not overloaded:
                if baseline is None or latency_s < baseline:
                    state.baselines[kind] = latency_s
                else:
                    slow = latency_s > s.latency_tolerance * max(baseline, 1e-3)
                    state.baselines[kind] = baseline + (latency_s - baseline) * s.baseline_drift
            before = int(state.limit)
            if overloaded or slow:
                if now >= state.hold_until:
                    state.limit = max(float(s.min_concurrency), state.limit * s.decrease_factor)
                    state.decreases += 1
                    # Replies already in flight were sent under the old limit: one round trip
                    # of them says nothing new.
                    state.hold_until = now + (latency_s or baseline or 0.0)
            elif state.limit < limit:
                state.limit = min(float(limit), state.limit + 1.0 / max(state.limit, 1.0))
            if int(state.limit) != before:
                state.history.append((now, state.limit))
            self._admit(model)

    def _release(self, model: str) -> None:
        # Called with the lock held: free one slot and admit waiters, in order, that now fit.
        self._in_flight[model] -= 1
        self._admit(model)

    def _admit(self, model: str) -> None:
        # Called with the lock held.
        queue = self._waiting.get(model)
        while queue and self._in_flight.get(model, 0) < self._cap(model, queue[0][0]):
            _, event = queue.popleft()
            self._in_flight[model] = self._in_flight.get(model, 0) + 1
            event.set()


SHARED_LIMITER = ConcurrencyLimiter()
"""The process-wide limiter gateways use unless given another."""
