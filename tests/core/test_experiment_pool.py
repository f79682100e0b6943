"""The worker processes of ``evosyn experiment run --workers``: shares, events, failures."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from evosyn.experiment_pool import CampaignPool, WorkerFailed, event_line, share

# A stand-in worker: plays every campaign id it is given (argv ends in "--campaign-ids IDS"),
# and fails on the id "bad" with a one-line error, as `experiment run` does.
WORKER = """
import sys
ids = sys.argv[-1].split(",")
for cid in ids:
    print("evosyn-arm\\tstart\\t" + cid, flush=True)
    if cid == "bad":
        print("a traceback line", file=sys.stderr)
        sys.exit("error: campaign 'bad' could not start")
    print("evosyn-arm\\tdone\\t" + cid, flush=True)
print("a line that is not an event")
"""


def test_campaigns_are_dealt_round_robin_to_at_most_as_many_workers_as_campaigns() -> None:
    assert share(["a", "b", "c", "d", "e"], 2) == [["a", "c", "e"], ["b", "d"]]
    assert share(["a"], 4) == [["a"]]
    assert share(["a", "b"], 1) == [["a", "b"]]


def _pool(events: list[tuple[str, str]]) -> CampaignPool:
    lock = threading.Lock()

    def on_event(event: str, cid: str) -> None:
        with lock:
            events.append((event, cid))

    return CampaignPool([sys.executable, "-c", WORKER], on_event)


def test_every_worker_plays_its_share_and_reports_each_campaign(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")  # no server started
    events: list[tuple[str, str]] = []
    _pool(events).run(share(["a", "b", "c"], 2))
    assert sorted(events) == sorted((e, c) for c in "abc" for e in ("start", "done"))
    assert event_line("done", "x") == "evosyn-arm\tdone\tx"


def test_a_failed_worker_stops_the_others_and_names_its_one_line_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")
    events: list[tuple[str, str]] = []
    with pytest.raises(WorkerFailed, match=r"^error: campaign 'bad' could not start$"):
        _pool(events).run([["bad"], ["good"]])
    assert ("start", "bad") in events and ("done", "bad") not in events


# A parent that starts a worker and ends at once, as on a second Ctrl-C: the worker, in a
# session of its own, notices within a poll and stops as on a Ctrl-C (exit 130, its line said).
ORPHAN = """
import os, subprocess, sys
child = subprocess.Popen(
    [sys.executable, "-c", sys.argv[1], sys.argv[2]],
    start_new_session=True,
    env=os.environ | {"EVOSYN_EXPERIMENT_PARENT": str(os.getpid())},
)
print(child.pid, flush=True)
"""
WORKER_OF_ORPHAN = """
import pathlib, sys, time
from evosyn.experiment_pool import stop_when_orphaned
from evosyn.interrupt import CampaignInterrupt
with CampaignInterrupt("worker stopped") as stop:
    stop.cleanups.append(lambda: pathlib.Path(sys.argv[1]).write_text("stopped"))
    stop_when_orphaned(poll_s=0.05)
    time.sleep(60)
"""


def test_a_worker_whose_parent_is_gone_stops_as_on_ctrl_c(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    parent = subprocess.run(
        [sys.executable, "-c", ORPHAN, WORKER_OF_ORPHAN, str(marker)],
        capture_output=True,
        text=True,
        check=True,
    )
    pid = int(parent.stdout.split()[0])
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, signal.SIGKILL)
        raise AssertionError("the orphaned worker still runs")
    assert marker.read_text() == "stopped"


def test_the_parent_variable_is_no_config_key() -> None:
    from evosyn.config import NON_CONFIG_ENV
    from evosyn.experiment_pool import PARENT

    assert PARENT in NON_CONFIG_ENV
