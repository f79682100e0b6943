"""The ``evosyn experiment`` commands."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

experiment_app = typer.Typer(
    help="Run experiments: arms × seeds of campaigns.", no_args_is_help=True
)


@experiment_app.command("run")
def experiment_run(
    path: Annotated[Path, typer.Argument(help="Experiment YAML file.")],
    lake_root: Annotated[
        str | None, typer.Option("--lake", help="Lake root (default: from the campaign config).")
    ] = None,
    overrides: Annotated[
        list[str] | None,
        typer.Option("--set", help="Override a config value of every arm: key.path=value."),
    ] = None,
) -> None:
    """Run every arm × seed campaign of an experiment; rerun to resume (done arms are skipped)."""
    from evosyn.cli import _console, fail, quiet_prefect_defaults

    quiet_prefect_defaults()  # before Prefect is imported: it reads its settings then
    from evosyn.config import ConfigError
    from evosyn.experiment import load_experiment

    extra = list(overrides or [])
    if lake_root is not None:
        extra.append(f"lake.root={lake_root}")
    try:
        experiment = load_experiment(path, extra)
    except ConfigError as exc:
        fail(str(exc), 2)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from evosyn.flows.experiment import arms_to, experiment_flow

    lake = experiment.lake_config().lake.root
    grid = experiment.grid()
    console = _console()
    console.print(
        f"experiment [bold]{experiment.name}[/]: {len(experiment.arms)} arms × "
        f"{len(experiment.experiment.seeds)} seeds, lake {lake}",
        highlight=False,
    )
    started = time.monotonic()
    columns = (
        TextColumn("{task.description:<28}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=_console(stderr=True)) as progress:
        bar = progress.add_task("arms", total=len(grid))

        events = {"done": 0, "skip": 0}

        def sink(arm: str, seed: int, event: str) -> None:
            events[event] = events.get(event, 0) + 1
            if event == "start":
                progress.update(bar, description=f"{arm} seed {seed}")
            else:
                progress.update(bar, advance=1)

        with arms_to(sink):
            rows = experiment_flow(experiment)
    console.print(
        f"{len(rows)} arms finished ({events['done']} run now, {events['skip']} found done) in "
        f"{time.monotonic() - started:.0f} s",
        highlight=False,
    )
    console.print("next:", highlight=False)
    console.print(
        f"  evosyn report --experiment {experiment.name} --lake {lake}",
        highlight=False,
        soft_wrap=True,
        markup=False,
    )
