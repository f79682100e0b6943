"""The export and the recipe against LLaMA-Factory itself (where the `train` extra is installed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evosyn.agents.learner.export import export_sft
from evosyn.agents.learner.recipe import TrainRecipe
from evosyn.cli import app
from evosyn.storage import Lake

pytest.importorskip("llamafactory")

from llamafactory.data.converter import get_dataset_converter
from llamafactory.data.parser import get_dataset_list
from llamafactory.hparams.parser import _parse_train_args


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("lake")
    result = CliRunner().invoke(
        app,
        ["synth", "--n", "20", "--seed", "5", "--campaign-id", "lf", "--set", f"lake.root={root}"],
    )
    assert result.exit_code == 0, result.output
    out = tmp_path_factory.mktemp("sft")
    report = export_sft(Lake(str(root)), "lf", out)
    return out, report.dataset


def test_converter_accepts_every_row(exported: tuple[Path, str]) -> None:
    out, name = exported
    (attr,) = get_dataset_list([name], str(out))
    args = _parse_train_args(TrainRecipe(bf16=False).llamafactory_args(name, str(out), "/tmp/o"))
    converter = get_dataset_converter(attr.formatting, attr, args[1])
    rows = json.loads((out / f"{name}.json").read_text())
    assert rows
    for row in rows:
        converted = converter(row)
        # A broken row comes back with an empty prompt and response instead of raising.
        assert converted["_prompt"] and converted["_response"], row["id"]
        assert converted["_tools"] == row["tools"]


def test_rendered_yaml_parses(tmp_path: Path) -> None:
    recipe = TrainRecipe(finetuning="lora", bf16=False, flash_attn="sdpa")
    args = recipe.llamafactory_args("d", str(tmp_path), str(tmp_path / "out"))
    model_args, data_args, training_args, finetuning_args, _ = _parse_train_args(args)
    assert model_args.model_name_or_path == recipe.model
    assert data_args.cutoff_len == recipe.cutoff_len
    assert finetuning_args.finetuning_type == "lora"
    assert training_args.learning_rate == recipe.learning_rate
