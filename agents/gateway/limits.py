"""Concurrency limits per model string, shared by every gateway of the process."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class ConcurrencyLimiter:
    """Counts requests in flight per model string and blocks callers over their limit.

    Each caller passes its own limit: it waits while the model already has that many requests
    in flight, whoever started them. Gateways of several roles that share a model therefore
    share its budget.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._in_flight: dict[str, int] = {}

    def in_flight(self, model: str) -> int:
        """Requests to ``model`` in flight now."""
        with self._cond:
            return self._in_flight.get(model, 0)

    @contextmanager
    def slot(self, model: str, limit: int) -> Iterator[None]:
        """Hold one of ``limit`` slots of ``model`` for the duration of the block."""
        if limit < 1:
            raise ValueError(f"concurrency limit must be at least 1, got {limit}")
        with self._cond:
            self._cond.wait_for(lambda: self._in_flight.get(model, 0) < limit)
            self._in_flight[model] = self._in_flight.get(model, 0) + 1
        try:
            yield
        finally:
            with self._cond:
                self._in_flight[model] -= 1
                self._cond.notify_all()


SHARED_LIMITER = ConcurrencyLimiter()
"""The process-wide limiter gateways use unless given another."""
