"""`evosyn report` on a real small campaign lake: files, plots, and numbers that match SQL."""

from __future__ import annotations

import json
import math
from collections import Counter
from html import escape
from pathlib import Path

import pytest
from shared_lakes import default_campaign_lake
from typer.testing import CliRunner

from evosyn.cli import app
from evosyn.report import metrics as m
from evosyn.report.render import PLOT_TITLES, Report, plot_title, write_report
from evosyn.storage import Lake
from evosyn.storage.sql import query

pytestmark = pytest.mark.heavy

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def lake_root(tmp_path_factory: pytest.TempPathFactory, prefect_server: None) -> Path:
    """A lake with `make run`'s 3-round campaign `demo` and a static synth run `s1`.

    docs/report.md's default-campaign section quotes this lake's report, and
    tests/flows/test_report_docs.py checks it: the lake is built once for both, and only read.
    """
    return default_campaign_lake(tmp_path_factory)


@pytest.fixture(scope="module")
def report(lake_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Report:
    out = tmp_path_factory.mktemp("report")
    return write_report(Lake(lake_root), "demo", out, compare=["s1"])


def _table(report: Report, key: str) -> list[dict[str, object]]:
    [t] = [t for t in report.tables if t.key == key]
    return [dict(zip(t.columns, row, strict=True)) for row in t.rows]


def test_writes_html_markdown_plots_and_queries(report: Report) -> None:
    html = report.html.read_text("utf-8")
    md = report.markdown.read_text("utf-8")
    names = {p.name for p in report.plots}
    assert {
        "metrics_by_round.png",
        "coverage_heatmaps.png",
        "gap_vs_allocation.png",
        "probe_failure.png",
        "space_timeline.png",
    } <= names
    for p in report.plots:
        data = p.read_bytes()
        assert data.startswith(PNG) and len(data) > 10_000, p  # a real figure, not a stub
        assert f"src='{p.name}'" in html and f"]({p.name})" in md
        # Headings in words, not file names.
        assert f"<h3>{escape(plot_title(p))}</h3>" in html and f"<h3>{p.stem}</h3>" not in html
        assert p.stem in PLOT_TITLES
    for t in report.tables:
        assert t.title in html and f"## {t.title}" in md
    assert "queries/verified_samples.sql" in md
    assert (report.html.parent / "queries" / "s1.success_by_round.sql").exists()


def test_the_report_carries_the_audit_per_round(lake_root: Path, report: Report) -> None:
    from evosyn.report.audit import audit_campaign

    rows = {str(r["measure"]): r for r in _table(report, "audit")}
    audits = audit_campaign(Lake(lake_root), "demo", "airline")
    assert [a.round for a in audits] == [1, 2, 3]
    for a in audits:
        column = f"round {a.round}"
        assert rows["answers out of context"][column] == str(a.out_of_context)
        assert rows["do-nothing passes"][column] == str(a.do_nothing)
        assert rows["verified after repair"][column] == str(a.repaired)
    assert "computed by evosyn.report.audit.audit_campaign" in report.markdown.read_text()


def test_numbers_match_sql_on_the_same_lake(lake_root: Path, report: Report) -> None:
    lake = Lake(lake_root)
    qdir = report.html.parent / "queries"
    rows = [r for r in _table(report, "intrinsic") if r["campaign"] == "demo"]
    assert [r["round"] for r in rows] == [1, 2, 3]
    # Success by round: the written query, rerun, gives the table's numbers.
    columns, success = query(lake, (qdir / "success_by_round.sql").read_text())
    by_name = [dict(zip(columns, row, strict=True)) for row in success]
    assert [r["success, fixed set"] for r in rows] == [row["fixed_success"] for row in by_name]
    # The fixed set is the official split: the same episodes every round, fewer than all.
    fixed = [r for r in _table(report, "success") if r["campaign"] == "demo"]
    assert len({r["n (fixed set)"] for r in fixed}) == 1
    assert all(r["n (fixed set)"] < r["n (all diagnostics)"] for r in fixed)  # type: ignore[operator]
    assert all(str(r["95% CI"]).startswith("[") for r in fixed)
    # pass^k over the official tasks' trials, from the written query rerun.
    columns, trials = query(lake, (qdir / "fixed_set_trials.sql").read_text())
    per_task = [dict(zip(columns, row, strict=True)) for row in trials]
    for r in fixed:
        counts = [(t["trials"], t["successes"]) for t in per_task if t["round"] == r["round"]]
        assert r["k (trials per task)"] == 3
        assert r["pass^k, fixed set"] == pytest.approx(m.pass_hat_k(counts, 3))
    # Cumulative verified counts.
    _, verified = query(
        lake,
        "SELECT round, count(*) FROM verifications WHERE campaign_id = 'demo' AND passed "
        "GROUP BY round ORDER BY round",
    )
    running = 0
    for r, (_, n) in zip(rows, verified, strict=True):
        running += n
        assert r["verified"] == running
    # Trajectory diversity from pattern counts over both campaigns.
    _, patterns = query(
        lake,
        "SELECT campaign_id, realized->>'functional_pattern' p, count(*) FROM verifications "
        "WHERE passed AND campaign_id IN ('demo', 's1') GROUP BY ALL",
    )
    union = {p for _, p, _ in patterns}
    loop = Counter({p: n for c, p, n in patterns if c == "demo"})
    total = sum(loop.values())
    entropy = -sum(n / total * math.log(n / total) for n in loop.values())
    assert rows[-1]["trajectory diversity"] == pytest.approx(entropy / math.log(len(union)))
    # Task-family coverage and balance, from the realized family alone.
    _, families = query(
        lake,
        "SELECT realized->>'task_family', count(*) FROM verifications "
        "WHERE campaign_id = 'demo' AND passed GROUP BY 1",
    )
    factor = {r["factor"]: r for r in _table(report, "factors")}
    assert factor["task_family"]["coverage"] == pytest.approx(len(families) / 6)
    n = sum(c for _, c in families)
    h = -sum(c / n * math.log(c / n) for _, c in families)
    assert factor["task_family"]["balance"] == pytest.approx(h / math.log(6))


def test_query_files_rerun_with_evosyn_sql(lake_root: Path, report: Report) -> None:
    sql = (report.html.parent / "queries" / "verified_by_round.sql").read_text()
    result = CliRunner().invoke(app, ["sql", sql, "-f", "json", "--set", f"lake.root={lake_root}"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [r["round"] for r in rows] == [1, 2, 3]
    loop = [r for r in _table(report, "loop") if str(r["transition"]).startswith("R")]
    assert [r["added verified"] for r in loop[:2]] == [r["verified"] for r in rows[1:]]


def test_timeline_says_each_decision_in_words_and_when_it_takes_effect(report: Report) -> None:
    rows = _table(report, "timeline")
    decided = [r for r in rows if r["decided after round"] is not None]
    assert [r["decided after round"] for r in decided] == [1, 2]
    assert all(r["takes effect in round"] == r["decided after round"] + 1 for r in decided)  # type: ignore[operator]
    words = ("added ", "promoted ", "deprecated ", "reallocated budget")
    assert all(str(r["decision"]).startswith(words) for r in decided), decided
    assert "seed factor task_family" in {r["decision"] for r in rows}


def test_the_decisions_cmi_is_shown_beside_the_reports_own(lake_root: Path, report: Report) -> None:
    from evosyn.records import Probe, ReflectorDecision

    lake = Lake(lake_root)
    rows = {(r["round"], r["factor"]): r for r in _table(report, "information")}
    probes = lake.read(Probe, "demo")
    assert probes
    for probe in probes:
        shown = rows[(probe.round, probe.name)]["Reflector's probe CMI [p]"]
        assert shown == f"{probe.cmi:.3f} [p={probe.p_value:.3f}]"
    # The figure a decision's evidence cites is the one in that column.
    added = [d for d in lake.read(ReflectorDecision, "demo") if d.new_factor is not None]
    for d in added:
        assert d.new_factor is not None
        cited = rows[(d.round, d.new_factor.name)]["Reflector's probe CMI [p]"]
        assert str(cited).split(" ")[0] in d.evidence


def test_loop_and_comparison_tables(report: Report) -> None:
    loop = _table(report, "loop")
    assert [r["transition"] for r in loop[:2]] == ["R1->R2", "R2->R3"]
    for r in loop[:2]:
        rho = r["gap-allocation rho"]
        assert rho is None or -1.0 <= float(rho) <= 1.0  # type: ignore[arg-type]
        improved, targeted = str(r["targeted improvement"]).split("/")
        assert 0 <= int(improved) <= int(targeted)
    compared = _table(report, "comparison")
    assert [r["campaign"] for r in compared] == ["demo", "s1"]
    for r in compared:
        for key in ("factor coverage", "factor balance", "interaction coverage"):
            assert 0.0 <= float(r[key]) <= 1.0  # type: ignore[arg-type]
    support = _table(report, "support")
    loop_support = [r for r in support if r["campaign"] == "demo"]
    counts = [r["distinct tool-call sequences (cumulative)"] for r in loop_support]
    assert counts == sorted(counts) and counts[0] > 0  # cumulative: never shrinks
    assert loop_support[-1]["size-matched"] <= counts[-1]  # type: ignore[operator]
    control = {r["factor"]: r for r in _table(report, "controllability")}
    assert control["difficulty_profile"]["pairs"] > 0  # type: ignore[operator]


def test_cli_report_and_unknown_campaign(lake_root: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    ok = runner.invoke(
        app, ["report", "s1", "--out", str(tmp_path / "r"), "--lake", str(lake_root)]
    )
    assert ok.exit_code == 0, ok.output
    assert (tmp_path / "r" / "report.html").exists() and (tmp_path / "r" / "report.md").exists()
    bad = runner.invoke(
        app, ["report", "nope", "--out", str(tmp_path / "x"), "--lake", str(lake_root)]
    )
    assert bad.exit_code == 2
    assert "unknown campaign 'nope'" in bad.output and "demo" in bad.output
    assert not (tmp_path / "x" / "report.html").exists()


def test_hand_built_lake_gives_exact_values(tmp_path: Path) -> None:
    from samples import sample_records

    from evosyn.report.data import load_campaign
    from evosyn.report.metrics import factor_coverage

    lake = Lake(tmp_path / "lake")
    for record in sample_records("hand", 1):
        lake.write([record], batch="b")
    data = load_campaign(lake, "hand")
    [sample] = data.samples
    assert sample.sequence == ("cancel_reservation",)  # the gold trajectory's tool calls
    assert sample.values["num_write"] == ("1",) and sample.values["state_change"] == ("single",)
    assert sample.values["task_family"] == ("flight_cancellation",)
    assert factor_coverage(data.samples, data.reference()).value == pytest.approx(1 / 6 / 6)
    # One round and no transition still makes a report (the gap plot is left out).
    report = write_report(lake, "hand", tmp_path / "out")
    assert "gap_vs_allocation.png" not in {p.name for p in report.plots}
    [row] = _table(report, "intrinsic")
    assert row["verified"] == 1 and row["trajectory diversity"] == 0.0


def test_the_plots_show_values_sizes_and_whole_rounds(
    lake_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from matplotlib.figure import Figure

    from evosyn.report import plots
    from evosyn.report.data import load_campaign

    figures: list[Figure] = []

    def keep(fig: Figure, path: Path) -> Path:
        figures.append(fig)
        return path

    monkeypatch.setattr(plots, "_save", keep)
    data = load_campaign(Lake(lake_root), "demo")
    plots.probe_failure(data, tmp_path)
    plots.coverage_heatmaps(data, tmp_path)
    plots.space_timeline(data, tmp_path)
    probe, heat, timeline = figures
    # Every probe is drawn (its MAP columns read), each point with its number of tasks.
    lines = [line for ax in probe.axes for line in ax.get_lines()]
    assert lines and all(len(line.get_xdata()) > 0 for line in lines)
    assert all(any(t.get_text().startswith("n=") for t in ax.texts) for ax in probe.axes)
    # Heatmap cells carry their value; titles say what is shown, in words.
    grids = [ax for ax in heat.axes if ax.images]
    assert all(ax.texts for ax in grids)
    assert all("% of the round's verified samples" in ax.get_title() for ax in grids)
    ticks = timeline.axes[0].get_xticks()
    assert all(float(t).is_integer() for t in ticks)
