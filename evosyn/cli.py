"""The ``evosyn`` command line."""

from __future__ import annotations

import csv
import json
import sys
from datetime import date, datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, NoReturn

import duckdb
import typer
from rich.console import Console
from rich.table import Table

from evosyn.config import CampaignConfig, ConfigError, load_config

app = typer.Typer(
    name="evosyn",
    help="Closed-loop agentic data synthesis on τ²-bench domains.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
campaign_app = typer.Typer(help="Run and inspect campaigns.", no_args_is_help=True)
app.add_typer(campaign_app, name="campaign")

console = Console()
err = Console(stderr=True)

ConfigPath = Annotated[
    Path | None, typer.Option("--config", "-c", help="Campaign YAML file (for the lake's root).")
]
SetOption = Annotated[
    list[str] | None,
    typer.Option("--set", help="Override a config value: key.path=value (repeatable)."),
]


def fail(message: str, code: int = 1) -> NoReturn:
    """Print a one-line error and exit non-zero."""
    err.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def _config(path: Path | None, overrides: list[str] | None) -> CampaignConfig:
    try:
        return load_config(path, overrides or [])
    except ConfigError as exc:
        fail(str(exc), 2)


class OutputFormat(StrEnum):
    """How ``evosyn sql`` prints its result."""

    TABLE = "table"
    CSV = "csv"
    JSON = "json"


def _plain(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    return value


@app.command()
def sql(
    query: Annotated[str, typer.Argument(help="A read-only SQL query over the lake's tables.")],
    fmt: Annotated[OutputFormat, typer.Option("--format", "-f", help="Output format.")] = (
        OutputFormat.TABLE
    ),
    config: ConfigPath = None,
    overrides: SetOption = None,
) -> None:
    """Query the synthesis history with DuckDB SQL (read-only)."""
    from evosyn.storage import Lake, LakeError, ReadOnlyQueryError
    from evosyn.storage.sql import check_read_only
    from evosyn.storage.sql import query as run_query

    try:
        check_read_only(query)
    except ReadOnlyQueryError as exc:
        fail(str(exc), 2)
    cfg = _config(config, overrides)
    try:
        lake = Lake(cfg.lake.root, cfg.lake.s3_endpoint, cfg.lake.cache_dir)
        columns, rows = run_query(lake, query)
    except LakeError as exc:
        fail(str(exc))
    except duckdb.Error as exc:
        fail(f"query failed: {str(exc).splitlines()[0]}")
    if fmt is OutputFormat.JSON:
        out = [{c: _plain(v) for c, v in zip(columns, row, strict=True)} for row in rows]
        sys.stdout.write(json.dumps(out, ensure_ascii=False, default=str) + "\n")
    elif fmt is OutputFormat.CSV:
        writer = csv.writer(sys.stdout)
        writer.writerow(columns)
        writer.writerows([[_plain(v) for v in row] for row in rows])
    else:
        table = Table(*columns, caption=f"{len(rows)} row{'s' if len(rows) != 1 else ''}")
        for row in rows:
            table.add_row(*("NULL" if v is None else str(_plain(v)) for v in row))
        console.print(table)


@campaign_app.command("run")
def campaign_run(
    config: Annotated[Path, typer.Argument(help="Campaign YAML file.")],
    overrides: SetOption = None,
) -> None:
    """Validate a campaign config and start the campaign in the lake.

    The closed loop (Designer to Reflector) is not wired yet: this records the campaign, its
    seed synthesis space and round 0, which every later round builds on.
    """
    from evosyn.records import Campaign, RoundSummary
    from evosyn.space import seed_space
    from evosyn.storage import Lake, LakeError

    cfg = _config(config, overrides)
    campaign_id = cfg.campaign.resolved_id()
    space = seed_space(cfg.campaign.domain, campaign_id)
    try:
        lake = Lake(cfg.lake.root, cfg.lake.s3_endpoint, cfg.lake.cache_dir)
        lake.write(
            [
                Campaign(
                    campaign_id=campaign_id,
                    round=0,
                    name=cfg.campaign.name,
                    domain=cfg.campaign.domain,
                    seed=cfg.campaign.seed,
                    config=cfg.model_dump(mode="json"),
                )
            ],
            batch="campaign",
        )
        lake.write([space], batch=f"v{space.version}")
        lake.write(
            [
                RoundSummary(
                    campaign_id=campaign_id, round=0, space_version=1, budget=0, status="succeeded"
                )
            ],
            batch="summary",
        )
    except LakeError as exc:
        fail(str(exc))
    table = Table("factor", "values", "select", title=f"seed synthesis space of {campaign_id}")
    for factor in space.factors:
        table.add_row(
            factor.name, ", ".join(factor.values), f"{factor.min_select}..{factor.max_select}"
        )
    console.print(table)
    console.print(
        f"campaign [bold]{campaign_id}[/] ({cfg.campaign.domain}) recorded in lake "
        f"{lake.root}: campaign, space v1, round 0.\n"
        "[yellow]The closed loop is not wired yet; this ran its first piece (initial state).[/]"
    )


def _mount_optional() -> None:
    # Sub-apps of the design card's packages join the CLI as they exist.
    try:
        from evosyn.environments.cli import env_app
    except ImportError:
        return
    app.add_typer(env_app, name="env", help="τ²-bench domains and the replay verifier.")


_mount_optional()


def main() -> None:
    """Entry point of the ``evosyn`` script."""
    app()
