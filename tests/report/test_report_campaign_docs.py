"""``evosyn report CAMPAIGN --docs PAGE``: the command a block names, and its argument errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from evosyn.cli import app
from evosyn.report.docs_campaign import campaign_source
from evosyn.storage import Lake


def test_a_campaign_block_names_the_report_command_with_its_comparisons() -> None:
    assert campaign_source("demo", ["s1"]) == "evosyn report demo --compare s1"
    assert campaign_source("demo", ["s1", "s2"]) == "evosyn report demo --compare s1 --compare s2"
    assert campaign_source("demo") == "evosyn report demo"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["report", "demo"], "a campaign report needs --out FOLDER or --docs PAGE"),
        (["report", "demo", "--docs", "p.md", "--null", "n"], "--null goes with --experiment"),
        (["report", "--experiment", "x", "--compare", "s1"], "--compare goes with a campaign id"),
        (["report", "demo", "--out", "r"], "--check needs --docs PAGE"),
    ],
)
def test_misused_arguments_exit_2_naming_the_rule(
    args: list[str], message: str, tmp_path: Path
) -> None:
    if message.startswith("--check"):
        args = [*args, "--check"]
    # A lake that exists: a read command tells a missing lake first (and a fresh clone has none).
    Lake(str(tmp_path / "lake"))
    args = [*args, "--lake", str(tmp_path / "lake")]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 2 and message in result.output, result.output
