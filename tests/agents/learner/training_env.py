"""Where the tests find LLaMA-Factory: the training environment's interpreter, and a tiny model.

LLAMAFACTORY_PYTHON names it (`make test` sets it to the CPU stack of `make train-env`); a
`.venv-train` at the project root is used when it is unset. Without either the tests that train
are skipped on a developer's machine, and fail under CI, which must train.

``tiny_qwen3`` is the tiny random Qwen3 of tiny_qwen3.py, built once per test run (a process
start that imports torch and transformers) and shared, read-only, by every test that trains it:
under pytest-xdist the workers of one run share it through the run's temporary folder.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from filelock import FileLock
from shared_lakes import run_folder

REPO = Path(__file__).resolve().parents[3]
TINY = Path(__file__).with_name("tiny_qwen3.py")


def llamafactory_python() -> str | None:
    """The training environment's interpreter, if there is one."""
    named = os.environ.get("LLAMAFACTORY_PYTHON")
    if named:
        return named
    local = REPO / ".venv-train" / "bin" / "python"
    return str(local) if local.exists() else None


PYTHON = llamafactory_python()
needs_llamafactory = pytest.mark.skipif(
    PYTHON is None and not os.environ.get("CI"),
    reason="no training environment: run make train-env or set LLAMAFACTORY_PYTHON",
)


def interpreter() -> str:
    """The interpreter, or a failure that says how to get one (under CI)."""
    assert PYTHON is not None, "CI trains a model: make train-env, or set LLAMAFACTORY_PYTHON"
    return PYTHON


def run_tiny(action: str, path: Path) -> dict[str, object]:
    """``tiny_qwen3.py ACTION PATH`` in the training environment; the JSON line it prints."""
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


@dataclass(frozen=True)
class TinyModel:
    """The built model's folder and what the build printed (``vocab``, ``params``)."""

    path: Path
    built: dict[str, object]


@pytest.fixture(scope="session")
def tiny_qwen3(tmp_path_factory: pytest.TempPathFactory) -> TinyModel:
    """The tiny random Qwen3, built on first use in this run; nothing may write to its folder."""
    shared = run_folder(tmp_path_factory)
    model, info = shared / "tiny-qwen3", shared / "tiny-qwen3.json"
    with FileLock(str(shared / "tiny-qwen3.lock")):
        if not info.exists():
            built = run_tiny("build", model)
            info.write_text(json.dumps(built))
    return TinyModel(model, json.loads(info.read_text()))
