"""The ``evosyn`` command line."""

from __future__ import annotations

import csv
import json
import os
import shlex
import sys
from collections.abc import MutableMapping
from datetime import date, datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, NoReturn

import duckdb
import typer
from rich import box
from rich.console import Console
from rich.table import Column, Table

from evosyn.agents.learner.cli import export_app
from evosyn.config import CampaignConfig, ConfigError, load_config
from evosyn.environments.cli import env_app

app = typer.Typer(
    name="evosyn",
    help="Closed-loop agentic data synthesis on τ²-bench domains.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
campaign_app = typer.Typer(help="Run and inspect campaigns.", no_args_is_help=True)
app.add_typer(campaign_app, name="campaign")
app.add_typer(env_app, name="env", help="τ²-bench domains and the replay verifier.")
app.add_typer(export_app, name="export", help="Export verified data for training.")

console = Console()
err = Console(stderr=True)

ConfigPath = Annotated[
    Path | None, typer.Option("--config", "-c", help="Campaign YAML file (for the lake's root).")
]
SetOption = Annotated[
    list[str] | None,
    typer.Option("--set", help="Override a config value: key.path=value (repeatable)."),
]


# Prefect's defaults for `campaign run` unless the user set them: its INFO log of every task
# run would bury the progress bars, a local run sends no analytics, and on a busy 2-core machine
# the ephemeral API server can take longer than Prefect's 20 s to start.
QUIET_PREFECT = {
    "PREFECT_LOGGING_LEVEL": "WARNING",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
}


def quiet_prefect_defaults(environ: MutableMapping[str, str] | None = None) -> None:
    """Set the quiet Prefect defaults in ``environ`` (the process's), keeping the user's."""
    env = os.environ if environ is None else environ
    for name, value in QUIET_PREFECT.items():
        env.setdefault(name, value)


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
    campaign_id: Annotated[
        str | None, typer.Option("--campaign-id", help="Campaign id (default from config).")
    ] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="Campaign seed.")] = None,
    overrides: SetOption = None,
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue a campaign already in the lake.")
    ] = False,
) -> None:
    """Run a multi-round campaign (the closed loop) and print its round table."""
    quiet_prefect_defaults()  # before Prefect is imported: it reads its settings then
    from evosyn.records import Campaign
    from evosyn.storage import Lake, LakeError

    extra = list(overrides or [])
    if campaign_id is not None:
        extra.append(f"campaign.id={campaign_id}")
    if seed is not None:
        extra.append(f"campaign.seed={seed}")
    cfg = _config(config, extra)
    cid = cfg.campaign.resolved_id()
    try:
        from evosyn.agents.roles import roles_for
        from evosyn.tasks.loop import check_ablations

        # Fail on an unavailable role or ablation before any work starts.
        check_ablations(cfg, roles_for(cfg))
        lake = Lake(cfg.lake.root, cfg.lake.s3_endpoint, cfg.lake.cache_dir)
        exists = bool(lake.read(Campaign, cid))
    except ConfigError as exc:
        fail(str(exc), 2)
    except LakeError as exc:
        fail(str(exc))
    if exists and not resume:
        fail(f"campaign {cid!r} is already in {lake.root}: pass --resume to continue it", 2)
    if resume and not exists:
        fail(f"campaign {cid!r} is not in {lake.root}: nothing to resume", 2)
    from evosyn.flows.campaign import campaign_flow

    simulated = cfg.agents.learner.kind == "simulated"
    learner = "simulated learner" if simulated else f"{cfg.agents.learner.kind} learner"
    console.print(
        f"campaign [bold]{cid}[/] ({cfg.campaign.domain}, {learner}), lake {lake.root}",
        highlight=False,
    )
    summaries = _run_with_progress(cfg, cid, campaign_flow)
    console.print(round_table(cid, summaries, simulated))
    planted = planted_line(cfg, summaries)
    if planted:
        console.print(planted, highlight=False)
    if simulated:
        console.print("[yellow]learner: simulated (a labelled simulation, not a trained model)[/]")
    console.print(f"lake: {lake_location(cfg)}", highlight=False, soft_wrap=True)
    console.print("next:", highlight=False)
    for command in next_commands(cfg, cid):
        # soft_wrap: one line each, so a command copies and pastes whole.
        console.print(f"  {command}", highlight=False, soft_wrap=True, markup=False)


