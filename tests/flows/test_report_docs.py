"""docs/report.md quotes what its commands render: the default campaign and a small experiment
rerun, each figure checked."""

from __future__ import annotations

import re
import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest
from shared_lakes import default_campaign_lake
from typer.testing import CliRunner

from evosyn.cli import app
from evosyn.experiment import load_experiment
from evosyn.flows.experiment import experiment_flow
from evosyn.report import docs_campaign
from evosyn.report import experiment as experiment_report_module
from evosyn.report.docs import BLOCK, blocks_of, differences, experiment_source, update
from evosyn.report.docs_campaign import campaign_source
from evosyn.report.experiment import ExperimentReport, docs_blocks
from evosyn.storage import Lake

pytestmark = pytest.mark.heavy

PAGE = Path("docs/report.md")
EXPERIMENTS = Path("deployments/experiments")
SOURCE = experiment_source("report-check", "report-check-null")
#: The ids and comparison the page's commands give `make run`'s campaign.
CAMPAIGN = campaign_source("demo", ["s1"])


def _bump(page: str, source: str = SOURCE, part: str = "table") -> tuple[str, str, str]:
    """``page`` with the first figure of ``source``'s ``part`` block 0.1 higher; both figures."""
    match = next(m for m in BLOCK.finditer(page) if (m["source"], m["part"]) == (source, part))
    body = match["body"]
    row = body.splitlines()[2]  # the first row under the header and the rule
    figure = re.search(r"\d+\.\d", row)
    assert figure is not None, row
    value = figure[0]
    bumped = f"{float(value) + 0.1:.1f}"
    new_row = row[: figure.start()] + bumped + row[figure.end() :]
    start = match.start("body")
    return page[:start] + body.replace(row, new_row, 1) + page[match.end("body") :], value, bumped


@pytest.mark.usefixtures("prefect_server")
def test_the_page_quotes_exactly_what_the_small_experiment_renders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "lake"
    for name in ("report-check", "report-check-null"):
        experiment_flow(load_experiment(EXPERIMENTS / f"{name}.yaml", [f"lake.root={root}"]))
    page = PAGE.read_text("utf-8")
    stale, value, bumped = _bump(page)

    # The one command run on a stale page: the report it computes (kept as it returns it) is
    # what the page is checked against; it fails, naming the figure, and changes nothing (its
    # rewriting is checked on a small lake in tests/core/test_report_experiment.py).
    computed: list[ExperimentReport] = []
    compute = experiment_report_module.experiment_report

    def kept(lake: Lake, name: str, null: str | None = None) -> ExperimentReport:
        computed.append(compute(lake, name, null))
        return computed[-1]

    monkeypatch.setattr(experiment_report_module, "experiment_report", kept)
    copy = tmp_path / "report.md"
    copy.write_text(stale, "utf-8")
    args = ["report", "--experiment", "report-check", "--null", "report-check-null"]
    args += ["--lake", str(root), "--docs", str(copy), "--check"]
    checked = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert len(computed) == 1, checked.output
    [report] = computed
    assert (report.name, report.null) == ("report-check", "report-check-null")
    rendered = docs_blocks(report)

    # every part is quoted, and every quoted figure is the rendered one
    assert set(blocks_of(page, SOURCE)) == set(rendered)
    found = differences(page, SOURCE, rendered)
    assert not found, (
        "docs/report.md quotes figures report-check no longer renders; regenerate them with the "
        "commands of its section 'How the quoted figures are checked' (or make report-docs):\n"
        + "\n".join(map(str, found))
    )
    assert checked.exit_code == 1 and "1 figures differ" in checked.output, checked.output
    assert f"the page says '{bumped}" in checked.output
    assert copy.read_text("utf-8") == stale

    # A changed figure fails: the check names it.
    [difference] = differences(stale, SOURCE, rendered)
    assert difference.part == "table" and difference.where.startswith("row 'evosyn'")
    assert difference.page.startswith(bumped) and difference.rendered.startswith(value)
    assert update(stale, SOURCE, rendered) == (page, ["table"])
    shutil.rmtree(root)


@pytest.mark.usefixtures("prefect_server")
def test_the_default_campaign_section_quotes_what_its_commands_render(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The section's commands: `make run`'s campaign as `demo`, a static synthesis as `s1`
    # (run once for this file and tests/core/test_report.py, which only read the lake).
    root = default_campaign_lake(tmp_path_factory)
    page = PAGE.read_text("utf-8")
    stale, value, bumped = _bump(page, CAMPAIGN, "success")

    # `--check` run on a stale page: the figures it computes (kept as they are returned) are
    # what the page is checked against; the changed figure fails it, named, and the page
    # stays; `--docs` rewrites it.
    computed: list[dict[str, str]] = []
    compute = docs_campaign.campaign_blocks

    def kept(lake: Lake, campaign_id: str, compare: Sequence[str] = ()) -> dict[str, str]:
        computed.append(compute(lake, campaign_id, compare))
        return computed[-1]

    monkeypatch.setattr(docs_campaign, "campaign_blocks", kept)
    copy = tmp_path / "report.md"
    copy.write_text(stale, "utf-8")
    args = ["report", "demo", "--compare", "s1", "--lake", str(root), "--docs", str(copy)]
    checked = CliRunner().invoke(app, [*args, "--check"], env={"COLUMNS": "200"})
    assert len(computed) == 1, checked.output
    [rendered] = computed
    assert set(blocks_of(page, CAMPAIGN)) == set(rendered)
    found = differences(page, CAMPAIGN, rendered)
    assert not found, (
        "docs/report.md's default-campaign section quotes figures its commands no longer "
        "render; regenerate them with that section's commands (or make report-docs):\n"
        + "\n".join(map(str, found))
    )
    assert checked.exit_code == 1 and "1 figures differ" in checked.output, checked.output
    assert "success: row '1', column 'success, fixed set [95% CI]'" in checked.output
    assert f"the page says '{bumped}" in checked.output
    assert f"rendered '{value}" in checked.output
    assert copy.read_text("utf-8") == stale
    written = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert written.exit_code == 0, written.output
    assert copy.read_text("utf-8") == page
