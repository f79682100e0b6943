"""CPU proof of the training pipe: a tiny random Qwen3 fine-tuned by ``llamafactory-cli train``.

The same entry point the GPU job runs (``learner_lake.train``: D_<=r from the lake, then
``SFTLearner.train``'s export, render and training command, then the upload), with
LLaMA-Factory's own CLI from the training environment (training_env.py).
In the default run: about 40 s on two cores.
"""

from __future__ import annotations

import json
import subprocess
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
from tests.agents.learner.training_env import interpreter, needs_llamafactory

TINY = Path(__file__).with_name("tiny_qwen3.py")
pytestmark = [needs_llamafactory, pytest.mark.timeout(240)]


def _tiny(action: str, path: Path) -> dict[str, object]:
    done = subprocess.run(
        [interpreter(), str(TINY), action, str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_tiny_qwen3_trains_through_llamafactory_cli(tmp_path: Path) -> None:
    root = tmp_path / "lake"
    result = CliRunner().invoke(
        app,
        ["synth", "--n", "12", "--seed", "5", "--campaign-id", "cpu", "--set", f"lake.root={root}"],
    )
    assert result.exit_code == 0, result.output
    base = tmp_path / "tiny-qwen3"
    built = _tiny("build", base)
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
    loaded = _tiny("load", checkpoint)
    assert loaded["model_type"] == "qwen3" and loaded["finite"] is True
    assert loaded["logits_shape"][-1] == built["vocab"]  # type: ignore[index]
