"""Writing a report: HTML and Markdown with the same tables, PNG plots, and the SQL behind them."""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evosyn.records import Campaign
from evosyn.report import plots
from evosyn.report.audit import audit_campaign, audit_rows
from evosyn.report.data import CampaignData, load_campaign
from evosyn.report.tables import Table, build_tables, transitions
from evosyn.storage.lake import Lake

CAVEAT = (
    "Numbers from the programmatic backend with a simulated learner are a test of the loop's "
    "logic, not a replication of the paper's results with trained models."
)


@dataclass
class Report:
    """What ``write_report`` produced."""

    html: Path
    markdown: Path
    plots: list[Path]
    queries: list[Path]
    tables: list[Table]


# Each plot's heading in words (the file keeps its short name).
PLOT_TITLES = {
    "metrics_by_round": "Success and data-quality measures by round",
    "coverage_heatmaps": "What each round's verified data covers, per factor value",
    "gap_vs_allocation": "Did the next round's data go where the learner was weak?",
    "probe_failure": "Learner failure rate by candidate property, after each round",
    "space_timeline": "The synthesis space round by round: factors added, promoted, deprecated",
}


def plot_title(path: Path) -> str:
    """The heading of plot ``path`` in words."""
    return PLOT_TITLES.get(path.stem, path.stem.replace("_", " "))


