"""docs/report.md's blind-sweep design is what the sweep file draws now (no run needed)."""

from __future__ import annotations

from pathlib import Path

from evosyn.report.docs import blocks_of, differences, sweep_source
from evosyn.report.sweep import design_markdown
from evosyn.sweep import load_sweep, official_realized, plan

PAGE = Path("docs/report.md")
SWEEP = "deployments/experiments/airline-blind-sweep.yaml"


def test_the_page_states_the_design_the_sweep_file_draws() -> None:
    # The design (candidates, draws) depends on the registration seed, the seeds and the
    # official diagnostic tasks alone, so a change to the domain's features shows here at
    # once, long before anyone reruns the hour-long sweep.
    sweep = load_sweep(Path(SWEEP))
    candidates, draws = plan(sweep, official_realized(sweep.domain()))
    design = design_markdown(sweep, candidates, draws, heading=False)
    page = PAGE.read_text("utf-8")
    quoted = blocks_of(page, sweep_source(SWEEP))
    assert "design" in quoted
    # Only the design is rendered here; the page's result blocks need the sweep's lake.
    found = differences(page, sweep_source(SWEEP), {**quoted, "design": design})
    assert not found, (
        "docs/report.md's sweep design differs from what the sweep file draws; rerun the "
        "sweep and its report with --docs (make report-docs):\n" + "\n".join(map(str, found))
    )
