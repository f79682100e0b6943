"""``evosyn export``: verified data for trainers (SFT, RL), τ²-bench and Hugging Face."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import typer
from rich.table import Table

from evosyn.agents.learner.export import ExportError, ExportReport, export_sft
from evosyn.agents.learner.recipe import TrainRecipe
from evosyn.cli_common import ConfigPath, LakeOption, SetOption, console, fail
from evosyn.config import ConfigError, load_config
from evosyn.storage import Lake, LakeError
from evosyn.tasks.learner_lake import training_data

export_app = typer.Typer(
    help="Export verified data: SFT and RL sets, τ²-bench task sets, Hugging Face datasets.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

T = TypeVar("T")


def _lake(
    campaign_id: str, lake_root: str | None, config: Path | None, overrides: list[str] | None
) -> Lake:
    """The lake holding ``campaign_id``; a one-line error (exit 2) otherwise."""
    try:
        cfg = load_config(config, overrides or [])
        lake = Lake(
            lake_root or cfg.lake.root, cfg.lake.s3_endpoint, cfg.lake.cache_dir, create=False
        )
        lake.check_campaign(campaign_id)
    except (ConfigError, LakeError) as exc:
        fail(str(exc), 2)
    return lake


def _export(
    out: Path,
    write: Callable[[Path], T],
    errors: tuple[type[Exception], ...],
    carry: Sequence[str] = (),
) -> tuple[T, Path]:
    """``write(folder)``'s report, and the scratch folder it wrote in before ``out``.

    The files move into ``out`` only once all are written (:func:`evosyn.report.cli.staged`):
    an export stopped by Ctrl-C or an error leaves ``out`` as it was, and its rerun writes the
    whole export. ``carry`` names files of ``out`` the writer updates. A lake or export error
    (``errors``) is a one-line error, exit 2.
    """
    from evosyn.report.cli import staged

    caught: tuple[type[Exception], ...] = (ConfigError, LakeError, *errors)
    try:
        with staged(out, carry) as folder:
            return write(folder), folder
    except caught as exc:
        fail(str(exc), 2)


def _landed(path: str, folder: Path, out: Path) -> str:
    """Where a file the writer reported in its scratch ``folder`` lies now, in ``out``."""
    return str(out / Path(path).relative_to(folder))


CampaignArgument = Annotated[str, typer.Argument(help="Campaign whose verified data to export.")]
OutOption = Annotated[Path, typer.Option("--out", "-o", help="Folder to write the export to.")]
UpToOption = Annotated[
    int | None, typer.Option("--up-to", help="Only rounds up to R (default: all).")
]
SeedOption = Annotated[int, typer.Option("--seed", help="Episode seed of every row.")]


@export_app.command("sft")
def sft_command(
    campaign_id: CampaignArgument,
    out: OutOption,
    round: Annotated[
        int | None, typer.Option("--round", help="Only this round's data (default: all).")
    ] = None,
    up_to: Annotated[
        int | None, typer.Option("--up-to", help="D_<=R: rounds up to R (default: all).")
    ] = None,
    cutoff: Annotated[
        int, typer.Option("--cutoff", help="Flag samples longer than this many tokens.")
    ] = TrainRecipe().cutoff_len,
    lake_root: LakeOption = None,
    config: ConfigPath = None,
    overrides: SetOption = None,
) -> None:
    """Write LLaMA-Factory ShareGPT (+ dataset_info.json) and OpenAI JSONL, with token counts."""
    if round is not None and up_to is not None:
        fail("--round and --up-to exclude each other", 2)
    lake = _lake(campaign_id, lake_root, config, overrides)

    def write(folder: Path) -> ExportReport:
        data = training_data(lake, campaign_id, up_to, round)
        return export_sft(data, folder, TrainRecipe(cutoff_len=cutoff))

    # dataset_info.json describes every dataset exported to the folder: updated, not replaced.
    report, folder = _export(out, write, (ExportError,), carry=("dataset_info.json",))
    lo, median, hi = report.token_summary()
    table = Table("measure", "value", title=f"SFT export {report.dataset}")
    table.add_row("rounds", ", ".join(map(str, report.rounds)))
    table.add_row("samples", str(report.n_samples))
    table.add_row("held out (diagnostic, not exported)", str(report.n_held_out))
    table.add_row("Qwen tokens min / median / max", f"{lo} / {median:.0f} / {hi}")
    table.add_row(f"over cutoff ({report.cutoff_len})", str(len(report.over_cutoff)))
    if report.texts_beside_calls:
        table.add_row("assistant texts beside tool calls (kept)", str(report.texts_beside_calls))
    for path in report.files:
        table.add_row("wrote", _landed(path, folder, out))
    console().print(table)
    err = console(stderr=True)
    for trajectory_id in report.over_cutoff:
        err.print(f"[yellow]warning:[/] {trajectory_id} is longer than {report.cutoff_len} tokens")


@export_app.command("tau2")
def tau2_command(
    campaign_id: CampaignArgument,
    out: OutOption,
    up_to: UpToOption = None,
    lake_root: LakeOption = None,
    config: ConfigPath = None,
    overrides: SetOption = None,
) -> None:
    """Write a τ²-bench task set (tasks.json, split_tasks.json) that τ²-bench's CLI runs."""
    from evosyn.export.tau2 import Tau2ExportError, export_tau2

    lake = _lake(campaign_id, lake_root, config, overrides)
    task_set, _ = _export(
        out, lambda folder: export_tau2(lake, campaign_id, folder, up_to), (Tau2ExportError,)
    )
    table = Table("measure", "value", title=f"τ²-bench task set {task_set.name}")
    table.add_row("domain", task_set.domain)
    table.add_row("rounds", ", ".join(map(str, task_set.rounds)))
    for split, n in task_set.splits.items():
        table.add_row(f"split {split}", str(n))
    for name in task_set.files:
        table.add_row("wrote", str(out / name))
    screen = console()
    screen.print(table)
    screen.print(
        f"run it with τ²-bench: python -m evosyn.export.tau2_run {out} run "
        "--agent-llm MODEL --user-llm MODEL",
        highlight=False,
        soft_wrap=True,
    )


