"""The export and the recipe against LLaMA-Factory itself.

LLaMA-Factory lives in the training environment (the GPU image, `make train-env` on a CPU, or
any venv with the `train` extra), not beside the synthesis stack: see training_env.py.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import yaml
from typer.testing import CliRunner

from evosyn.agents.learner.export import export_sft
from evosyn.agents.learner.recipe import TrainRecipe
from evosyn.cli import app
from evosyn.storage import Lake
from evosyn.tasks.learner_lake import training_data
from tests.agents.learner.training_env import interpreter, needs_llamafactory

pytestmark = needs_llamafactory
PROBE = Path(__file__).with_name("llamafactory_probe.py")


def _probe(out: Path, name: str, args: dict[str, object]) -> dict[str, object]:
    train_yaml = out / "train.yaml"
    train_yaml.write_text(yaml.safe_dump(args))
    done = subprocess.run(
        [interpreter(), str(PROBE), str(out), name, str(train_yaml)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "DISABLE_VERSION_CHECK": "1"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_llamafactory_reads_the_export_and_the_recipe(tmp_path: Path) -> None:
    root = tmp_path / "lake"
    result = CliRunner().invoke(
        app,
        ["synth", "--n", "20", "--seed", "5", "--campaign-id", "lf", "--set", f"lake.root={root}"],
    )
    assert result.exit_code == 0, result.output
    out = tmp_path / "sft"
    report = export_sft(training_data(Lake(str(root)), "lf"), out)
    recipe = TrainRecipe(bf16=False, flash_attn="sdpa")
    ds = out / "ds_z3.json"
    ds.write_text(json.dumps(recipe.deepspeed_config()))
    args = recipe.llamafactory_args(report.dataset, str(out), str(tmp_path / "ckpt"), str(ds))
    parsed = _probe(out, report.dataset, args)
    assert parsed["rows"] == report.n_samples > 0
    assert parsed["broken"] == []
    # Every tool call the model learns to write is parsed back into the same call when served.
    assert parsed["tool_calls"] > report.n_samples
    assert parsed["n_tool_call_mismatches"] == 0, parsed["tool_call_mismatches"]
    assert parsed["cutoff_len"] == recipe.cutoff_len
    assert parsed["finetuning_type"] == "full"
    assert parsed["learning_rate"] == recipe.learning_rate
    assert parsed["deepspeed"] == str(ds)
