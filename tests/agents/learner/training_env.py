"""Where the tests find LLaMA-Factory: the training environment's interpreter.

LLAMAFACTORY_PYTHON names it (`make test` sets it to the CPU stack of `make train-env`); a
`.venv-train` at the project root is used when it is unset. Without either the tests that train
are skipped on a developer's machine, and fail under CI, which must train.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


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
