"""Ctrl-C during `evosyn export`: one line, exit 130, no partial output; the rerun writes it all."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evosyn.cli import app
from evosyn.storage import Lake

pytestmark = pytest.mark.heavy

CAMPAIGN = "exp"  # the campaign of the shared lake (conftest.py)

# `evosyn export ...` through the script's entry point, with one of the writer's functions
# made to stop after its first call: the export is then part-way, and stays so until the
# SIGINT (no race with a fast export).
PAUSED_EXPORT = textwrap.dedent(
    """
    import importlib, sys, time

    module, attribute = sys.argv[1], sys.argv[2]
    *owners, name = attribute.split(".")
    owner = importlib.import_module(module)
    for part in owners:
        owner = getattr(owner, part)
    original = getattr(owner, name)

    def paused(*args, **kwargs):
        done = original(*args, **kwargs)
        print("part-way", flush=True)
        time.sleep(120)
        return done

    setattr(owner, name, paused)
    sys.argv = ["evosyn", *sys.argv[3:]]
    from evosyn.cli import main

    main()
    """
)

# Each subcommand, and a function its writer calls for one file of several.
WRITERS = {
    "sft": ("evosyn.agents.learner.export", "_atomic"),
    "tau2": ("evosyn.export.tau2", "_write"),
    "hf": ("datasets", "Dataset.to_parquet"),
    "nemo-gym": ("evosyn.export.rl", "_write"),
    "verl": ("evosyn.export.rl", "_write"),
}


def test_every_export_subcommand_is_covered() -> None:
    from evosyn.export.cli import export_app

    assert {c.name for c in export_app.registered_commands} == set(WRITERS)


def _args(kind: str, lake: Lake, out: Path) -> list[str]:
    return ["export", kind, CAMPAIGN, "--out", str(out), "--lake", lake.root]


def _interrupted(kind: str, lake: Lake, out: Path) -> tuple[int, str]:
    module, attribute = WRITERS[kind]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-c", PAUSED_EXPORT, module, attribute, *_args(kind, lake, out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line == "part-way\n", (line, proc.stderr.read() if proc.stderr else "")
        os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C does
        _, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    return proc.returncode, stderr


def _files(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {
        p.relative_to(folder).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize("kind", sorted(WRITERS))
def test_ctrl_c_mid_export_leaves_no_output_or_the_old_one_and_a_rerun_writes_it_all(
    kind: str, lake: Lake, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    out = tmp_path / "out"
    line = f"interrupted: run it again with `evosyn {' '.join(_args(kind, lake, out))}`\n"

    code, stderr = _interrupted(kind, lake, out)
    assert (code, stderr) == (130, line)
    assert list(tmp_path.iterdir()) == []  # no output, no scratch folder

    result = CliRunner().invoke(app, _args(kind, lake, out))
    assert result.exit_code == 0, result.output
    whole = _files(out)
    assert len(whole) >= 3

    code, stderr = _interrupted(kind, lake, out)
    assert (code, stderr) == (130, line)
    assert _files(out) == whole  # the previous export, not a file of it touched
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def _failing_after_first_call(monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    """The writer's function for one file of several raises once one file is written."""
    import importlib

    module, attribute = WRITERS[kind]
    *owners, name = attribute.split(".")
    owner = importlib.import_module(module)
    for part in owners:
        owner = getattr(owner, part)
    original = getattr(owner, name)

    def failing(*args: object, **kwargs: object) -> object:
        original(*args, **kwargs)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(owner, name, failing)


@pytest.mark.parametrize("kind", sorted(WRITERS))
def test_an_error_mid_export_leaves_no_output_or_the_old_one(
    kind: str, lake: Lake, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    out = tmp_path / "out"
    with monkeypatch.context() as failing:
        _failing_after_first_call(failing, kind)
        result = CliRunner().invoke(app, _args(kind, lake, out))
    assert isinstance(result.exception, OSError), result.output
    assert list(tmp_path.iterdir()) == []  # no output, no scratch folder

    assert CliRunner().invoke(app, _args(kind, lake, out)).exit_code == 0
    whole = _files(out)
    with monkeypatch.context() as failing:
        _failing_after_first_call(failing, kind)
        result = CliRunner().invoke(app, _args(kind, lake, out))
    assert isinstance(result.exception, OSError), result.output
    assert _files(out) == whole  # the previous export, not a file of it touched
    assert [p.name for p in tmp_path.iterdir()] == ["out"]
