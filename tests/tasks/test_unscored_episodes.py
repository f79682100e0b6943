"""Episodes the user simulator broke: stored, counted per round, shown in the table and report."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from rich.console import Console

from evosyn.agents.learner.base import DiagnosticItem
from evosyn.campaign_cli import round_table
from evosyn.records import RoundSummary, UnscoredEpisode
from evosyn.storage import Lake
from evosyn.tasks import learning
from tests.agents.learner import test_icl
from tests.agents.learner.test_user_faults import PLANTED_IDS, PLANTED_REPLIES
from tests.openai_server import OpenAIServer

# test_icl's campaign lake (synthesized once for the module) and scripted server.
lake_root, server = test_icl.lake_root, test_icl.server
CAMPAIGN = "icl"
# Official airline tasks (their own ids, as the diagnostic set names them).
ITEMS = [
    DiagnosticItem(task_id=f"official:{i}", split="diagnostic", realized={}) for i in PLANTED_IDS
]


def test_user_faults_are_stored_counted_and_shown(
    lake_root: Path,
    server: OpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    # One episode at a time: the scripted replies go to the episodes in order.
    cfg = test_icl.config(lake_root, server, concurrency=1)
    monkeypatch.setattr(learning, "items_of", lambda *_: ITEMS)
    learning.train_learner.fn(cfg, CAMPAIGN, 1)
    server.script(*PLANTED_REPLIES)
    results = learning.evaluate_learner.fn(cfg, CAMPAIGN, 1)
    assert [(r.task_id, r.success) for r in results] == [("official:8", False)]

    lake = Lake(str(lake_root))
    rows = {u.task_id: u for u in lake.read(UnscoredEpisode, CAMPAIGN, 1)}
    assert set(rows) == {"official:2", "official:16"}
    assert {(u.kind, u.split, u.training_id) for u in rows.values()} == {
        ("user_sim_fault", "diagnostic", results[0].training_id)
    }
    assert "invented_fact: the user said 'qqq999'" in rows["official:2"].message
    assert "ended_early" in rows["official:16"].message
    assert learning.user_faults_of(cfg, CAMPAIGN, 1, results) == 2

    # A resumed round reuses the stored evaluation, and its count with it.
    requests = server.request_count
    again = learning.evaluate_learner.fn(cfg, CAMPAIGN, 1)
    assert again == results and server.request_count == requests
    assert learning.user_faults_of(cfg, CAMPAIGN, 1, again) == 2

    # The round table: a column where a round has faults, and what it means.
    summary = RoundSummary(
        campaign_id=CAMPAIGN,
        round=1,
        space_version=1,
        budget=12,
        diagnostic_n=len(results),
        n_user_faults=learning.user_faults_of(cfg, CAMPAIGN, 1, results),
        status="succeeded",
    )
    console = Console(width=100, record=True)
    console.print(round_table(CAMPAIGN, [summary], simulated=False))
    text = console.export_text()
    header, rows_text = text.split("─", 1)
    assert "user" in header and "faults" in header
    [row] = [ln for ln in rows_text.splitlines() if ln.strip().startswith("1 ")]
    assert row.split()[-1] == "2"
    assert "user faults: diagnostic episodes the user simulator broke" in " ".join(text.split())
    console = Console(width=100, record=True)
    console.print(round_table(CAMPAIGN, [summary.model_copy(update={"n_user_faults": 0})], False))
    assert "faults" not in console.export_text()

    # The report's success table counts them per round.
    from evosyn.report.render import write_report

    report = write_report(lake, CAMPAIGN, tmp_path / "report")
    [table] = [t for t in report.tables if t.key == "success"]
    [line] = [dict(zip(table.columns, r, strict=True)) for r in table.rows]
    assert (line["round"], line["user faults (unscored)"]) == (1, 2)
    assert line["n (all diagnostics)"] == 1  # the faulted episodes are in no success rate
    sql = (tmp_path / "report" / "queries" / "user_faults_by_round.sql").read_text()
    assert "unscored_episodes" in sql


def test_rounds_stored_before_the_count_read_with_no_faults(tmp_path: Path) -> None:
    lake = Lake(str(tmp_path / "lake"))
    old = RoundSummary(
        campaign_id="old", round=1, space_version=1, budget=4, n_verified=3, status="succeeded"
    )
    key = lake.write([old], batch="summary")
    # The file as an EvoSyn without the field wrote it: no such column.
    path = tmp_path / "lake" / key
    table = pq.read_table(path)
    pq.write_table(table.drop_columns(["n_user_faults"]), path)
    new = old.model_copy(update={"round": 2, "n_user_faults": 4})
    lake.write([new], batch="summary")
    read = sorted(lake.read(RoundSummary, "old"), key=lambda s: s.round)
    assert [(s.round, s.n_verified, s.n_user_faults) for s in read] == [(1, 3, 0), (2, 3, 4)]
    # A lake with no unscored episode at all still reads them: none.
    assert lake.read(UnscoredEpisode, "old") == []
