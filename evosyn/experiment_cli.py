"""The ``evosyn experiment`` commands."""

from __future__ import annotations

import shlex
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from evosyn.experiment_pool import STOP_S, default_workers
from evosyn.interrupt import GRACE_S

if TYPE_CHECKING:
    from collections.abc import Callable

    from rich.progress import Progress, TaskID

    from evosyn.experiment import Experiment
    from evosyn.interrupt import CampaignInterrupt

experiment_app = typer.Typer(
    help="Run experiments: arms × seeds of campaigns.", no_args_is_help=True
)


@experiment_app.command("run")
def experiment_run(
    path: Annotated[Path, typer.Argument(help="Experiment or sweep YAML file.")],
    lake_root: Annotated[
        str | None, typer.Option("--lake", help="Lake root (default: from the campaign config).")
    ] = None,
    overrides: Annotated[
        list[str] | None,
        typer.Option("--set", help="Override a config value of every arm: key.path=value."),
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers",
            min=1,
            help="Campaigns run at once, each in a process of its own "
            "(default: one per core, at most 8; 1 runs them in this process).",
        ),
    ] = None,
    campaign_ids: Annotated[
        str | None,
        typer.Option("--campaign-ids", hidden=True, help="A worker's share (comma-separated)."),
    ] = None,
) -> None:
    """Run every arm × seed campaign of an experiment; rerun to resume (done arms are skipped).

    A sweep file (a ``sweep`` section, evosyn.sweep) runs every cell's experiment, after
    printing its pre-registered design: the weaknesses drawn for each seed.

    Campaigns run one per core at a time, each in its own process, with the rows of a
    one-process run (evosyn.experiment_pool); ``--workers 1`` runs them here, in turn.

    Ctrl-C stops it within seconds and prints the command that resumes it; a second Ctrl-C
    stops it at once.
    """
    from evosyn.cli_common import fail, quiet_prefect_defaults
    from evosyn.interrupt import CampaignInterrupt

    quiet_prefect_defaults()  # before Prefect is imported: it reads its settings then
    from evosyn.config import ConfigError
    from evosyn.experiment import load_experiment
    from evosyn.sweep import is_sweep_file

    extra = list(overrides or [])
    if lake_root is not None:
        extra.append(f"lake.root={lake_root}")
    args = [str(path)]
    args += ["--lake", lake_root] if lake_root is not None else []
    for item in overrides or []:
        args += ["--set", item]
    if campaign_ids is not None:
        _run_share(path, extra, campaign_ids.split(","), args)
        return
    try:
        if is_sweep_file(path):
            experiments, design = _sweep_cells(path, extra)
        else:
            experiments, design = [load_experiment(path, extra)], None
        for experiment in experiments:
            _check_stored_arms(experiment)
    except ConfigError as exc:
        fail(str(exc), 2)
    again = ["evosyn", "experiment", "run", *args]
    again += ["--workers", str(workers)] if workers is not None else []
    n = default_workers() if workers is None else workers
    # Every run of the file resumes it: finished arms are skipped, a started one goes on.
    with CampaignInterrupt(
        f"interrupted: resume with `{shlex.join(again)}`",
        # Workers stop first, each within its own grace (evosyn.experiment_pool).
        grace_s=GRACE_S + STOP_S if n > 1 else GRACE_S,
    ) as stop:
        _run(experiments, stop, design, path, n, args)


def _run_share(path: Path, extra: list[str], campaign_ids: list[str], args: list[str]) -> None:
    """A worker of ``--workers``: run ``campaign_ids`` and print a line as each starts and ends.

    Its parent checked the file and printed the design; a worker only runs its share.
    """
    from evosyn.cli_common import fail
    from evosyn.config import ConfigError
    from evosyn.experiment import load_experiment
    from evosyn.experiment_pool import event_line, stop_when_orphaned
    from evosyn.interrupt import CampaignInterrupt
    from evosyn.sweep import is_sweep_file

    try:
        if is_sweep_file(path):
            experiments = _sweep_cells(path, extra)[0]
        else:
            experiments = [load_experiment(path, extra)]
    except ConfigError as exc:
        fail(str(exc), 2)
    mine = set(campaign_ids)

    def tell(experiment: Experiment, arm: str, seed: int, event: str) -> None:
        print(event_line(event, experiment.campaign_id(arm, seed)), flush=True)

    with CampaignInterrupt(
        f"interrupted: resume with `{shlex.join(['evosyn', 'experiment', 'run', *args])}`"
    ) as stop:
        stop_when_orphaned()
        _play(experiments, stop, tell, mine)


