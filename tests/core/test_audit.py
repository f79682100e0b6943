"""`evosyn audit` on a real synthesized campaign, and its one-line error for unknown ids."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from evosyn.cli import app
from evosyn.records import SynthTask
from evosyn.report.audit import audit_campaign
from evosyn.storage import Lake

runner = CliRunner()


def test_audit_measures_a_synthesized_campaign(tmp_path: Path) -> None:
    root = tmp_path / "lake"
    sets = ["--set", f"lake.root={root}"]
    made = runner.invoke(
        app,
        ["synth", "--domain", "retail", "--n", "12", "--seed", "5", "--campaign-id", "q", *sets],
    )
    assert made.exit_code == 0, made.output
    result = runner.invoke(app, ["audit", "q", *sets])
    assert result.exit_code == 0, result.output
    for label in ("answers out of context", "do-nothing passes", "official overlap: gold write"):
        assert label in result.output
    (audit,) = audit_campaign(Lake(root), "q", "retail")
    tasks = Lake(root).read(SynthTask, "q")
    assert audit.brittle.total == len(tasks) == audit.do_nothing.total
    assert audit.official_do_nothing.total == 114
    assert sum(audit.contamination.values()) == 0  # synthesis rejects every overlap


def test_audit_names_an_unknown_campaign(tmp_path: Path) -> None:
    root = tmp_path / "lake"
    sets = ["--set", f"lake.root={root}"]
    runner.invoke(app, ["synth", "--n", "2", "--campaign-id", "known", *sets])
    result = runner.invoke(app, ["audit", "nope", *sets])
    assert result.exit_code == 2
    assert "unknown campaign 'nope'" in result.output and "known" in result.output
