"""``evosyn campaign``: run a campaign, list the campaigns in a lake, show one."""

from __future__ import annotations

import json
import shlex
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from evosyn.cli import campaign_config, open_lake
from evosyn.cli_common import (
    ConfigPath,
    LakeOption,
    SetOption,
    console,
    fail,
    progress_bars,
    quiet_prefect_defaults,
    rate_text,
    say_prefect_start,
)
from evosyn.interrupt import CampaignInterrupt, end_prefect_runs

if TYPE_CHECKING:
    from rich.table import Table

    from evosyn.config import CampaignConfig

campaign_app = typer.Typer(help="Run and inspect campaigns.", no_args_is_help=True)


@campaign_app.command("run")
def campaign_run(
    config: Annotated[
        Path | None,
        typer.Argument(
            help="Campaign YAML file; a --resume without it runs the campaign's stored config."
        ),
    ] = None,
    campaign_id: Annotated[
        str | None, typer.Option("--campaign-id", help="Campaign id (default from config).")
    ] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="Campaign seed.")] = None,
    lake_root: LakeOption = None,
    overrides: SetOption = None,
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue a campaign already in the lake.")
    ] = False,
    reconfigure: Annotated[
        bool,
        typer.Option(
            "--reconfigure",
            help="With --resume: run the campaign with CONFIG, --seed and --set although they "
            "differ from its stored config (which they replace).",
        ),
    ] = False,
) -> None:
    """Run a multi-round campaign (the closed loop) and print its round table.

    A resume runs the config the campaign stored; one that changes it is refused unless
    --reconfigure. Ctrl-C stops it within seconds and prints the command that resumes it; a
    second Ctrl-C stops it at once.
    """
    quiet_prefect_defaults()  # before Prefect is imported: it reads its settings then
    if config is None and not resume:
        fail("give the campaign file to run (CONFIG); only a --resume runs without one", 2)
    if reconfigure and not resume:
        fail("--reconfigure changes a stored campaign's config: it goes with --resume", 2)
    extra = list(overrides or [])
    if lake_root is not None:
        extra.append(f"lake.root={lake_root}")
    if campaign_id is not None:
        extra.append(f"campaign.id={campaign_id}")
    if seed is not None:
        extra.append(f"campaign.seed={seed}")
    cfg = campaign_config(config, extra)
    if resume and cfg.campaign.id is None:
        fail("--resume needs the campaign's id: --campaign-id ID (evosyn campaign list)", 2)
    cid = cfg.campaign.resolved_id()
    if resume:
        cfg = _resumed_config(cfg, cid, config, extra, reconfigure)
    again = ["evosyn", "campaign", "run", *([str(config)] if config else []), "--campaign-id", cid]
    again += ["--seed", str(seed)] if seed is not None else []
    again += ["--lake", lake_root] if lake_root is not None else []
    for item in overrides or []:
        again += ["--set", item]
    again += ["--reconfigure"] if reconfigure else []
    resume_line = f"interrupted: resume with `{shlex.join([*again, '--resume'])}`"
    start_line = f"interrupted before anything was stored: start again with `{shlex.join(again)}`"
    with CampaignInterrupt(resume_line if resume else start_line) as stop:
        _campaign_run(cfg, cid, resume, stop, resume_line, reconfigure)


