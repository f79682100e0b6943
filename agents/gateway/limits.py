"""Concurrency limits per model string, shared by every gateway of the process."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager


class ConcurrencyLimiter:
    """Counts requests in flight per model string and blocks callers over their limit.

    Each caller passes its own limit: it waits while the model already has that many requests
    in flight, whoever started them. Gateways of several roles that share a model therefore
    share its budget. Waiters are admitted first come, first served, and a freed slot wakes
    only the waiter it admits: hundreds of threads waiting on one model (a round's synthesis
    chunks) would otherwise all wake, and fight for the GIL, at every reply.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._in_flight: dict[str, int] = {}
        self._waiting: dict[str, deque[tuple[int, threading.Event]]] = {}

    def in_flight(self, model: str) -> int:
        """Requests to ``model`` in flight now."""
        with self._lock:
            return self._in_flight.get(model, 0)

    @contextmanager
    def slot(self, model: str, limit: int) -> Iterator[None]:
        """Hold one of ``limit`` slots of ``model`` for the duration of the block."""
        if limit < 1:
            raise ValueError(f"concurrency limit must be at least 1, got {limit}")
        admitted: threading.Event | None = None
        with self._lock:
            queue = self._waiting.setdefault(model, deque())
            if not queue and self._in_flight.get(model, 0) < limit:
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

    def _release(self, model: str) -> None:
        # Called with the lock held: free one slot and admit waiters, in order, that now fit.
        self._in_flight[model] -= 1
        queue = self._waiting.get(model)
        while queue and self._in_flight[model] < queue[0][0]:
            _, event = queue.popleft()
            self._in_flight[model] += 1
            event.set()


SHARED_LIMITER = ConcurrencyLimiter()
"""The process-wide limiter gateways use unless given another."""
