"""docs/report.md quotes what its commands render: a small experiment rerun, each figure checked."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evosyn.cli import app
from evosyn.experiment import load_experiment
from evosyn.flows.experiment import experiment_flow
from evosyn.report.docs import BLOCK, blocks_of, differences, experiment_source, update
from evosyn.report.experiment import docs_blocks, experiment_report
from evosyn.storage import Lake

PAGE = Path("docs/report.md")
EXPERIMENTS = Path("deployments/experiments")
SOURCE = experiment_source("report-check", "report-check-null")


def _bump(page: str) -> tuple[str, str, str]:
    """``page`` with the first figure of report-check's table block 0.1 higher; both figures."""
    match = next(m for m in BLOCK.finditer(page) if m["source"] == SOURCE)
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
def test_the_page_quotes_exactly_what_the_small_experiment_renders(tmp_path: Path) -> None:
    root = tmp_path / "lake"
    for name in ("report-check", "report-check-null"):
        experiment_flow(load_experiment(EXPERIMENTS / f"{name}.yaml", [f"lake.root={root}"]))
    report = experiment_report(Lake(root), "report-check", "report-check-null")
    rendered = docs_blocks(report)
    page = PAGE.read_text("utf-8")
    # every part is quoted, and every quoted figure is the rendered one
    assert set(blocks_of(page, SOURCE)) == set(rendered)
    found = differences(page, SOURCE, rendered)
    assert not found, (
        "docs/report.md quotes figures report-check no longer renders; regenerate them with the "
        "commands of its section 'How the quoted figures are checked' (or make report-docs):\n"
        + "\n".join(map(str, found))
    )

    # A changed figure fails: the check names it.
    stale, value, bumped = _bump(page)
    [difference] = differences(stale, SOURCE, rendered)
    assert difference.part == "table" and difference.where.startswith("row 'evosyn'")
    assert difference.page.startswith(bumped) and difference.rendered.startswith(value)

    # The one command fails on the stale page, naming the figure, and changes nothing; its
    # rewriting is checked on a small lake in tests/core/test_report_experiment.py.
    copy = tmp_path / "report.md"
    copy.write_text(stale, "utf-8")
    args = ["report", "--experiment", "report-check", "--null", "report-check-null"]
    args += ["--lake", str(root), "--docs", str(copy), "--check"]
    checked = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert checked.exit_code == 1 and "1 figures differ" in checked.output, checked.output
    assert f"the page says '{bumped}" in checked.output
    assert copy.read_text("utf-8") == stale
    assert update(stale, SOURCE, rendered) == (page, ["table"])
    shutil.rmtree(root)