@export_app.command("hf")
def hf_command(
    campaign_id: CampaignArgument,
    out: OutOption,
    up_to: UpToOption = None,
    push: Annotated[
        str | None,
        typer.Option("--push", help="Also push to this Hub dataset repo (needs HF_TOKEN)."),
    ] = None,
    lake_root: LakeOption = None,
    config: ConfigPath = None,
    overrides: SetOption = None,
) -> None:
    """Write a Hugging Face dataset (save_to_disk + Parquet) with a dataset card."""
    from evosyn.export.hf import HFExportError, export_hf

    try:
        import datasets

        datasets.disable_progress_bars()  # the table below says what was written
    except ImportError:
        pass  # export_hf names the package to install
    lake = _lake(campaign_id, lake_root, config, overrides)
    report, folder = _export(
        out, lambda folder: export_hf(lake, campaign_id, folder, up_to, push), (HFExportError,)
    )
    table = Table("measure", "value", title=f"Hugging Face dataset of {campaign_id}")
    table.add_row("rounds", ", ".join(map(str, report.rounds)))
    for split, n in report.splits.items():
        table.add_row(f"rows in {split}", str(n))
    table.add_row("config digest", report.config_digest)
    table.add_row("model tokens in / out", f"{report.tokens_in} / {report.tokens_out}")
    table.add_row("model cost (USD)", f"{report.cost:.4f}")
    for path in report.files:
        table.add_row("wrote", _landed(path, folder, out))
    if report.pushed_to:
        table.add_row("pushed to", report.pushed_to)
    console().print(table)


def _rl_export(
    kind: Literal["nemo-gym", "verl"],
    campaign_id: str,
    out: Path,
    where: tuple[str | None, Path | None, list[str] | None],
    **options: Any,
) -> None:
    """Run the RL export ``kind`` with its ``options`` and say what it wrote.

    ``where`` is the command's lake root, config and overrides.
    """
    from evosyn.export.rl import RLExportError, export_nemo_gym, export_verl

    lake = _lake(campaign_id, *where)
    writer = export_nemo_gym if kind == "nemo-gym" else export_verl
    report, _ = _export(
        out,
        # The files are read from ``out``: their config and usage lines point there.
        lambda folder: writer(lake, campaign_id, folder, home=out, **options),
        (RLExportError,),
    )
    table = Table("measure", "value", title=f"{report.format} export of {report.campaign_id}")
    table.add_row("domain", report.domain)
    table.add_row("rounds", ", ".join(map(str, report.rounds)))
    table.add_row("episode seed", str(report.seed))
    for split, n in report.splits.items():
        table.add_row(f"tasks in {split}", str(n))
    if report.prompt_tokens_max is not None:
        table.add_row("Qwen tokens, longest prompt", str(report.prompt_tokens_max))
    if report.response_tokens_max is not None:
        table.add_row("Qwen tokens, longest verified rollout", str(report.response_tokens_max))
    for name in report.files:
        table.add_row("wrote", str(out / name))
    screen = console()
    screen.print(table)
    for line in report.usage:
        screen.print(line, markup=False, highlight=False, soft_wrap=True)


@export_app.command("nemo-gym")
def nemo_gym_command(
    campaign_id: CampaignArgument,
    out: OutOption,
    up_to: UpToOption = None,
    seed: SeedOption = 0,
    license: Annotated[
        str, typer.Option("--license", help="License NeMo Gym's dataset config states.")
    ] = "Apache 2.0",
    lake_root: LakeOption = None,
    config: ConfigPath = None,
    overrides: SetOption = None,
) -> None:
    """Write NeMo Gym τ²-bench rows (train/validation JSONL) and a config naming them."""
    where = (lake_root, config, overrides)
    _rl_export("nemo-gym", campaign_id, out, where, up_to=up_to, seed=seed, license=license)


@export_app.command("verl")
def verl_command(
    campaign_id: CampaignArgument,
    out: OutOption,
    up_to: UpToOption = None,
    seed: SeedOption = 0,
    user_config: Annotated[
        Path | None,
        typer.Option(
            "--user-config",
            help="Campaign YAML whose user_simulator model plays the user in rollouts "
            "(default: the offline scripted user).",
        ),
    ] = None,
    lake_root: LakeOption = None,
    config: ConfigPath = None,
    overrides: SetOption = None,
) -> None:
    """Write a verl agent-loop dataset (Parquet) and the loop config for the episode adapter."""
    where = (lake_root, config, overrides)
    _rl_export("verl", campaign_id, out, where, up_to=up_to, seed=seed, user_config=user_config)
