"""The ``evosyn`` command line: the app, ``sql`` and ``synth``.

Each command group lives in its own module, which the app mounts when the command is used
(:class:`_LazyGroup`): ``campaign`` in ``evosyn/campaign_cli.py``, ``experiment`` in
``evosyn/experiment_cli.py``, ``export``, ``report`` and ``audit`` in ``evosyn/export/`` and
``evosyn/report/``, ``env`` with the Verifier.
"""

from __future__ import annotations

import csv
import importlib
import json
import shlex
import sys
from datetime import date, datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

import typer
from typer.core import TyperGroup

from evosyn.cli_common import (
    ConfigPath,
    LakeOption,
    SetOption,
    console,
    fail,
    progress_bars,
    rerun_line,
)
from evosyn.interrupt import CampaignInterrupt

if TYPE_CHECKING:
    # Typer ships its own copy of click; its groups take and return that copy's types.
    from typer import _click as click

    from evosyn.config import CampaignConfig
    from evosyn.storage import Lake

# Start-up time matters for a command typed many times a day: this module imports only what
# every command needs; each command imports its own (rich, duckdb, pydantic models, τ²-bench).


class _LazyGroup(TyperGroup):
    """The top-level group: the commands of other modules (:attr:`LAZY`) load lazily.

    Their modules import Prefect, τ²-bench, pandas or matplotlib; `evosyn --help` lists them
    from the table below without importing anything.
    """

    LAZY: ClassVar[dict[str, tuple[str, str, str]]] = {
        "campaign": ("evosyn.campaign_cli", "campaign_app", "Run and inspect campaigns."),
        "env": (
            "evosyn.agents.verifier.cli",
            "env_app",
            "τ²-bench domains and the replay verifier.",
        ),
        "export": (
            "evosyn.export.cli",
            "export_app",
            "Export verified data: SFT and RL sets, τ²-bench task sets, Hugging Face datasets.",
        ),
        "experiment": (
            "evosyn.experiment_cli",
            "experiment_app",
            "Run experiments: arms × seeds of campaigns.",
        ),
        "report": (
            "evosyn.report.cli",
            "report_command",
            "Report on a campaign (HTML, plots, SQL) or compare an experiment's arms.",
        ),
        "audit": (
            "evosyn.report.cli",
            "audit_command",
            "Audit the quality of a campaign's synthesized data, per round.",
        ),
        "reward": ("evosyn.agents.episodes.cli", "reward_app", "Serve rewards over HTTP (RL)."),
        "bridge": (
            "evosyn.agents.gateway.bridge_cli",
            "bridge_app",
            "The file bridge: an OpenAI-compatible server answered by hand, as files.",
        ),
    }

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*super().list_commands(ctx), *(n for n in self.LAZY if n not in self.commands)]

    READS: ClassVar[frozenset[str]] = frozenset({"export", "report", "audit"})
    """Lazy commands that only read a lake: its absence is told before their module loads."""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        if args and args[0] in self.READS:
            _lake_first(args[1:])
        return super().resolve_command(ctx, args)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.LAZY and cmd_name not in self.commands:
            self.commands[cmd_name] = _load(cmd_name, *self.LAZY[cmd_name])
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            if name in self.LAZY and name not in self.commands:
                rows.append((name, self.LAZY[name][2]))
            elif (cmd := self.get_command(ctx, name)) is not None and not cmd.hidden:
                rows.append((name, cmd.get_short_help_str(formatter.width - 6 - len(name))))
        with formatter.section("Commands"):
            formatter.write_dl(sorted(rows))


def _lake_first(args: list[str]) -> None:
    """Exit 1 with one line where a read command's local lake does not exist.

    Its module takes a second or more to import (τ²-bench, pandas, matplotlib); the lake's
    absence is known from ``--lake``, ``--config`` and ``--set`` alone, in a fraction of that.
    """
    if {"--help", "-h"} & set(args):
        return
    lake: str | None = None
    config: Path | None = None
    sets: list[str] = []
    words = iter(args)
    for word in words:
        name, eq, value = word.partition("=")
        if name not in ("--lake", "--config", "-c", "--set"):
            continue
        if not eq:
            following = next(words, None)
            if following is None:
                return  # the command itself says what is missing
            value = following
        if name == "--lake":
            lake = value
        elif name == "--set":
            sets.append(value)
        else:
            config = Path(value)
    root = lake or campaign_config(config, sets).lake.root
    if "://" not in root:  # a remote lake is asked once, by the command
        open_lake(root, config, sets)