def _resumed_config(
    lookup: CampaignConfig, cid: str, path: Path | None, extra: list[str], reconfigure: bool
) -> CampaignConfig:
    """The config a resume runs: the stored one (with ``extra``), or CONFIG's if it is equal.

    ``lookup`` says where the lake is; one line and exit 2 for a campaign not there or a
    config that differs from the stored one without ``reconfigure``.
    """
    from evosyn.config import ConfigError, load_config, without_other_kinds
    from evosyn.records import Campaign
    from evosyn.resume import changes_line, config_changes
    from evosyn.storage import Lake, LakeError, NoLakeError

    try:
        lake = Lake(lookup.lake.root, lookup.lake.s3_endpoint, lookup.lake.cache_dir, create=False)
        rows = lake.read(Campaign, cid)
    except NoLakeError as exc:
        fail(f"campaign {cid!r}: nothing to resume, {exc}", 2)
    except LakeError as exc:
        fail(str(exc))
    if not rows:
        fail(f"campaign {cid!r} is not in {lake.location}: nothing to resume", 2)
    stored = rows[0].config
    cfg = lookup
    try:
        if path is None:
            cfg = load_config(None, extra, data=without_other_kinds(stored))
            # The lake is where it was found, which a copied or moved lake changes.
            cfg = cfg.model_copy(update={"lake": lookup.lake})
        changes = config_changes(stored, cfg)
    except ConfigError as exc:
        fail(f"campaign {cid!r}: {exc}", 2)
    if changes and not reconfigure:
        fail(
            changes_line(
                cid,
                changes,
                "resume it without CONFIG to run its stored config, or add --reconfigure to "
                "run it with this one",
            ),
            2,
        )
    return cfg


