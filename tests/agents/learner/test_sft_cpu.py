"""CPU proof of the training pipe: a tiny random Qwen3 fine-tuned by ``llamafactory-cli train``.

The same entry point the GPU job runs (``learner_lake.train``: D_<=r from the lake, then
``SFTLearner.train``'s export, render and training command, then the upload), with
LLaMA-Factory's own CLI from the training environment (training_env.py).
In the default run: about 40 s on two cores.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evosyn.agents.learner.diagnostic import split_verified
from evosyn.agents.learner.sft import SFTLearner
from evosyn.cli import app
from evosyn.config import CampaignConfig
from evosyn.records import Verification
from evosyn.storage import Lake
from evosyn.tasks import learner_lake
from evosyn.tasks.learner_lake import local_checkpoint
from tests.agents.learner.training_env import (
    TinyModel,
    interpreter,
    needs_llamafactory,
    run_tiny,
    tiny_qwen3,  # noqa: F401  (the fixture)
)

pytestmark = [needs_llamafactory, pytest.mark.timeout(240)]


def test_tiny_qwen3_trains_through_llamafactory_cli(
    tiny_qwen3: TinyModel,  # noqa: F811
    tmp_path: Path,
) -> None:
    root = tmp_path / "lake"
    result = CliRunner().invoke(
        app,
        ["synth", "--n", "12", "--seed", "5", "--campaign-id", "cpu", "--set", f"lake.root={root}"],
    )
    assert result.exit_code == 0, result.output
    base, built = tiny_qwen3.path, tiny_qwen3.built
    assert int(str(built["params"])) < 1_000_000
    cli = Path(interpreter()).parent / "llamafactory-cli"
    cfg = CampaignConfig.model_validate(
        {
            "lake": {"root": str(root)},
            "agents": {
                "learner": {
                    "kind": "sft",
                    "train_command": [str(cli), "train"],
                    "work_dir": str(tmp_path / "work"),
                    "recipe": {
                        "model": str(base),
                        "cutoff_len": 1024,
                        "bf16": False,
                        "flash_attn": "sdpa",
                        "gpus": 1,
                        "device": "cpu",
                        "deepspeed": "none",
                        "grad_accum": 1,
                        "max_steps": 3,
                        "logging_steps": 1,
                        "learning_rate": 1e-3,
                    },
                }
            },
        }
    )
    learner = SFTLearner(cfg)
    train, _ = split_verified(Lake(str(root)).read(Verification, "cpu"))
    lake = Lake(str(root))
    training = learner_lake.train(lake, learner, "cpu", 1, "cpu-r1-train", "checkpoints")
    assert training.status == "succeeded", training.error
    assert training.n_samples == len(train) > 0 and training.seconds > 0
    assert training.checkpoint_uri == f"{root}/checkpoints/cpu/cpu-r1-train"
    checkpoint = local_checkpoint(Lake(str(root)), training.checkpoint_uri)
    state = json.loads((checkpoint / "trainer_state.json").read_text())
    assert state["global_step"] == 3
    losses = [entry["loss"] for entry in state["log_history"] if "loss" in entry]
    assert len(losses) == 3 and all(loss > 0 for loss in losses)
    loaded = run_tiny("load", checkpoint)
    assert loaded["model_type"] == "qwen3" and loaded["finite"] is True
    assert loaded["logits_shape"][-1] == built["vocab"]  # type: ignore[index]