def _sweep_cells(path: Path, extra: list[str]) -> tuple[list[Experiment], str]:
    """A sweep's cell experiments (every arm's config checked) and its design in Markdown."""
    from evosyn.cli_common import console as _console
    from evosyn.report.sweep import design_markdown
    from evosyn.sweep import load_sweep, official_realized, plan

    sweep = load_sweep(path, extra)
    _console(stderr=True).print(
        f"sweep {sweep.name}: drawing its weaknesses from the official diagnostic tasks of "
        f"{sweep.domain()} (seconds) ...",
        highlight=False,
    )
    candidates, draws = plan(sweep, official_realized(sweep.domain()))
    cells = sweep.cells(draws)
    for experiment in cells.values():
        for arm in experiment.arms:
            experiment.config(arm, experiment.experiment.seeds[0])
    return list(cells.values()), design_markdown(sweep, candidates, draws)


def _check_stored_arms(experiment: Experiment) -> None:
    """ConfigError if an arm's campaign in the lake ran another config than the file gives."""
    from evosyn.config import ConfigError
    from evosyn.records import Campaign
    from evosyn.resume import changes_line, config_changes
    from evosyn.storage import Lake, NoLakeError

    lake_cfg = experiment.lake_config().lake
    try:
        lake = Lake(lake_cfg.root, lake_cfg.s3_endpoint, lake_cfg.cache_dir, create=False)
    except NoLakeError:
        return  # nothing stored yet
    for arm, seed in experiment.grid():
        cid = experiment.campaign_id(arm, seed)
        for row in lake.read(Campaign, cid):
            changes = config_changes(row.config, experiment.config(arm, seed))
            if changes:
                raise ConfigError(
                    changes_line(
                        cid,
                        changes,
                        f"run experiment {experiment.name} with the settings it started with, "
                        "or give the changed one another experiment.name",
                    )
                )


