"""tests/gpu/check.sh in its CPU mode: the prepared GPU check's steps, exercised without a GPU.

Slow (a few minutes on two cores; ``make test-slow``): the same steps as on a GPU with the CPU
substitutions (fp32, ZeRO-3 on DeepSpeed's CPU accelerator, ``llamafactory-cli api``), the RL
learner's two GRPO steps from the SFT checkpoint included.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evosyn.records import EvalResult, Training
from evosyn.storage import Lake
from tests.agents.learner.training_env import interpreter, needs_llamafactory

CHECK = Path(__file__).with_name("check.sh")


@pytest.mark.slow
@needs_llamafactory
@pytest.mark.timeout(600)
def test_check_sh_cpu_mode_stores_ten_evaluations_and_prints_tokens_per_second(
    tmp_path: Path,
) -> None:
    env = os.environ | {
        "GPU_CHECK_WORK": str(tmp_path),
        "GPU_CHECK_PYTHON": sys.executable,
        "LLAMAFACTORY_PYTHON": interpreter(),
    }
    done = subprocess.run(
        [str(CHECK), "--cpu"], env=env, capture_output=True, text=True, timeout=580, check=False
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    figures = dict(re.findall(r"^figure (\S+) (\S+)$", out, re.MULTILINE))
    assert figures["evaluations_rows"] == "10"
    assert float(figures["training_tokens_per_s"]) > 0
    assert float(figures["generation_tokens_per_s"]) > 0
    assert re.search(r"^gpu-check: OK on cpu in \d+s$", out, re.MULTILINE)
    assert figures["rl_steps"] == "2" and figures["rl_evaluations_rows"] == "5"
    lake = Lake(str(tmp_path / "lake"))
    [training] = lake.read(Training, "gpu-check", 1)
    assert training.recipe["deepspeed"] == "zero3" and training.status == "succeeded"
    rows = lake.read(EvalResult, "gpu-check", 1)
    assert len(rows) == 10 and {r.training_id for r in rows} == {training.training_id}
    assert {r.split for r in rows} == {"test"}
    # GRPO from the SFT checkpoint, on the same synthesis in a campaign of its own.
    [rl] = lake.read(Training, "gpu-check-rl", 1)
    assert rl.learner == "rl" and rl.recipe["model"] == training.checkpoint_uri
    rl_rows = lake.read(EvalResult, "gpu-check-rl", 1)
    assert len(rl_rows) == 5 and {r.training_id for r in rl_rows} == {rl.training_id}


def test_check_sh_preflight_names_each_missing_prerequisite(tmp_path: Path) -> None:
    # A PATH with the shell's utilities only (no nvidia-smi, vllm, llamafactory-cli), and
    # interpreters that import nothing.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "env", "dirname", "date", "grep", "hostname", "mkdir", "mktemp", "head"):
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    work = tmp_path / "work"
    env = {
        "PATH": str(bin_dir),
        "GPU_CHECK_PYTHON": "/bin/false",
        "LLAMAFACTORY_PYTHON": "/bin/false",
        "GPU_CHECK_WORK": str(work),
    }
    done = subprocess.run(
        [str(CHECK)], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    for what in ("evosyn", "llamafactory-cli", "deepspeed", "trl", "CUDA device", "vllm"):
        assert sum(line.startswith(f"gpu-check: missing {what}") for line in lines) == 1, lines
    assert lines[-1] == "gpu-check: preflight failed (cuda); nothing was run"
    assert not work.exists()
