"""An experiment's campaigns on several processes at once (``evosyn experiment run --workers``).

A campaign is CPU-bound Python: in one process the interpreter lock keeps a sweep of 160
campaigns on one core. Campaigns share nothing but the lake, whose writes are atomic per-batch
file publishes with no lock between writers (:mod:`evosyn.storage.lake`), so each worker is the
same ``experiment run`` command given the campaign ids it plays. Every campaign's rows depend
on its config and seed alone, so they are those of a one-process run.

The parent hands the not-yet-finished campaigns out round-robin, starts one Prefect server for
all workers when none is named (each worker would otherwise start its own on the same database),
reads their progress from their standard output, and on Ctrl-C passes one SIGINT to each worker
(which stops as a lone ``experiment run`` does) before it stops itself.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import IO

EVENT = "evosyn-arm"
"""First field of the lines a worker prints for each campaign it starts or finishes."""

PARENT = "EVOSYN_EXPERIMENT_PARENT"
"""Environment variable holding a worker's parent process id."""

STOP_S = 8.0
"""How long workers get to stop after a Ctrl-C (each ends within its own 3 s grace)."""


DEFAULT_MAX = 8
"""The most workers a run starts unless told (each holds ~0.6 GB at the sweep's size)."""


def default_workers() -> int:
    """One worker per core this process may use, at most :data:`DEFAULT_MAX`."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(DEFAULT_MAX, cores))


def event_line(event: str, campaign_id: str) -> str:
    """The line a worker prints when it starts (``start``) or finishes (``done``) a campaign."""
    return f"{EVENT}\t{event}\t{campaign_id}"


def share(campaign_ids: Sequence[str], workers: int) -> list[list[str]]:
    """``campaign_ids`` dealt round-robin to at most ``workers`` non-empty shares."""
    n = max(1, min(workers, len(campaign_ids)))
    return [list(campaign_ids[k::n]) for k in range(n)]


@dataclass
class _Worker:
    process: subprocess.Popen[str]
    stderr: IO[str]

    def last_error(self) -> str:
        """The worker's last non-empty line of standard error (its one-line failure)."""
        self.stderr.seek(0)
        lines = [ln.strip() for ln in self.stderr.read().splitlines() if ln.strip()]
        return lines[-1] if lines else f"exit status {self.process.returncode}"


class WorkerFailed(RuntimeError):
    """A worker process ended non-zero; the message is its last line of standard error."""


class CampaignPool:
    """Worker processes, each running ``command + [--campaign-ids, its share]``.

    Args:
        command: the ``experiment run`` command line every worker repeats.
        on_event: called with (event, campaign id) for every line a worker prints about a
            campaign, from reader threads.

    """

    def __init__(self, command: Sequence[str], on_event: Callable[[str, str], None]) -> None:
        self.command = list(command)
        self.on_event = on_event
        self._workers: list[_Worker] = []
        self._readers: list[threading.Thread] = []
        self._server: object | None = None
        self._stopping = threading.Event()

    def run(self, shares: Sequence[Sequence[str]]) -> None:
        """Run every share in its own worker and wait; WorkerFailed naming the first failure.

        When one worker fails, the others are stopped (as on Ctrl-C): what they finished is
        stored, and the rerun resumes the rest.
        """
        env = os.environ | {"PREFECT_API_URL": self._api_url(), PARENT: str(os.getpid())}
        with contextlib.ExitStack() as files:
            for ids in shares:
                stderr = files.enter_context(tempfile.TemporaryFile("w+", encoding="utf-8"))
                process = subprocess.Popen(
                    [*self.command, "--campaign-ids", ",".join(ids)],
                    stdout=subprocess.PIPE,
                    stderr=stderr,
                    text=True,
                    env=env,
                    # Its own session: the terminal's Ctrl-C reaches the parent alone, which
                    # passes exactly one SIGINT on (a second one would end a worker at once).
                    start_new_session=True,
                )
                worker = _Worker(process, stderr)
                self._workers.append(worker)
                reader = threading.Thread(target=self._read, args=(worker,), daemon=True)
                reader.start()
                self._readers.append(reader)
            failed = self._wait()
            if failed is not None:
                error = failed.last_error()
                self.stop()
                self.close()
                raise WorkerFailed(error)
            for reader in self._readers:
                reader.join()
        self.close()

    def _wait(self) -> _Worker | None:
        while True:
            if self._stopping.is_set():
                # Ctrl-C: the interrupt's thread stops the workers and ends the process; their
                # exit status 130 is no failure to report.
                time.sleep(0.2)
                continue
            running = False
            for worker in self._workers:
                code = worker.process.poll()
                if code is None:
                    running = True
                elif code != 0:
                    return worker
            if not running:
                return None
            time.sleep(0.2)

    def _read(self, worker: _Worker) -> None:
        assert worker.process.stdout is not None
        for line in worker.process.stdout:
            fields = line.rstrip("\n").split("\t")
            if len(fields) == 3 and fields[0] == EVENT:
                self.on_event(fields[1], fields[2])

    def stop(self) -> None:
        """One SIGINT to each live worker, up to :data:`STOP_S` for all, then kill the rest.

        The Prefect server stays up (:meth:`close` stops it): a worker stopped mid-step may
        leave a run marked running, which the caller can then mark as it should be.
        """
        self._stopping.set()
        live = [w.process for w in self._workers if w.process.poll() is None]
        for process in live:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGINT)
        deadline = time.monotonic() + STOP_S
        for process in live:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(max(0.0, deadline - time.monotonic()))
            if process.poll() is None:
                process.kill()

    def _api_url(self) -> str:
        named = os.environ.get("PREFECT_API_URL")
        if named:
            return named
        # Prefect's own temporary server (what a lone process starts on first use), started
        # once here so that every worker writes its runs through one server.
        from prefect.server.api.server import SubprocessASGIServer

        server = SubprocessASGIServer()
        server.start()
        self._server = server
        return server.api_url

    def close(self) -> None:
        """Stop the Prefect server this pool started, if it started one."""
        server, self._server = self._server, None
        process = getattr(server, "server_process", None)
        # Killed, not stopped, as evosyn.interrupt does: its graceful shutdown prints tracebacks.
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()


def stop_when_orphaned(poll_s: float = 1.0) -> None:
    """SIGINT this process (a worker) once its parent is gone; returns at once.

    Workers run in sessions of their own, so a parent ended at once (a second Ctrl-C, a kill)
    takes none of them with it: each then stops as on a Ctrl-C, within ``poll_s`` and its grace.
    The parent is the one :data:`PARENT` names, so one gone while the worker started counts.
    """
    parent = int(os.environ.get(PARENT) or os.getppid())

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll_s)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=watch, name="evosyn-orphan-watch", daemon=True).start()


def worker_command(argv: Sequence[str]) -> list[str]:
    """The command line a worker runs: this interpreter's ``evosyn`` with ``argv``."""
    return [sys.executable, "-m", "evosyn", *argv]
