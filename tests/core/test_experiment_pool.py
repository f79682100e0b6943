"""The worker processes of ``evosyn experiment run --workers``: shares, events, failures."""

from __future__ import annotations

import sys
import threading

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