def fmt(value: Any) -> str:
    """A cell as text: floats to three decimals, None as '-'."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _md(text: str) -> str:
    # A pipe inside a cell would end it.
    return text.replace("|", "\\|")


def _source(t: Table) -> str:
    parts = []
    if t.queries:
        parts.append("SQL: " + ", ".join(f"queries/{q}.sql" for q in t.queries))
    if t.functions:
        parts.append("computed by " + ", ".join(t.functions))
    return "; ".join(parts)


def markdown(title: str, tables: Sequence[Table], images: Sequence[Path], note: str) -> str:
    """The Markdown summary."""
    lines = [f"# {title}", "", note, ""]
    for t in tables:
        lines += [f"## {t.title}", ""]
        lines.append("| " + " | ".join(_md(c) for c in t.columns) + " |")
        lines.append("|" + "---|" * len(t.columns))
        lines += ["| " + " | ".join(_md(fmt(v)) for v in row) + " |" for row in t.rows]
        lines += ["", f"_{t.note}_" if t.note else "", "", f"Source: {_source(t)}", ""]
    lines += ["## Plots", ""]
    for p in images:
        lines += [f"### {plot_title(p)}", "", f"![{plot_title(p)}]({p.name})", ""]
    return "\n".join(lines) + "\n"


def html_page(title: str, tables: Sequence[Table], images: Sequence[Path], note: str) -> str:
    """The HTML report."""
    e = html.escape
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{e(title)}</title><style>body{{font-family:sans-serif;margin:2em}}"
        "table{border-collapse:collapse;margin-bottom:.5em}td,th{border:1px solid #ccc;"
        "padding:3px 7px;font-size:13px}th{background:#eee}.src{color:#666;font-size:12px}"
        "</style></head><body>",
        f"<h1>{e(title)}</h1><p>{e(note)}</p>",
    ]
    for p in images:
        heading = e(plot_title(p))
        parts.append(
            f"<h3>{heading}</h3><img src='{e(p.name)}' alt='{heading}' style='max-width:100%'>"
        )
    for t in tables:
        parts.append(f"<h2 id='{e(t.key)}'>{e(t.title)}</h2><table><tr>")
        parts += [f"<th>{e(c)}</th>" for c in t.columns]
        parts.append("</tr>")
        for row in t.rows:
            parts.append("<tr>" + "".join(f"<td>{e(fmt(v))}</td>" for v in row) + "</tr>")
        parts.append("</table>")
        if t.note:
            parts.append(f"<p>{e(t.note)}</p>")
        parts.append(f"<p class='src'>{e(_source(t))}</p>")
    parts.append("</body></html>")
    return "\n".join(parts)


def audit_table(lake: Lake, data: CampaignData) -> Table:
    """The data-quality audit of the campaign, per round (what ``evosyn audit`` prints)."""
    audits = audit_campaign(lake, data.campaign_id, data.domain)
    return Table(
        "audit",
        "Data quality per round (evosyn audit)",
        ["measure", *(f"round {a.round}" for a in audits)],
        rows=[list(row) for row in audit_rows(audits)],
        functions=["evosyn.report.audit.audit_campaign"],
        note="Rules and official rates: docs/quality.md. Shares are of the round's tasks or "
        "kept trajectories; the official rows are the domain's official tasks.",
    )


def tau2_line(lake: Lake, campaign_id: str) -> str:
    """Which τ²-bench and task revision the campaign ran with, as its row recorded it."""
    rows = lake.read(Campaign, campaign_id)
    recorded = rows[0].tau2 if rows else None
    return f"τ²-bench: {recorded or 'not recorded (the campaign predates the record)'}"


Step = Callable[[str, int, int], None]
"""Told as each stage of a report starts: what it does, the stages done, the stages in all."""


def write_report(
    lake: Lake,
    campaign_id: str,
    out: Path,
    compare: Sequence[str] = (),
    step: Step | None = None,
) -> Report:
    """Compute every table of ``campaign_id`` (compared with ``compare``) and write the report.

    Writes ``report.html``, ``report.md``, the PNG plots and ``queries/NAME.sql`` (one file per
    query of each campaign, runnable with ``evosyn sql "$(cat FILE)"``) under ``out``. ``step``
    is told of each stage: reading each campaign, the tables, the audit, each plot, the pages.

    Raises:
        ReportError: If a campaign is not in the lake.
    """
    ids = [campaign_id, *compare]
    # Each campaign's reading, the tables, the audit, each plot (PLOT_TITLES names them), pages.
    total = len(ids) + 2 + len(PLOT_TITLES) + 1
    done = 0

    def starting(what: str) -> None:
        nonlocal done
        if step is not None:
            step(what, done, total)
        done += 1

    loaded: list[CampaignData] = []
    for cid in ids:
        starting(f"reading {cid}")
        loaded.append(load_campaign(lake, cid))
    main, *others = loaded
    starting("tables")
    tables = build_tables(main, others)
    starting("audit")
    tables.append(audit_table(lake, main))
    out.mkdir(parents=True, exist_ok=True)
    qdir = out / "queries"
    qdir.mkdir(exist_ok=True)
    written: list[Path] = []
    for i, d in enumerate(loaded):
        for q in d.queries.values():
            path = qdir / (f"{q.name}.sql" if i == 0 else f"{d.campaign_id}.{q.name}.sql")
            path.write_text(q.sql + "\n", "utf-8")
            written.append(path)
    success = next(t for t in tables if t.key == "success")
    drawings: dict[str, Callable[[], Path | None]] = {
        "metrics_by_round": lambda: plots.metrics_by_round(tables[0], out, success),
        "coverage_heatmaps": lambda: plots.coverage_heatmaps(main, out),
        "gap_vs_allocation": lambda: plots.gap_vs_allocation(transitions(main), out),
        "probe_failure": lambda: plots.probe_failure(main, out),
        "space_timeline": lambda: plots.space_timeline(main, out),
    }
    pngs: list[Path] = []
    for name, draw in drawings.items():
        starting(f"plot {name}")
        png = draw()
        if png is not None:
            pngs.append(png)
    starting("pages")
    title = f"EvoSyn campaign report: {campaign_id}" + (
        f" vs {', '.join(compare)}" if compare else ""
    )
    note = (
        f"Domain {main.domain}; {tau2_line(lake, campaign_id)}; lake {lake.location}. Every "
        "number comes from the SQL files in queries/ (main campaign unprefixed) and the named "
        "function. " + CAVEAT
    )
    md = out / "report.md"
    md.write_text(markdown(title, tables, pngs, note), "utf-8")
    page = out / "report.html"
    page.write_text(html_page(title, tables, pngs, note), "utf-8")
    return Report(page, md, pngs, written, tables)