def _campaign_run(
    cfg: CampaignConfig,
    cid: str,
    resume: bool,
    stop: CampaignInterrupt,
    resume_message: str,
    reconfigure: bool = False,
) -> None:
    from evosyn.config import ConfigError
    from evosyn.records import Campaign
    from evosyn.storage import Lake, LakeError, NoLakeError

    try:
        from evosyn.tasks.loop import roles_for

        # Fail on an unavailable role before any work starts.
        roles_for(cfg)
        # A resume reads: it must not leave an empty lake behind where there was none.
        lake = Lake(cfg.lake.root, cfg.lake.s3_endpoint, cfg.lake.cache_dir, create=not resume)
        exists = bool(lake.read(Campaign, cid))
    except ConfigError as exc:
        fail(str(exc), 2)
    except NoLakeError as exc:
        fail(f"campaign {cid!r}: nothing to resume, {exc}", 2)
    except LakeError as exc:
        fail(str(exc))
    if exists and not resume:
        fail(f"campaign {cid!r} is already in {lake.location}: pass --resume to continue it", 2)
    if resume and not exists:
        fail(f"campaign {cid!r} is not in {lake.location}: nothing to resume", 2)
    from evosyn.flows.campaign import campaign_flow

    simulated = cfg.agents.learner.kind == "simulated"
    learner = f"{cfg.agents.learner.kind} learner"
    console().print(
        f"campaign [bold]{cid}[/] ({cfg.campaign.domain}, {learner}), lake {lake.location}",
        highlight=False,
    )
    say_prefect_start()

    def say_how_to_resume() -> None:
        # The flow's first write is the campaign row: until it lands, there is nothing to resume.
        if resume or lake.read(Campaign, cid):
            stop.message = resume_message

    stop.cleanups += [say_how_to_resume, lambda: end_prefect_runs(cid)]
    from evosyn.agents.gateway import BudgetExceeded, ModelUnreachable

    again = resume_message.removeprefix("interrupted: resume with ").removesuffix("`")
    try:
        summaries = _run_with_progress(
            cfg, cid, lambda c, i: campaign_flow(c, i, reconfigure=reconfigure), stop
        )
    except BudgetExceeded as exc:
        # The round stopped at a cap; what it finished is stored and a resume goes on.
        fail(f"{exc}: {again} --set {exc.key}={2 * exc.cap_usd:g}`")
    except ModelUnreachable as exc:
        # No model answered a whole step: its failed calls are stored, a resume retries it.
        fail(f"{exc}: {again}`")
    screen = console()
    screen.print(round_table(cid, summaries, simulated))
    n_failed = sum(s.n_failed for s in summaries)
    if n_failed:
        again = resume_message.removeprefix("interrupted: resume with ")
        screen.print(
            f"{n_failed} request(s) failed with an error and are not stored: {again} retries them",
            style="yellow",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    planted = planted_line(cfg, summaries)
    if planted:
        screen.print(planted, highlight=False)
    if simulated:
        screen.print("[yellow]learner: simulated (a labelled simulation, not a trained model)[/]")
    screen.print(f"lake: {lake.location}", highlight=False, soft_wrap=True)
    screen.print("next:", highlight=False)
    for command in next_commands(lake.location, cid, cfg.lake.s3_endpoint):
        # soft_wrap: one line each, so a command copies and pastes whole.
        screen.print(f"  {command}", highlight=False, soft_wrap=True, markup=False)


def _run_with_progress(cfg: CampaignConfig, cid: str, run: Any, stop: CampaignInterrupt) -> Any:
    # One bar per stage; a resumed campaign's finished work fills its bars at once.
    from evosyn.tasks.loop import STAGES, progress_to

    rounds, budget = cfg.campaign.rounds, cfg.campaign.budget_per_round
    totals = {stage: rounds for stage in STAGES} | {
        "reflect": rounds - 1,
        "synthesize": rounds * budget,
    }
    with progress_bars() as progress:
        stop.cleanups.insert(0, progress.stop)  # first: the bars stop redrawing over the line
        bars = {stage: progress.add_task(stage, total=totals[stage]) for stage in STAGES}

        def sink(stage: str, round: int, units: int) -> None:
            progress.update(bars[stage], advance=units, description=f"{stage} r{round}")

        with progress_to(sink):
            return run(cfg, cid)


def next_commands(location: str, cid: str, s3_endpoint: str | None = None) -> list[str]:
    """Commands to look at campaign ``cid`` in the lake at ``location`` next, from any folder."""
    where = f"--lake {shlex.quote(location)}"
    if s3_endpoint:
        where += f" --set lake.s3_endpoint={shlex.quote(s3_endpoint)}"
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
    """The campaign's rounds: space version, counts, the learner's success, and decisions.

    Success is shown twice, labelled: on the fixed diagnostic set (the official diagnostic
    split, the same every round) with its Wilson 95% interval, which compares across rounds;
    and on the whole diagnostic set, which adds each round's held-out synthesized tasks and
    so changes every round.
    """
    from rich import box
    from rich.table import Column, Table

    from evosyn.agents.learner.base import USER_FAULTS

    learner = "simulated learner" if simulated else "learner"
    # Failed requests and user faults get a column only where there are some: 80 columns stay
    # enough without.
    failed = any(s.n_failed for s in summaries)
    faulted = any(s.n_user_faults for s in summaries)
    numeric = [
        "verified\n/ planned",
        "rejected",
        *(["failed"] if failed else []),
        "re-\npaired",
        "time",
        "success,\nfixed set\n[95% CI]",
        "n",
        "success,\nall diag-\nnostics",
        "n",
        *(["user\nfaults"] if faulted else []),
    ]
    # Decisions are sentences: they go under the table, one line per round, so the numbers
    # keep their columns on an 80-column terminal.
    decisions = "\n".join(f"r{s.round}: {s.decision or '-'}" for s in summaries)
    table = Table(
        Column("round", no_wrap=True),
        Column("space", no_wrap=True),
        *(Column(h, no_wrap=True, justify="right") for h in numeric),
        box=box.SIMPLE_HEAD,
        padding=0,
        pad_edge=False,
        title=f"campaign {cid}",
        caption_justify="left",
        caption=f"decisions (what shaped each round's space: the Reflector's review of the "
        "round before; for an added factor, the probe's conditional mutual information with "
        f"failure and its permutation p):\n{decisions}\n\n"
        f"success, fixed set: the {learner} on the official diagnostic split, the "
        "same tasks every round (n episodes = tasks x trials), with a Wilson 95% interval. "
        "success, all diagnostics: those plus the held-out synthesized tasks so far, a set "
        "that grows every round, so it does not compare across rounds. repaired: verified "
        "after at least one Repair. time: minutes:seconds."
        + (
            " failed: requests that raised an error twice; stored as no rejection, they are "
            "retried by a resume."
            if failed
            else ""
        )
        + (f" user faults: {USER_FAULTS}" if faulted else ""),
    )
    for s in summaries:
        table.add_row(
            str(s.round),
            f"v{s.space_version}",
            f"{s.n_verified}/{s.n_blueprints}",
            str(s.n_rejected),
            *([str(s.n_failed)] if failed else []),
            str(s.n_repaired),
            duration_text(s.started_at, s.finished_at),
            rate_text(s.fixed_success, s.fixed_n),
            str(s.fixed_n) if s.fixed_n else "-",
            "-" if s.diagnostic_success is None else f"{s.diagnostic_success:.2f}",
            str(s.diagnostic_n) if s.diagnostic_n else "-",
            *([str(s.n_user_faults)] if faulted else []),
        )
    return table


def duration_text(started: datetime, finished: datetime | None) -> str:
    """``1:05`` (minutes:seconds) from ``started`` to ``finished``; ``-`` while unfinished."""
    if finished is None:
        return "-"
    seconds = max(0, round((finished - started).total_seconds()))
    return f"{seconds // 60}:{seconds % 60:02d}"


def planted_line(cfg: CampaignConfig, summaries: list[Any]) -> str | None:
    """The simulated learner's success on its planted weakness, round by round (else None)."""
    if cfg.agents.learner.kind != "simulated" or not summaries:
        return None
    from evosyn.agents.learner.simulated import SimulatedSettings

    weaknesses = cfg.agents.learner.kind_settings(SimulatedSettings).weaknesses
    if not weaknesses:
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


def _when(moment: datetime | None) -> str:
    return "-" if moment is None else moment.strftime("%Y-%m-%d %H:%M")


@campaign_app.command("list")
def campaign_list(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    lake_root: LakeOption = None,
    config: ConfigPath = None,
    overrides: SetOption = None,
) -> None:
    """List the campaigns in the lake: domain, rounds, status, verified data, dates."""
    from rich import box
    from rich.table import Column, Table

    from evosyn.campaigns import overviews
    from evosyn.storage import LakeError

    lake = open_lake(lake_root, config, overrides)
    try:
        rows = overviews(lake)
    except LakeError as exc:
        fail(str(exc))
    if as_json:
        typer.echo(json.dumps([r.model_dump(mode="json") for r in rows], indent=2))
        return
    # A marker on the status, not a column: with one, a default id's row would pass 80 columns.
    failed = ", ".join(f"{r.campaign_id} {r.n_failed}" for r in rows if r.n_failed)
    # One space between columns and the date alone: a default id (NAME-YYYYMMDD-HHMMSS) and
    # its row fit in 80 columns uncut.
    table = Table(
        Column("campaign", no_wrap=True),
        "domain",
        Column("rounds", justify="right"),
        "status",
        Column("verified", justify="right"),
        Column("created", no_wrap=True),
        box=box.SIMPLE_HEAD,
        show_edge=False,
        padding=(0, 0),
        collapse_padding=True,
        title=f"campaigns in {lake.location}",
        caption=f"{len(rows)} campaign{'s' if len(rows) != 1 else ''}; "
        "details: evosyn campaign show ID"
        + (f"; * failed requests, which a resume retries: {failed}" if failed else ""),
    )
    for r in rows:
        rounds = f"{r.rounds_done}/{r.rounds_planned}" if r.rounds_planned else "-"
        table.add_row(
            r.campaign_id,
            r.domain,
            rounds,
            r.status + ("*" if r.n_failed else ""),
            str(r.n_verified),
            r.created_at.strftime("%Y-%m-%d"),
        )
    console().print(table, highlight=False)


@campaign_app.command("show")
def campaign_show(
    campaign_id: Annotated[str, typer.Argument(help="Campaign id (see `evosyn campaign list`).")],
    lake_root: LakeOption = None,
    config: ConfigPath = None,
    overrides: SetOption = None,
) -> None:
    """Show one campaign: its settings, its rounds with their counts, the Reflector's decisions."""
    from rich import box
    from rich.table import Column, Table

    from evosyn.campaigns import decisions, overview_of
    from evosyn.records import Campaign, RoundSummary
    from evosyn.storage import LakeError, UnknownCampaignError

    lake = open_lake(lake_root, config, overrides)
    try:
        lake.check_campaign(campaign_id)
        campaign = lake.read(Campaign, campaign_id)[0]
        summaries = sorted(lake.read(RoundSummary, campaign_id), key=lambda s: s.round)
        o = overview_of(lake, campaign, summaries)
        reflections = decisions(lake, campaign_id)
    except UnknownCampaignError as exc:
        fail(str(exc), 2)
    except LakeError as exc:
        fail(str(exc))
    facts = Table.grid(padding=(0, 2))
    facts.add_column(style="bold", no_wrap=True)
    facts.add_column(overflow="fold")  # a long lake path folds rather than ending in "…"
    rounds = f"{o.rounds_done} of {o.rounds_planned}" if o.rounds_planned else "- (static synth)"
    n_user_faults = sum(s.n_user_faults for s in summaries)
    for name, value in [
        ("campaign", o.campaign_id),
        ("name", o.name),
        ("domain", o.domain),
        ("seed", str(o.seed)),
        ("learner", o.learner),
        ("status", o.status),
        ("rounds", rounds),
        ("verified", str(o.n_verified)),
        ("rejected", str(o.n_rejected)),
        *(
            [("failed", f"{o.n_failed} (errors, not stored: a resume retries them)")]
            if o.n_failed
            else []
        ),
        *(
            [("user faults", f"{n_user_faults} (diagnostic episodes left unscored)")]
            if n_user_faults
            else []
        ),
        ("created (UTC)", _when(o.created_at)),
        ("last round (UTC)", _when(o.last_activity)),
        ("lake", lake.location),
    ]:
        facts.add_row(name, value)
    console().print(facts, highlight=False)
    if summaries:
        table = Table(
            Column("round", justify="right"),
            "space",
            Column("verified\n/ planned", justify="right"),
            Column("rejected", justify="right"),
            Column("success,\nfixed set\n[95% CI]", justify="right", no_wrap=True),
            Column("n", justify="right"),
            Column("success,\nall diag-\nnostics", justify="right"),
            Column("finished (UTC)", no_wrap=True),
            box=box.SIMPLE_HEAD,
            padding=0,
            pad_edge=False,
            caption="success, fixed set: on the official diagnostic split, the same every round "
            "(n episodes); all diagnostics adds the held-out tasks, a set that grows",
            caption_justify="left",
        )
        for s in summaries:
            table.add_row(
                str(s.round),
                f"v{s.space_version}",
                f"{s.n_verified}/{s.n_blueprints}",
                str(s.n_rejected),
                rate_text(s.fixed_success, s.fixed_n),
                str(s.fixed_n) if s.fixed_n else "-",
                "-" if s.diagnostic_success is None else f"{s.diagnostic_success:.2f}",
                _when(s.finished_at),
            )
        console().print(table)
    for d in reflections:
        # A decision taken on round r's feedback shapes the space of round r + 1.
        why = f" ({d.rationale})" if d.rationale else ""
        console().print(
            f"after round {d.round}, for round {d.round + 1}: {d.in_words()}, "
            f"space v{d.next_space_version}{why}",
            highlight=False,
        )
    if o.status in ("incomplete", "started") or o.n_failed:
        # The campaign's own config is in the lake: the command needs only where and which.
        where = shlex.join(["--lake", lake.location])
        console().print(
            f"resume: evosyn campaign run --campaign-id {o.campaign_id} {where} --resume",
            highlight=False,
            soft_wrap=True,
        )
