"""The dataset card's table of official shapes, from the audit of the exported campaign."""

from __future__ import annotations

from pathlib import Path

import pytest

from evosyn.export.hf import export_hf
from evosyn.records import SynthTask, Verification
from evosyn.report.audit import audit_campaign, shape_rows
from evosyn.storage import Lake

CAMPAIGN = "exp"  # the campaign of the shared lake (conftest.py)


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.delenv("HF_TOKEN", raising=False)


def test_card_lists_the_official_shapes_against_the_verified_gold(
    lake: Lake, tmp_path: Path
) -> None:
    export_hf(lake, CAMPAIGN, tmp_path / "out")
    text = (tmp_path / "out" / "README.md").read_text()
    [audit] = audit_campaign(lake, CAMPAIGN, "airline")
    assert "## Shapes against the official tasks" in text
    section = text.split("## Shapes against the official tasks", 1)[1].split("\n## ", 1)[0]
    rows = shape_rows([audit])
    assert rows and all("| " + " | ".join(row) + " |" in section for row in rows)
    shapes = audit.shapes
    assert shapes is not None
    passed = {v.task_id for v in lake.read(Verification, CAMPAIGN) if v.passed}
    assert shapes.tasks == len({t.task_id for t in lake.read(SynthTask, CAMPAIGN)} & passed)
    combos = shapes.write_combinations
    assert f"| shapes: write combinations | {combos} |" in section
    never = "; ".join(combos.never_made) or "none"
    assert f"| shapes: official write combinations never made | {never} |" in section
    # Airline's user has no device: no row for it.
    assert "user-device" not in section