def _load(name: str, module: str, attribute: str, help: str) -> click.Command:
    target = getattr(importlib.import_module(module), attribute)
    # Mounted as if by add_typer on the top-level app: plain help, no completion options.
    wrapper = typer.Typer(add_completion=False, rich_markup_mode=None)
    if isinstance(target, typer.Typer):
        wrapper.add_typer(target, name=name, help=help)
    else:
        wrapper.command(name)(target)
        wrapper.callback()(lambda: None)  # a group, so the command keeps its name
    group = typer.main.get_command(wrapper)
    command: click.Command = group.commands[name]  # type: ignore[attr-defined]
    return command


app = typer.Typer(
    name="evosyn",
    help="Closed-loop agentic data synthesis on τ²-bench domains.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    cls=_LazyGroup,
)


def _version(value: bool) -> None:
    if value:
        from evosyn import __version__

        typer.echo(f"evosyn {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", help="Print the version and exit.", callback=_version, is_eager=True
        ),
    ] = False,
) -> None:
    """Closed-loop agentic data synthesis on τ²-bench domains."""


def campaign_config(path: Path | None, overrides: list[str] | None) -> CampaignConfig:
    """The campaign config at ``path`` with ``overrides``; one line and exit 2 if invalid."""
    from evosyn.config import ConfigError, load_config

    try:
        return load_config(path, overrides or [])
    except ConfigError as exc:
        fail(str(exc), 2)


def open_lake(
    lake_root: str | None, config: Path | None = None, overrides: list[str] | None = None
) -> Lake:
    """The existing lake at ``--lake`` (else the config's root) for a read command.

    A read never makes a lake: where there is none, one line names the place looked at.
    """
    from evosyn.storage import Lake, LakeError

    cfg = campaign_config(config, overrides)
    try:
        return Lake(
            lake_root or cfg.lake.root, cfg.lake.s3_endpoint, cfg.lake.cache_dir, create=False
        )
    except LakeError as exc:
        fail(str(exc))


CELL_CHARS = 120
"""Longest value `evosyn sql` prints whole in a table."""


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
    lake_root: LakeOption = None,
    config: ConfigPath = None,
    overrides: SetOption = None,
) -> None:
    """Query the synthesis history with DuckDB SQL (read-only).

    One view per table: `SHOW TABLES` lists them, `DESCRIBE verifications` shows a table's
    columns, `SELECT * FROM campaigns` the campaigns (or use `evosyn campaign list`).
    """
    import duckdb

    from evosyn.storage import LakeError, ReadOnlyQueryError
    from evosyn.storage.sql import check_read_only
    from evosyn.storage.sql import query as run_query

    try:
        check_read_only(query)
    except ReadOnlyQueryError as exc:
        fail(str(exc), 2)
    lake = open_lake(lake_root, config, overrides)
    try:
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
        from rich.table import Table

        cells = [["NULL" if v is None else str(_plain(v)) for v in row] for row in rows]
        # A stored config or conversation is thousands of characters: one such cell would
        # fill the screen. The table shows its start; json and csv give every value whole.
        cut = any(len(c) > CELL_CHARS for row in cells for c in row)
        caption = f"{len(rows)} row{'s' if len(rows) != 1 else ''}"
        if cut:
            caption += f"; values over {CELL_CHARS} characters cut (--format json: whole)"
        table = Table(*columns, caption=caption)
        for row in cells:
            table.add_row(*(c if len(c) <= CELL_CHARS else c[: CELL_CHARS - 1] + "…" for c in row))
        console().print(table)


