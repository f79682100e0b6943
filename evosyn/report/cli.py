"""The ``evosyn report`` and ``evosyn audit`` commands."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from evosyn.cli import ConfigPath, LakeOption, SetOption, fail, open_lake, rerun_line
from evosyn.interrupt import CampaignInterrupt

console = Console()


def report_command(
    campaign_id: Annotated[
        str | None, typer.Argument(help="Campaign to report on (or --experiment).")
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", "-o", help="Folder to write the report to (required for a campaign)."
        ),
    ] = None,
    compare: Annotated[
        list[str] | None,
        typer.Option("--compare", help="Another campaign to line up with it (repeatable)."),
    ] = None,
    experiment: Annotated[
        str | None,
        typer.Option(
            "--experiment",
            help="Compare the arms of an experiment (evosyn experiment run): Table 1 with "
            "intervals and paired differences, and the mechanism analyses.",
        ),
    ] = None,
    null: Annotated[
        str | None,
        typer.Option(
            "--null",
            help="With --experiment: a no-weakness experiment with the same arms; each arm's "
            "gap–allocation ρ is compared with its ρ there.",
        ),
    ] = None,
    lake_root: LakeOption = None,
    config: ConfigPath = None,
    overrides: SetOption = None,
) -> None:
    """Report on a campaign (HTML, plots, SQL) or compare an experiment's arms.

    A campaign: an HTML + Markdown report with plots and the SQL behind every number.
    ``--experiment NAME``: Table 1 (success with intervals, paired differences) and the
    mechanism analyses over the experiment's finished arms.
    """
    from evosyn.storage import LakeError, UnknownCampaignError

    if (campaign_id is None) == (experiment is None):
        fail("give a campaign id or --experiment NAME (one of them)", 2)
    if experiment is None and out is None:
        fail("a campaign report needs --out FOLDER", 2)
    # Before the plotting modules load: a missing lake is told in a fraction of a second.
    lake = open_lake(lake_root, config, overrides)
    from evosyn.report.data import ReportError
    from evosyn.report.render import write_report

    try:
        if experiment is not None:
            _experiment_report(lake, experiment, out, null)
            return
        assert campaign_id is not None and out is not None
        for cid in [campaign_id, *(compare or [])]:
            lake.check_campaign(cid)
        _progress(f"report on {campaign_id} from {lake.location}: reading, plotting ...")
        with staged(out) as folder:
            report = write_report(lake, campaign_id, folder, list(compare or []))
    except (ReportError, UnknownCampaignError) as exc:
        fail(str(exc), 2)
    except LakeError as exc:
        fail(str(exc), 1)
    console.print(f"report: {out / report.html.name} and {out / report.markdown.name}")
    console.print(f"plots: {', '.join(p.name for p in report.plots)}")
    console.print(f"queries: {len(report.queries)} SQL files in {out / 'queries'}")


def _progress(text: str) -> None:
    # On stderr: a report takes seconds, and stdout may be piped.
    Console(stderr=True).print(text, highlight=False, soft_wrap=True)


@contextmanager
def staged(out: Path) -> Iterator[Path]:
    """A scratch folder beside ``out`` whose files move into ``out`` once all are written.

    A Ctrl-C or an error meanwhile removes the scratch folder: every file in ``out`` is whole,
    never the start of one.
    """
    scratch = out.parent / f".{out.name}.partial-{os.getpid()}"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    try:
        with CampaignInterrupt(rerun_line()) as stop:
            stop.cleanups.append(lambda: shutil.rmtree(scratch, ignore_errors=True))
            yield scratch
            for path in sorted(scratch.rglob("*")):
                if path.is_file():
                    target = out / path.relative_to(scratch)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    os.replace(path, target)  # atomic per file
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _experiment_report(lake: object, name: str, out: Path | None, null: str | None) -> None:
    from rich.table import Table

    from evosyn.report.experiment import (
        control_rows,
        mechanism_rows,
        table_rows,
        test_rows,
        write_experiment_report,
    )
    from evosyn.storage import Lake

    assert isinstance(lake, Lake)
    _progress(f"experiment {name} from {lake.location}: reading its arms ...")
    if out is None:
        report, path = write_experiment_report(lake, name, None, null)
    else:
        with staged(out) as folder:
            report, written = write_experiment_report(lake, name, folder, null)
        path = None if written is None else out / written.name
    titles = (
        (table_rows, f"experiment {name}: final-round success on the fixed diagnostic set (%)"),
        (test_rows, "final test: official test split, 3 trials at temperature 1 (%)"),
        (mechanism_rows, "mechanisms"),
        (control_rows, "realized controllability: exact match (%)"),
    )
    for rows_of, title in titles:
        header, rows = rows_of(report)
        table = Table(*header, title=title)
        for row in rows:
            table.add_row(*row)
        console.print(table)
    n_seeds = max(len(a.seeds) for a in report.arms)
    console.print(
        f"success: mean over {n_seeds} seeds, 95% t interval across seeds; Δ: paired with "
        f"{report.reference} on the same {report.arms[0].episodes} episodes per seed; "
        f"wall time of all arms {report.seconds:.0f} s",
        highlight=False,
    )
    if path is not None:
        console.print(f"report: {path}", highlight=False)


def audit_command(
    campaign_id: Annotated[str, typer.Argument(help="Campaign to audit.")],
    lake_root: LakeOption = None,
    config: ConfigPath = None,
    overrides: SetOption = None,
) -> None:
    """Audit the quality of a campaign's synthesized data, per round (rules: docs/quality.md)."""
    from rich.table import Table

    from evosyn.records import Campaign
    from evosyn.storage import LakeError, UnknownCampaignError

    # A missing lake exits 1 (docs/lake.md), before the audit's modules load.
    lake = open_lake(lake_root, config, overrides)
    from evosyn.report.audit import audit_campaign, audit_rows

    try:
        lake.check_campaign(campaign_id)
        domain = lake.read(Campaign, campaign_id)[0].domain
        audits = audit_campaign(lake, campaign_id, domain)
    except UnknownCampaignError as exc:
        fail(str(exc), 2)
    except LakeError as exc:
        fail(str(exc), 1)
    table = Table("measure", *(f"round {a.round}" for a in audits), title=f"audit {campaign_id}")
    for row in audit_rows(audits):
        table.add_row(*row)
    console.print(table)
