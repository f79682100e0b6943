"""`evosyn export hf`: a datasets dataset that loads back, with a card from the records."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evosyn.agents.learner.diagnostic import is_held_out
from evosyn.cli import app
from evosyn.export.hf import config_digest, export_hf
from evosyn.names import split_global_id
from evosyn.records import Campaign, LLMCall, Trajectory, Verification
from evosyn.report.audit import audit_campaign, audit_rows
from evosyn.storage import Lake

CAMPAIGN = "exp"  # the campaign of the shared lake (conftest.py)


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.delenv("HF_TOKEN", raising=False)


@pytest.fixture(scope="module")
def exported(lake: Lake, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("hf")
    result = CliRunner().invoke(
        app, ["export", "hf", CAMPAIGN, "--out", str(out), "--lake", lake.root]
    )
    assert result.exit_code == 0, result.output
    return out


def test_dataset_loads_back_from_disk_with_every_verified_sample(
    lake: Lake, exported: Path
) -> None:
    import datasets

    loaded = datasets.load_from_disk(str(exported / "dataset"))
    passed = [v for v in lake.read(Verification, CAMPAIGN) if v.passed]
    held = {v.trajectory_id for v in passed if is_held_out(v.task_id)}
    assert set(loaded) == {"train", "diagnostic"}
    assert {split_global_id(i)[1] for i in loaded["diagnostic"]["id"]} == held
    assert len(loaded["train"]) + len(loaded["diagnostic"]) == len(passed)
    row = loaded["train"][0]
    campaign, local = split_global_id(row["id"])
    assert campaign == CAMPAIGN
    trajectory = next(t for t in lake.read(Trajectory, CAMPAIGN) if t.trajectory_id == local)
    calls = [
        (c.name, c.arguments)
        for m in trajectory.messages
        if m.role == "assistant"
        for c in m.tool_calls or []
    ]
    # OpenAI's nesting, arguments as a JSON string (what the card's Columns section says).
    exported = [c for m in row["messages"] for c in m["tool_calls"]]
    assert [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in exported] == (
        calls
    )
    assert all(c["type"] == "function" and c["id"] for c in exported)
    verdict = next(v for v in passed if v.trajectory_id == local)
    assert {r["factor"]: r["value"] for r in row["realized"]} == verdict.realized


def test_parquet_files_load_through_the_cards_configs(exported: Path, tmp_path: Path) -> None:
    import datasets

    # README.md's configs name the files; a fresh cache, so no earlier run's answer is reused.
    from_card = datasets.load_dataset(str(exported), cache_dir=str(tmp_path / "cache"))
    from_disk = datasets.load_from_disk(str(exported / "dataset"))
    for split in ("train", "diagnostic"):
        assert from_card[split]["id"] == from_disk[split]["id"]


def test_card_states_lineage_audit_and_contamination_from_the_records(
    lake: Lake, exported: Path
) -> None:
    from huggingface_hub import DatasetCard

    card = DatasetCard.load(exported / "README.md")
    campaign = lake.read(Campaign, CAMPAIGN)[0]
    assert card.data.pretty_name == f"EvoSyn airline campaign {CAMPAIGN}"
    assert f"| config digest | `{config_digest(campaign)}` |" in card.text
    [audit] = audit_campaign(lake, CAMPAIGN, "airline")
    # The same rows as `evosyn audit` prints.
    for row in audit_rows([audit]):
        assert "| " + " | ".join(row) + " |" in card.text
    assert f"| do-nothing passes | {audit.do_nothing} |" in card.text
    for kind, n in audit.contamination.items():
        assert f"| {kind} | {n} |" in card.text
    assert "## Realized factor values" in card.text and "| difficulty_profile |" in card.text
    assert (
        '`tool_calls` as `{id, type: "function", function: {name, arguments}}` with `arguments` '
        "a JSON string" in card.text
    )


def test_token_and_cost_totals_come_from_the_llm_calls(lake: Lake, tmp_path: Path) -> None:
    shutil.copytree(lake.root, tmp_path / "lake")
    copy = Lake(tmp_path / "lake")
    calls = [
        LLMCall(
            campaign_id=CAMPAIGN,
            round=1,
            call_id=f"c{i}",
            attempt=0,
            role="teacher",
            model="openai/m",
            tokens_in=100 * i,
            tokens_out=7 * i,
            cost=0.25 * i,
            outcome="ok",
        )
        for i in (1, 2)
    ]
    copy.write(calls, batch="calls")
    report = export_hf(copy, CAMPAIGN, tmp_path / "out")
    assert (report.tokens_in, report.tokens_out, report.cost) == (300, 21, 0.75)
    text = (tmp_path / "out" / "README.md").read_text()
    assert "2 model calls through EvoSyn's gateway (teacher: 2): 300 prompt tokens, 21" in text


def test_push_without_a_token_is_one_line_and_writes_nothing(lake: Lake, tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ["export", "hf", CAMPAIGN, "--out", str(out), "--lake", lake.root, "--push", "org/x"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert result.output.strip() == "error: --push org/x needs a Hugging Face token in HF_TOKEN"
    assert not out.exists()
