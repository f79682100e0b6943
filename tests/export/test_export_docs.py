"""docs/training.md names the files the exports write, as the code names them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evosyn.agents.learner.export import dataset_name
from evosyn.cli import app
from evosyn.export.tau2 import MANIFEST_FILE, SPLITS_FILE, TASKS_FILE
from evosyn.storage import Lake

DOC = (Path(__file__).resolve().parents[2] / "docs" / "training.md").read_text("utf-8")


def _sft_files(campaign: str, rounds: list[int]) -> list[str]:
    name = dataset_name(campaign, rounds)
    return [f"{name}.json", f"{name}.openai.jsonl", "dataset_info.json"]


def test_sft_file_names_in_the_guide_are_the_codes() -> None:
    command = re.search(r"^evosyn export sft (\S+) --out (\S+) --up-to (\d+) ", DOC, re.M)
    assert command, "the guide shows `evosyn export sft CAMPAIGN --out DIR --up-to R`"
    campaign, out, up_to = command.group(1), command.group(2), int(command.group(3))
    listed = re.search(rf"^# {re.escape(out)}/: (.+)$", DOC, re.M)
    assert listed is not None
    assert [f.strip() for f in listed.group(1).split(",")] == _sft_files(
        campaign, list(range(1, up_to + 1))
    )
    alone = re.search(r"--round (\d+) instead exports round \d+ alone: (\S+)\.json", DOC)
    assert alone and alone.group(2) == dataset_name(campaign, [int(alone.group(1))])
    for used in re.findall(r'llamafactory_args\("([^"]+)"', DOC):
        assert used == dataset_name(campaign, list(range(1, up_to + 1)))


@pytest.mark.parametrize(("flag", "rounds"), [("--up-to", [1]), ("--round", [1])])
def test_the_export_writes_the_files_the_guide_lists(
    lake: Lake, tmp_path: Path, flag: str, rounds: list[int]
) -> None:
    args = ["export", "sft", "exp", "--out", str(tmp_path), flag, "1", "--lake", lake.root]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(_sft_files("exp", rounds))


def test_tau2_file_names_in_the_guide_are_the_codes() -> None:
    assert f"# tau2-tasks/: {TASKS_FILE}, {SPLITS_FILE} (" in DOC
    assert f"{MANIFEST_FILE}" in DOC