@app.command()
def synth(
    domain: Annotated[str, typer.Option("--domain", "-d", help="τ²-bench domain.")] = "airline",
    n: Annotated[int, typer.Option("--n", "-n", min=1, help="Blueprints to synthesize.")] = 100,
    seed: Annotated[int, typer.Option("--seed", help="Seed of every choice.")] = 0,
    campaign_id: Annotated[
        str | None, typer.Option("--campaign-id", help="Lake campaign id (default: synth-...).")
    ] = None,
    lake_root: LakeOption = None,
    config: ConfigPath = None,
    overrides: SetOption = None,
    exact: Annotated[
        bool,
        typer.Option("--exact", help="Exit with status 1 when fewer than --n tasks are verified."),
    ] = False,
) -> None:
    """Synthesize a verified dataset in one static round (no learner, uniform allocation).

    Each blueprint gives at most one verified task; those that do not are rejected with a
    reason, and the last line says how many fell short and why. Ctrl-C stops it within
    seconds with one line; the same command with the same --campaign-id resumes it.
    """
    extra = [f"campaign.domain={domain}", f"campaign.seed={seed}", "campaign.name=synth"]
    extra += [f"campaign.id={campaign_id}"] if campaign_id else []
    extra += [f"lake.root={lake_root}"] if lake_root else []
    cfg = campaign_config(config, [*extra, *(overrides or [])])
    cid = cfg.campaign.resolved_id()
    # The command that resumes this synth: a default id is made from the clock, so it is named.
    again = ["evosyn", "synth", "--domain", domain, "--n", str(n), "--seed", str(seed)]
    again += ["--campaign-id", cid, *(["--lake", lake_root] if lake_root else [])]
    again += ["--config", str(config)] if config else []
    for item in overrides or []:
        again += ["--set", item]
    again += ["--exact"] if exact else []
    with CampaignInterrupt("interrupted before anything was stored") as stop:
        short = _synth(cfg, cid, n, stop, shlex.join(again))
    if short is not None:
        if exact:
            fail(short)
        console().print(f"[yellow]{short}[/]", highlight=False, soft_wrap=True)


def shortfall_line(
    requested: int, planned: int, verified: int, by_stage: dict[str, int], failed: int = 0
) -> str:
    """One line: how many of the requested tasks ``synth`` did not verify, and why.

    ``by_stage`` counts the stored rejections; ``failed`` the requests that raised, which are
    not stored: the same command retries them.
    """
    why = [f"{stage} {count}" for stage, count in sorted(by_stage.items(), key=lambda i: -i[1])]
    if planned < requested:
        why.insert(0, f"not planned {requested - planned}")
    if failed:
        why.append(f"failed with an error {failed} (the same command retries them)")
    return (
        f"short: {verified} of {requested} requested tasks verified; "
        f"{requested - verified} fell out: {', '.join(why) or 'no rejection stored'} "
        "(the rejections table gives each reason)"
    )


