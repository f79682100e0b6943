"""The ``evosyn report`` command."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

err = Console(stderr=True)
console = Console()


def report_command(
    campaign_id: Annotated[str, typer.Argument(help="Campaign to report on.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder to write the report to.")],
    compare: Annotated[
        list[str] | None,
        typer.Option("--compare", help="Another campaign to line up with it (repeatable)."),
    ] = None,
    lake_root: Annotated[
        str | None, typer.Option("--lake", help="Lake root (default: from the config).")
    ] = None,
    config: Annotated[
        Path | None, typer.Option("--config", "-c", help="Campaign YAML file (for the lake).")
    ] = None,
    overrides: Annotated[
        list[str] | None,
        typer.Option("--set", help="Override a config value: key.path=value (repeatable)."),
    ] = None,
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
