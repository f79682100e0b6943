"""Ctrl-C for a running campaign: stop within seconds with one line, a second Ctrl-C at once.

Letting ``KeyboardInterrupt`` unwind through Prefect took minutes: the terminal's SIGINT also
stops Prefect's temporary API server (same process group), and the engine then retries its
final state updates against the dead server, printing a traceback per retry. Stopping the
process instead is safe because every lake write is one atomic file publish: what a stopped
campaign leaves is exactly what a killed one leaves, and ``--resume`` continues it exactly.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any

EXIT_CODE = 130
"""The shell's code for a command ended by SIGINT (128 + 2)."""

GRACE_S = 3.0
"""How long the first Ctrl-C's tidying may take before the process ends anyway."""


def _say(text: str) -> None:
    # os.write, not print: a handler may run while the main thread is inside a write to
    # sys.stderr, and a buffered stream refuses re-entrant use.
    with contextlib.suppress(OSError, ValueError):
        os.write(sys.stderr.fileno(), text.encode())


class CampaignInterrupt:
    """Within its ``with`` block, SIGINT ends the process with :data:`EXIT_CODE`.

    The first SIGINT prints ``message`` on one line, runs the cleanups (each best effort, all
    within :data:`GRACE_S`) and exits; a second SIGINT exits at once.

    Args:
        message: the line printed on the first SIGINT.
        grace_s: time the cleanups get before the process exits regardless.

    """

    def __init__(self, message: str, grace_s: float = GRACE_S) -> None:
        self.message = message
        self.grace_s = grace_s
        self.cleanups: list[Callable[[], None]] = []
        self._stopping = False
        self._exiting = threading.Lock()
        self._previous: Any = None

    def __enter__(self) -> CampaignInterrupt:
        self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        signal.signal(signal.SIGINT, self._previous)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self._stopping:
            self._exit()
        self._stopping = True
        # The work runs beside the main thread, which may hold locks the cleanups need.
        threading.Thread(target=self._stop, name="evosyn-interrupt", daemon=True).start()

    def _stop(self) -> None:
        done = threading.Event()

        def tidy() -> None:
            for cleanup in self.cleanups:
                # Best effort: the process ends either way.
                with contextlib.suppress(Exception):
                    cleanup()
            done.set()

        threading.Thread(target=tidy, name="evosyn-interrupt-cleanup", daemon=True).start()
        done.wait(self.grace_s)
        self._exit()

    def _exit(self) -> None:
        # Whoever comes first says the line; a second Ctrl-C meanwhile just ends the process.
        if self._exiting.acquire(blocking=False):
            if sys.stderr.isatty():
                _say("\x1b[?25h")  # the progress display hides the cursor; give it back
            _say(f"{self.message}\n")
        os._exit(EXIT_CODE)


def end_prefect_runs(campaign_id: str, *also: str) -> None:
    """Mark the campaign's live Prefect runs Cancelled; stop Prefect's temporary server.

    A server's UI would otherwise show the runs running forever. Only a server named by
    ``PREFECT_API_URL`` is asked: the temporary one got the terminal's SIGINT too and is gone
    or going. ``also`` names more flow runs to end (an experiment's, around its campaigns).
    """
    if "prefect" not in sys.modules:
        return
    server_module = sys.modules.get("prefect.server.api.server")
    if server_module is not None:
        # Started by Prefect's client on first use, one per port; a SIGINT sent to this
        # process alone (not its group) would leave it running. Killed, not stopped: its
        # graceful shutdown under load prints tracebacks of cancelled database calls.
        for server in list(server_module.SubprocessASGIServer._instances.values()):
            process = server.server_process
            if process is not None and process.poll() is None:
                process.kill()
    from prefect.settings import PREFECT_API_URL

    if PREFECT_API_URL.value():
        _cancel_runs(campaign_id, also)


def _ours(name: str, prefix: str) -> bool:
    # A campaign's flow run is named by its id, its rounds "<id>-round-<r>", a learner run
    # dispatched or evaluated for it "<id>-train-r<r>" / "<id>-evaluate-r<r>".
    parts = ("-round-", "-train-r", "-evaluate-r")
    return name == prefix or name.startswith(tuple(prefix + p for p in parts))


def _cancel_runs(campaign_id: str, also: tuple[str, ...] = ()) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterId,
        FlowRunFilterName,
        FlowRunFilterState,
        FlowRunFilterStateType,
        TaskRunFilter,
        TaskRunFilterState,
        TaskRunFilterStateType,
    )
    from prefect.client.schemas.objects import StateType
    from prefect.states import Cancelled

    live = [StateType.PENDING, StateType.RUNNING, StateType.SCHEDULED]
    with get_client(sync_client=True) as client:
        ours = []
        for name in [campaign_id, *also]:
            if not name:
                continue
            runs = client.read_flow_runs(
                flow_run_filter=FlowRunFilter(
                    name=FlowRunFilterName(like_=name),
                    state=FlowRunFilterState(type=FlowRunFilterStateType(any_=live)),
                )
            )
            ours += [r for r in runs if _ours(r.name, name)]
        if not ours:
            return
        tasks = client.read_task_runs(
            flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[r.id for r in ours])),
            task_run_filter=TaskRunFilter(
                state=TaskRunFilterState(type=TaskRunFilterStateType(any_=live))
            ),
        )
        message = "interrupted (Ctrl-C)"
        for task in tasks:
            client.set_task_run_state(task.id, Cancelled(message=message), force=True)
        for run in ours:
            client.set_flow_run_state(run.id, Cancelled(message=message), force=True)