def _synth(
    cfg: CampaignConfig, cid: str, n: int, stop: CampaignInterrupt, again: str
) -> str | None:
    """Run and store the static round, or resume it; print its table; the shortfall line, if any.

    Its steps are a round's (plan, generate, roll out and verify), each stored with its
    done-marker (``tasks/lake_step.py``): ``again``, the same command, reads the finished
    steps back and runs the rest.
    """
    from rich.table import Table

    from evosyn.agents.gateway import BudgetExceeded, ModelUnreachable
    from evosyn.agents.synthesis import SynthesisBatch, controllability
    from evosyn.config import ConfigError
    from evosyn.environments.tau2_data import tau2_provenance
    from evosyn.records import Campaign, Direction, GenerationPlan, ObjectiveType
    from evosyn.resume import changes_line, config_changes
    from evosyn.space import seed_space
    from evosyn.storage import Lake, LakeError
    from evosyn.tasks.loop import (
        generate_tasks,
        is_failure,
        plan_blueprints,
        progress_to,
        roles_for,
        synthesize_batch,
    )

    domain, seed = cfg.campaign.domain, cfg.campaign.seed
    try:
        roles = roles_for(cfg)
        lake = Lake(cfg.lake.root, cfg.lake.s3_endpoint, cfg.lake.cache_dir)
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
        stored = lake.read(Campaign, cid)
        if stored:
            # A synth cut short resumes; a whole one, or another kind of campaign, keeps its id.
            if stored[0].name != "synth" or _synthesized(lake, cid):
                fail(
                    f"campaign {cid!r} is already in {lake.location}; choose another --campaign-id",
                    2,
                )
            changes = config_changes(stored[0].config, cfg)
            changes += [
                f"--n: {d.budget!r} -> {n!r}"
                for d in lake.read(Direction, cid, 1)
                if d != direction
            ]
            if changes:
                what = "resume it with the command that started it, or choose another --campaign-id"
                fail(changes_line(cid, changes, what), 2)

        def say_what_is_stored() -> None:
            # The campaign row is written first; once it is there, the same command resumes.
            if lake.read(Campaign, cid):
                stop.message = (
                    f"interrupted: campaign {cid!r} is partly stored in {lake.location}; "
                    f"resume it with `{again}`"
                )

        stop.cleanups.append(say_what_is_stored)
        if not stored:
            lake.write(
                [
                    Campaign(
                        campaign_id=cid,
                        round=0,
                        name="synth",
                        domain=domain,
                        seed=seed,
                        config=cfg.model_dump(mode="json"),
                        tau2=tau2_provenance(domain),
                    )
                ],
                batch="campaign",
            )
        lake.write([space], batch="v1")
        lake.write([direction], batch="plan")
        plan = GenerationPlan(campaign_id=cid, round=1, total_budget=n, directions=[direction])
        with progress_bars(transient=True) as progress:
            stop.cleanups.insert(0, progress.stop)
            bar = progress.add_task(f"synthesizing {domain}", total=n)

            def advance(stage: str, _round: int, units: int) -> None:
                if stage == "synthesize":
                    progress.advance(bar, units)

            # The round's own steps with the synth's seed (a round draws with seed + round).
            with progress_to(advance):
                blueprints = plan_blueprints.fn(cfg, space, plan, seed)
                made = generate_tasks.fn(cfg, blueprints, seed) if blueprints else SynthesisBatch()
                rolled = (
                    synthesize_batch.fn(cfg, made.tasks, "synth", seed)
                    if made.tasks
                    else SynthesisBatch()
                )
    except ConfigError as exc:
        fail(str(exc), 2)
    except LakeError as exc:
        fail(str(exc))
    except ModelUnreachable as exc:
        # No model answered a whole step: its failed calls are stored, the same command retries.
        fail(f"{exc}: `{again}`")
    except BudgetExceeded as exc:
        fail(f"{exc}: `{again} --set {exc.key}={2 * exc.cap_usd:g}`")
    batch = SynthesisBatch(
        tasks=made.tasks,
        trajectories=rolled.trajectories,
        verifications=rolled.verifications,
        rejections=[*made.rejections, *rolled.rejections],
    )
    verified = batch.verified
    table = Table("measure", "value", title=f"synth {cid} ({domain}, seed {seed})")
    table.add_row("lake", lake.location)
    table.add_row("blueprints", str(len(blueprints)))
    table.add_row(
        "verified share", f"{len(verified) / max(1, len(blueprints)):.1%} ({len(verified)})"
    )
    checked = len(batch.verifications)
    table.add_row(
        "verified share of rolled-out tasks", f"{len(verified) / max(1, checked):.1%} ({checked})"
    )
    by_stage: dict[str, int] = {}
    failed = 0
    for r in batch.rejections:
        if is_failure(r):
            failed += 1
        else:
            by_stage[r.stage] = by_stage.get(r.stage, 0) + 1
    if failed:
        table.add_row("failed with an error (not stored; retried by a resume)", str(failed))
    for stage, count in sorted(by_stage.items()):
        if stage != "contamination":
            table.add_row(f"rejected at {stage}", str(count))
    table.add_row("contamination rejections", str(by_stage.get("contamination", 0)))
    skips = getattr(roles.generator, "skips", None)
    if skips is not None:
        # The Generator counts in memory: a resume may have read its tasks back instead.
        table.add_row(
            "candidates skipped as repeats", "not counted on a resume" if stored else str(skips)
        )
    signatures = {v.realized.get("decisive_signature") for v in verified}
    table.add_row("distinct decisive signatures", str(len(signatures)))
    for c in controllability(blueprints, batch):
        note = f"; {c.underivable} not derivable" if c.underivable else ""
        table.add_row(f"controllability {c.factor}", f"{c.rate:.1%} ({c.matched}/{c.total}{note})")
    console().print(table)
    if len(verified) >= n:
        return None
    return shortfall_line(n, len(blueprints), len(verified), by_stage, failed)


def _synthesized(lake: Lake, cid: str) -> bool:
    """Whether the synth stored as ``cid`` is whole: each blueprint ended verified or rejected.

    A blueprint whose request failed with an error has no row yet: the same command retries it.
    """
    from evosyn.records import Blueprint, Rejection, SynthTask, Verification

    blueprints = {b.blueprint_id for b in lake.read(Blueprint, cid, 1)}
    passed = {v.task_id for v in lake.read(Verification, cid, 1) if v.passed}
    ended = {r.blueprint_id for r in lake.read(Rejection, cid, 1)}
    ended |= {t.blueprint_id for t in lake.read(SynthTask, cid, 1) if t.task_id in passed}
    return bool(blueprints) and blueprints <= ended


def main() -> None:
    """Entry point of the ``evosyn`` script.

    Ctrl-C ends any command within seconds with one line and exit status 130 (not click's
    "Aborted!" with 1, nor a traceback); `campaign run`, `experiment run` and `synth` say how
    to resume instead.
    """
    with CampaignInterrupt(rerun_line()):
        app()
