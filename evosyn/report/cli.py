"""The ``evosyn report`` and ``evosyn audit`` commands."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

err = Console(stderr=True)
console = Console()

LakeRoot = Annotated[
    str | None, typer.Option("--lake", help="Lake root (default: from the config).")
]
ConfigFile = Annotated[
    Path | None, typer.Option("--config", "-c", help="Campaign YAML file (for the lake).")
]
Overrides = Annotated[
    list[str] | None,
    typer.Option("--set", help="Override a config value: key.path=value (repeatable)."),
]


def report_command(
    campaign_id: Annotated[str, typer.Argument(help="Campaign to report on.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder to write the report to.")],
    compare: Annotated[
        list[str] | None,
        typer.Option("--compare", help="Another campaign to line up with it (repeatable)."),
    ] = None,
    lake_root: LakeRoot = None,
    config: ConfigFile = None,
    overrides: Overrides = None,
) -> None:
    """Write an HTML + Markdown report with plots, and the SQL behind every number."""
    from evosyn.config import ConfigError, load_config
    from evosyn.report.data import ReportError
    from evosyn.report.render import write_report
    from evosyn.storage import Lake, LakeError, UnknownCampaignError

    def fail(message: str, code: int) -> None:
        err.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
        raise typer.Exit(code)

    try:
        cfg = load_config(config, list(overrides or []))
    except ConfigError as exc:
        fail(str(exc), 2)
        return
    root = lake_root or cfg.lake.root
    try:
        lake = Lake(root, cfg.lake.s3_endpoint, cfg.lake.cache_dir, create=False)
        for cid in [campaign_id, *(compare or [])]:
            lake.check_campaign(cid)
        report = write_report(lake, campaign_id, out, list(compare or []))
    except (ReportError, UnknownCampaignError) as exc:
        fail(str(exc), 2)
        return
    except LakeError as exc:
        fail(str(exc), 1)
        return
    console.print(f"report: {report.html} and {report.markdown}")
    console.print(f"plots: {', '.join(p.name for p in report.plots)}")
    console.print(f"queries: {len(report.queries)} SQL files in {out / 'queries'}")


def audit_command(
    campaign_id: Annotated[str, typer.Argument(help="Campaign to audit.")],
    lake_root: LakeRoot = None,
    config: ConfigFile = None,
    overrides: Overrides = None,
) -> None:
    """Audit the quality of a campaign's synthesized data, per round (rules: docs/quality.md)."""
    from rich.table import Table

    from evosyn.config import ConfigError, load_config
    from evosyn.records import Campaign
    from evosyn.report.audit import audit_campaign, audit_rows
    from evosyn.storage import Lake, LakeError, UnknownCampaignError

    try:
        cfg = load_config(config, list(overrides or []))
        lake = Lake(
            lake_root or cfg.lake.root, cfg.lake.s3_endpoint, cfg.lake.cache_dir, create=False
        )
        lake.check_campaign(campaign_id)
        domain = lake.read(Campaign, campaign_id)[0].domain
        audits = audit_campaign(lake, campaign_id, domain)
    except (ConfigError, UnknownCampaignError, LakeError) as exc:
        err.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
        raise typer.Exit(1 if type(exc) is LakeError else 2) from None
    table = Table("measure", *(f"round {a.round}" for a in audits), title=f"audit {campaign_id}")
    for row in audit_rows(audits):
        table.add_row(*row)
    console.print(table)
