"""Run EvoSyn's flows with their Prefect tasks and sub-flows swapped for plain functions.

The crash/resume checks and the overhead benchmarks run the flows' own bodies (``.fn``) this
way: everything that exists only for Prefect (runs, states, artifacts) is skipped, and the
flows' code is followed as it changes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from types import ModuleType
from typing import Any
from unittest.mock import patch

from prefect.flows import Flow
from prefect.tasks import Task
from prefect.utilities.annotations import BaseAnnotation

Span = tuple[str, float, float]


def _bare(values: Iterable[Any]) -> list[Any]:
    """Arguments with Prefect's annotations (``opaque``, ``quote``) taken off, as Prefect does."""
    return [v.unwrap() if isinstance(v, BaseAnnotation) else v for v in values]


class PlainTask:
    """A Prefect task or flow stood in by its undecorated function; ``submit`` uses ``pool``.

    With ``spans``, every run appends (name, start, end) in ``time.perf_counter`` seconds.
    """

    def __init__(
        self,
        task: Task[..., Any] | Flow[..., Any],
        pool: ThreadPoolExecutor,
        spans: list[Span] | None = None,
    ) -> None:
        self.fn: Callable[..., Any] = task.fn
        self.name = str(task.name)
        self.pool = pool
        self.spans = spans

    def _run(self, *args: Any, **kwargs: Any) -> Any:
        args_, values = _bare(args), _bare(kwargs.values())
        start = time.perf_counter()
        try:
            return self.fn(*args_, **dict(zip(kwargs, values, strict=True)))
        finally:
            if self.spans is not None:
                self.spans.append((self.name, start, time.perf_counter()))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._run(*args, **kwargs)

    def with_options(self, **_: Any) -> PlainTask:
        return self

    def submit(self, *args: Any, **kwargs: Any) -> Future[Any]:
        return self.pool.submit(self._run, *args, **kwargs)


@contextmanager
def plain_flows(
    *modules: ModuleType, workers: int = 10_000, spans: list[Span] | None = None
) -> Iterator[ThreadPoolExecutor]:
    """Every Prefect task and flow the ``modules`` import, run as a plain function.

    ``workers`` defaults to no real limit, as Prefect's ``ThreadPoolTaskRunner()`` here (its
    threads start lazily). Round artifacts, a Prefect feature, are skipped.
    """
    from evosyn.flows import round as round_module

    with ThreadPoolExecutor(max_workers=workers) as pool, ExitStack() as stack:
        for module in modules:
            for name, value in vars(module).items():
                if isinstance(value, Task | Flow):
                    plain = PlainTask(value, pool, spans)
                    stack.enter_context(patch.object(module, name, plain))
        stack.enter_context(
            patch.object(round_module, "publish_round_artifacts", lambda *_a, **_k: None)
        )
        yield pool
