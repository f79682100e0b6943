"""What every ``evosyn`` command shares: the console, one-line failures, the common options.

A core module (docs/architecture.md): the commands of ``evosyn/``, ``agents/`` and the flows'
artifacts import it without importing the 1,000-line command line or anything it runs.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress


def console(stderr: bool = False) -> Console:
    """A rich console of standard output, or of standard error.

    A new one each time: a console reads the terminal's width when it is made, and one
    process may serve several commands (tests, a notebook) with different widths.
    """
    from rich.console import Console

    return Console(stderr=stderr)


def progress_bars(
    label_width: int = 14, transient: bool = False, disable: bool = False
) -> Progress:
    """Progress bars on standard error: what each is at, the bar, done of total, time elapsed.

    What every long command shows while it works. Each bar's description is padded to
    ``label_width`` characters, so the bars of one display line up; a ``transient`` display is
    erased when it ends.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn(f"{{task.description:<{label_width}}}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console(stderr=True),
        transient=transient,
        disable=disable,
    )


ConfigPath = Annotated[
    Path | None, typer.Option("--config", "-c", help="Campaign YAML file (for the lake's root).")
]
SetOption = Annotated[
    list[str] | None,
    typer.Option("--set", help="Override a config value: key.path=value (repeatable)."),
]
LakeOption = Annotated[
    str | None,
    typer.Option(
        "--lake", help="Lake root: a folder or s3://bucket/prefix (default: config lake.root)."
    ),
]


def fail(message: str, code: int = 1) -> NoReturn:
    """Print a one-line error and exit non-zero."""
    console(stderr=True).print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def rerun_line() -> str:
    """The line a command that is simply run again says on Ctrl-C: the command as typed."""
    return f"interrupted: run it again with `{shlex.join(['evosyn', *sys.argv[1:]])}`"


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


def say_prefect_start() -> None:
    """Say that Prefect's temporary server is starting, where no server is named.

    It takes 5 to 15 s, during which the progress bars would sit at 0 with no word.
    """
    if not os.environ.get("PREFECT_API_URL"):
        console(stderr=True).print(
            "starting Prefect's temporary server (seconds; with `make server` running, "
            "PREFECT_API_URL=http://127.0.0.1:4200/api skips this)",
            highlight=False,
            soft_wrap=True,
        )


def rate_text(success: float | None, n: int) -> str:
    """``0.82 [0.73, 0.89]``: a success rate over ``n`` episodes with its Wilson 95% interval."""
    from evosyn.report.metrics import wilson_interval

    if success is None or not n:
        return "-"
    rate = wilson_interval(round(success * n), n)
    return f"{success:.2f} [{rate.low:.2f}, {rate.high:.2f}]"