def _run(
    experiments: list[Experiment],
    stop: CampaignInterrupt,
    design: str | None,
    path: Path,
    workers: int,
    args: list[str],
) -> None:
    from rich.markdown import Markdown
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from evosyn.cli_common import console as _console
    from evosyn.cli_common import say_prefect_start

    first = experiments[0]
    lake = first.lake_config().lake.root
    grid = [(e, arm, seed) for e in experiments for arm, seed in e.grid()]
    console = _console()
    if design is not None:
        console.print(Markdown(design))
        console.print(
            f"sweep: {len(experiments)} cells × {len(first.arms)} arms × "
            f"{len(first.experiment.seeds)} seeds = {len(grid)} campaigns, lake {lake}",
            highlight=False,
        )
    else:
        console.print(
            f"experiment [bold]{first.name}[/]: {len(first.arms)} arms × "
            f"{len(first.experiment.seeds)} seeds, lake {lake}",
            highlight=False,
        )
    say_prefect_start()
    started = time.monotonic()
    columns = (
        TextColumn("{task.description:<28}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=_console(stderr=True)) as progress:
        stop.cleanups.insert(0, progress.stop)  # first: the bars stop redrawing over the line
        bar = progress.add_task("arms", total=len(grid))
        is_sweep = design is not None
        events = (
            _run_workers(experiments, is_sweep, progress, bar, stop, args, workers)
            if workers > 1
            else _run_here(experiments, is_sweep, progress, bar, stop)
        )
    console.print(
        f"{len(grid)} arms finished ({events['done']} run now, {events['skip']} found done) in "
        f"{time.monotonic() - started:.0f} s",
        highlight=False,
    )
    console.print("next:", highlight=False)
    report = (
        f"evosyn report --sweep {path}"
        if design is not None
        else f"evosyn report --experiment {first.name}"
    )
    console.print(f"  {report} --lake {lake}", highlight=False, soft_wrap=True, markup=False)


def _play(
    experiments: list[Experiment],
    stop: CampaignInterrupt,
    on_event: Callable[[Experiment, str, int, str], None],
    campaigns: set[str] | None = None,
) -> None:
    """Run the experiments' campaigns in this process (only ``campaigns``, if given), in turn.

    ``on_event`` hears every arm's (experiment, arm, seed, event), as ``arms_to`` tells it.
    """
    from evosyn.flows.experiment import arms_to, experiment_flow
    from evosyn.interrupt import end_prefect_runs

    running: list[tuple[str, str]] = []  # (campaign id, experiment) of the arm that runs now
    first = experiments[0].name
    # Its live Prefect runs and the experiment's end Cancelled on a server (docs/loop.md).
    stop.cleanups.append(lambda: end_prefect_runs(*(running[-1] if running else ("", first))))
    for experiment in experiments:
        ids = None
        if campaigns is not None:
            ids = {experiment.campaign_id(a, s) for a, s in experiment.grid()} & campaigns
            if not ids:
                continue

        def sink(arm: str, seed: int, event: str, experiment: Experiment = experiment) -> None:
            if event == "start":
                running.append((experiment.campaign_id(arm, seed), experiment.name))
            on_event(experiment, arm, seed, event)

        with arms_to(sink):
            experiment_flow(experiment, campaigns=ids)


def _label(experiment: Experiment, arm: str, seed: int, is_sweep: bool) -> str:
    """An arm as the progress bar names it (a sweep's with its cell)."""
    prefix = f"{experiment.name.rpartition('.')[2]} " if is_sweep else ""
    return f"{prefix}{arm} seed {seed}"


def _run_here(
    experiments: list[Experiment],
    is_sweep: bool,
    progress: Progress,
    bar: TaskID,
    stop: CampaignInterrupt,
) -> dict[str, int]:
    """Every campaign in this process, one after another; the done and skip counts."""
    events = {"done": 0, "skip": 0}

    def tell(experiment: Experiment, arm: str, seed: int, event: str) -> None:
        events[event] = events.get(event, 0) + 1
        if event == "start":
            progress.update(bar, description=_label(experiment, arm, seed, is_sweep))
        else:
            progress.update(bar, advance=1)

    _play(experiments, stop, tell)
    return events


def _run_workers(
    experiments: list[Experiment],
    is_sweep: bool,
    progress: Progress,
    bar: TaskID,
    stop: CampaignInterrupt,
    args: list[str],
    workers: int,
) -> dict[str, int]:
    """Every unfinished campaign on ``workers`` processes; the done and skip counts."""
    from evosyn.cli_common import fail
    from evosyn.experiment_pool import CampaignPool, WorkerFailed, share, worker_command
    from evosyn.flows.experiment import finished_arms
    from evosyn.interrupt import end_prefect_runs

    names: dict[str, str] = {}
    pending: list[str] = []
    found = 0
    for experiment in experiments:
        done = finished_arms(experiment)
        for arm, seed in experiment.grid():
            cid = experiment.campaign_id(arm, seed)
            names[cid] = _label(experiment, arm, seed, is_sweep)
            if cid in done:
                found += 1
            else:
                pending.append(cid)
    progress.update(bar, advance=found)
    counts = {"done": 0, "skip": found}
    if not pending:
        return counts
    shares = share(pending, workers)

    live: dict[str, None] = {}  # campaigns started and not finished, in order

    def on_event(event: str, cid: str) -> None:
        if event == "start":
            live[cid] = None
            progress.update(bar, description=f"{names.get(cid, cid)} (+{len(shares) - 1})")
        elif event == "done":
            live.pop(cid, None)
            counts["done"] += 1
            progress.update(bar, advance=1)

    pool = CampaignPool(worker_command(["experiment", "run", *args]), on_event)
    experiment_names = sorted({e.name for e in experiments})
    stop.cleanups += [
        pool.stop,
        # Once no worker can touch them: a worker stopped mid-step may have left its runs
        # marked running on a named server (docs/loop.md).
        lambda: end_prefect_runs("", *list(live), *experiment_names),
        pool.close,
    ]
    progress.update(bar, description=f"starting {len(shares)} workers")
    try:
        pool.run(shares)
    except WorkerFailed as exc:
        progress.stop()
        fail(f"a campaign worker failed: {exc} (what finished is stored; rerun to resume)")
    return counts