def _run_with_progress(cfg: CampaignConfig, cid: str, run: Any) -> Any:
    # One bar per stage; a resumed campaign's finished work fills its bars at once.
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from evosyn.tasks.loop import STAGES, progress_to

    rounds, budget = cfg.campaign.rounds, cfg.campaign.budget_per_round
    totals = {stage: rounds for stage in STAGES} | {
        "reflect": rounds - 1,
        "synthesize": rounds * budget,
    }
    columns = (
        TextColumn("{task.description:<14}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=err) as progress:
        bars = {stage: progress.add_task(stage, total=totals[stage]) for stage in STAGES}

        def sink(stage: str, round: int, units: int) -> None:
            progress.update(bars[stage], advance=units, description=f"{stage} r{round}")

        with progress_to(sink):
            return run(cfg, cid)


def lake_location(cfg: CampaignConfig) -> str:
    """The config's lake root as an absolute path (an S3 URI as it is)."""
    root = cfg.lake.root
    return root if "://" in root else str(Path(root).resolve())


def next_commands(cfg: CampaignConfig, cid: str) -> list[str]:
    """Commands to look at campaign ``cid`` next, runnable from any folder."""
    where = f"--set lake.root={shlex.quote(lake_location(cfg))}"
    if cfg.lake.s3_endpoint:
        where += f" --set lake.s3_endpoint={shlex.quote(cfg.lake.s3_endpoint)}"
    rounds = (
        "SELECT round, decision, fixed_success, fixed_n, n_verified FROM rounds "
        f"WHERE campaign_id = '{cid}' ORDER BY round"
    )
    return [
        # Double quotes: campaign ids are letters, digits, _ . - (nothing a shell expands).
        f'evosyn sql "{rounds}" {where}',
        f"evosyn report {cid} --out report/{cid} {where}",
        f"evosyn export sft {cid} --out sft/{cid} {where}",
    ]


def round_table(cid: str, summaries: list[Any], simulated: bool) -> Table:
    """The campaign's rounds: space version, decision, counts and the learner's success.

    Success is shown twice, labelled: on the fixed diagnostic set (the official diagnostic
    split, the same every round) with its Wilson 95% interval, which compares across rounds;
    and on the whole diagnostic set, which adds each round's held-out synthesized tasks and
    so changes every round.
    """
    learner = "simulated learner" if simulated else "learner"
    numeric = [
        "verified\n/ planned",
        "rejected",
        "success,\nfixed set\n[95% CI]",
        "n",
        "success,\nall diag-\nnostics",
        "n",
    ]
    table = Table(
        Column("round", no_wrap=True),
        Column("space", no_wrap=True),
        Column("decision", min_width=12, ratio=1, overflow="fold"),
        *(Column(h, no_wrap=True, justify="right") for h in numeric),
        box=box.SIMPLE_HEAD,
        padding=0,
        pad_edge=False,
        title=f"campaign {cid}",
        caption_justify="left",
        caption=f"success, fixed set: the {learner} on the official diagnostic split, the "
        "same tasks every round (n episodes = tasks x trials), with a Wilson 95% interval. "
        "success, all diagnostics: those plus the held-out synthesized tasks so far, a set "
        "that grows every round, so it does not compare across rounds. decision: what shaped "
        "the round's space (the Reflector's review of the round before).",
    )
    for s in summaries:
        table.add_row(
            str(s.round),
            f"v{s.space_version}",
            s.decision or "-",
            f"{s.n_verified}/{s.n_blueprints}",
            str(s.n_rejected),
            rate_text(s.fixed_success, s.fixed_n),
            str(s.fixed_n) if s.fixed_n else "-",
            "-" if s.diagnostic_success is None else f"{s.diagnostic_success:.2f}",
            str(s.diagnostic_n) if s.diagnostic_n else "-",
        )
    return table


def rate_text(success: float | None, n: int) -> str:
    """``0.82 [0.73, 0.89]``: a success rate over ``n`` episodes with its Wilson 95% interval."""
    from evosyn.report.metrics import wilson_interval

    if success is None or not n:
        return "-"
    rate = wilson_interval(round(success * n), n)
    return f"{success:.2f} [{rate.low:.2f}, {rate.high:.2f}]"


def planted_line(cfg: CampaignConfig, summaries: list[Any]) -> str | None:
    """The simulated learner's success on its planted weakness, round by round (else None)."""
    weaknesses = cfg.agents.learner.weaknesses
    if cfg.agents.learner.kind != "simulated" or not weaknesses or not summaries:
        return None
    where = " or ".join(f"{w.feature} in {{{', '.join(w.values)}}}" for w in weaknesses)
    sizes = {s.planted_n for s in summaries}
    if sizes == {0}:
        return f"planted weakness ({where}): no fixed-set task falls in it"
    # The fixed set is the same every round, and so is its planted slice: say n once.
    same = len(sizes) == 1
    episodes = f"its {summaries[0].planted_n} fixed-set episodes" if same else "fixed-set episodes"
    rounds = " -> ".join(
        f"r{s.round} {rate_text(s.planted_success, s.planted_n)}"
        + ("" if same else f" (n={s.planted_n})")
        for s in summaries
    )
    return f"planted weakness ({where}), success on {episodes}:\n  {rounds}"


@app.command()
def synth(
    domain: Annotated[str, typer.Option("--domain", "-d", help="τ²-bench domain.")] = "airline",
    n: Annotated[int, typer.Option("--n", "-n", min=1, help="Blueprints to synthesize.")] = 100,
    seed: Annotated[int, typer.Option("--seed", help="Seed of every choice.")] = 0,
    campaign_id: Annotated[
        str | None, typer.Option("--campaign-id", help="Lake campaign id (default: synth-...).")
    ] = None,
    config: ConfigPath = None,
    overrides: SetOption = None,
) -> None:
    """Synthesize a verified dataset in one static round (no learner, uniform allocation)."""
    from rich.progress import Progress

    from evosyn.agents.roles import roles_for
    from evosyn.agents.synthesis import controllability, synthesize
    from evosyn.records import Campaign, Direction, ObjectiveType
    from evosyn.space import seed_space
    from evosyn.storage import Lake, LakeError

    extra = [f"campaign.domain={domain}", f"campaign.seed={seed}", "campaign.name=synth"]
    extra += [f"campaign.id={campaign_id}"] if campaign_id else []
    cfg = _config(config, [*extra, *(overrides or [])])
    cid = cfg.campaign.resolved_id()
    try:
        roles = roles_for(cfg)
        lake = Lake(cfg.lake.root, cfg.lake.s3_endpoint, cfg.lake.cache_dir)
        if lake.read(Campaign, cid):
            fail(f"campaign {cid!r} is already in {lake.root}; choose another --campaign-id", 2)
        space = seed_space(domain, cid, round=1)
        direction = Direction(
            campaign_id=cid,
            round=1,
            direction_id="r1-uniform",
            space_version=1,
            objective=ObjectiveType.EXPLORATION,
            budget=n,
            rationale="static synthesis: uniform over the initial space",
        )
        blueprints = roles.planner.plan(space, direction, seed=seed)
        with Progress(console=err, transient=True) as progress:
            bar = progress.add_task(f"synthesizing {domain}", total=n)
            batch = synthesize(
                blueprints,
                roles.generator,
                roles.teacher,
                roles.verifier,
                seed=seed,
                progress=lambda k: progress.advance(bar, k),
            )
        lake.write(
            [
                Campaign(
                    campaign_id=cid,
                    round=0,
                    name="synth",
                    domain=domain,
                    seed=seed,
                    config=cfg.model_dump(mode="json"),
                )
            ],
            batch="campaign",
        )
        lake.write([space], batch="v1")
        lake.write([direction], batch="plan")
        lake.write(blueprints, batch="blueprints")
        for records in (batch.tasks, batch.trajectories, batch.verifications, batch.rejections):
            if records:
                lake.write(records, batch="synth")
    except ConfigError as exc:
        fail(str(exc), 2)
    except LakeError as exc:
        fail(str(exc))
    verified = batch.verified
    table = Table("measure", "value", title=f"synth {cid} ({domain}, seed {seed})")
    table.add_row("blueprints", str(len(blueprints)))
    table.add_row(
        "verified share", f"{len(verified) / max(1, len(blueprints)):.1%} ({len(verified)})"
    )
    checked = len(batch.verifications)
    table.add_row(
        "verified share of rolled-out tasks", f"{len(verified) / max(1, checked):.1%} ({checked})"
    )
    by_stage: dict[str, int] = {}
    for r in batch.rejections:
        by_stage[r.stage] = by_stage.get(r.stage, 0) + 1
    for stage, count in sorted(by_stage.items()):
        if stage != "contamination":
            table.add_row(f"rejected at {stage}", str(count))
    table.add_row("contamination rejections", str(by_stage.get("contamination", 0)))
    skips = getattr(roles.generator, "contamination_skips", None)
    if skips is not None:
        table.add_row("official duplicates skipped", str(skips))
    signatures = {v.realized.get("decisive_signature") for v in verified}
    table.add_row("distinct decisive signatures", str(len(signatures)))
    for c in controllability(blueprints, batch):
        note = f"; {c.underivable} not derivable" if c.underivable else ""
        table.add_row(f"controllability {c.factor}", f"{c.rate:.1%} ({c.matched}/{c.total}{note})")
    console.print(table)


from evosyn.report.cli import audit_command, report_command  # noqa: E402

app.command("report")(report_command)
app.command("audit")(audit_command)


def main() -> None:
    """Entry point of the ``evosyn`` script."""
    app()
