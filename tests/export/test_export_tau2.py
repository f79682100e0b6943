"""`evosyn export tau2`: a task set that τ²-bench's own registry, loader and CLI read."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evosyn.agents.learner.diagnostic import is_held_out
from evosyn.cli import app
from evosyn.export.tau2 import Tau2ExportError, export_tau2, register_task_set
from evosyn.names import global_id
from evosyn.records import SynthTask, Verification
from evosyn.storage import Lake

pytestmark = pytest.mark.heavy

CAMPAIGN = "exp"  # the campaign of the shared lake (conftest.py)


@pytest.fixture(scope="module")
def exported(lake: Lake, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tau2")
    args = ["export", "tau2", CAMPAIGN, "--out", str(out), "--lake", lake.root]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "python -m evosyn.export.tau2_run" in result.output
    return out


def test_tau2_registry_loads_every_verified_task_and_split(lake: Lake, exported: Path) -> None:
    from tau2.run import get_tasks, load_task_splits

    task_set = register_task_set(exported)
    verified = {v.task_id for v in lake.read(Verification, CAMPAIGN) if v.passed}
    stored = {t.task_id: t for t in lake.read(SynthTask, CAMPAIGN) if t.task_id in verified}
    assert task_set.domain == "airline" and task_set.name == f"evosyn-{CAMPAIGN}"
    loaded = get_tasks(task_set.name, "base")  # τ²-bench's own entry point
    assert len(loaded) == len(stored) == task_set.splits["base"] > 0
    for task in loaded:
        campaign, local = task.id.split(":", 1)
        assert campaign == CAMPAIGN
        original = stored[local].task
        assert task.model_dump(exclude={"id"}) == original.model_dump(exclude={"id"})
    splits = load_task_splits(task_set.name)
    assert splits is not None
    held = {global_id(CAMPAIGN, t) for t in stored if is_held_out(t)}
    assert set(splits["diagnostic"]) == held
    assert set(splits["train"]) == set(splits["base"]) - held
    assert set(splits["round_1"]) == set(splits["base"])
    assert [t.id for t in get_tasks(task_set.name, "diagnostic")] == splits["diagnostic"]
    with pytest.raises(ValueError, match="Invalid task split name: nope"):
        get_tasks(task_set.name, "nope")


def _tau2_cli(exported: Path, task_id: str, results: Path) -> subprocess.CompletedProcess[str]:
    models = ["--agent-llm", "openai/none", "--user-llm", "openai/none"]
    scope = ["--task-ids", task_id, "--num-tasks", "0", "--results-dir", str(results)]
    return subprocess.run(
        [sys.executable, "-m", "evosyn.export.tau2_run", str(exported), "run", *models, *scope],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_tau2_cli_finds_the_exported_tasks_by_id(exported: Path, tmp_path: Path) -> None:
    # --num-tasks 0 stops τ²-bench after it has loaded and matched the tasks, before any
    # model is called: a known id gets as far as "No tasks to run", an unknown one does not.
    first = json.loads((exported / "tasks.json").read_text())[0]["id"]
    found = _tau2_cli(exported, first, tmp_path)
    assert "ValueError: No tasks to run" in found.stderr, found.stderr[-2000:]
    missing = _tau2_cli(exported, f"{CAMPAIGN}:no-such-task", tmp_path)
    assert "Not all tasks were found" in missing.stderr, missing.stderr[-2000:]


def test_export_of_an_unknown_campaign_or_folder_is_one_line(lake: Lake, tmp_path: Path) -> None:
    args = ["export", "tau2", "nope", "--out", str(tmp_path), "--lake", lake.root]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert "unknown campaign 'nope'" in result.output and "(known: exp)" in result.output
    with pytest.raises(Tau2ExportError, match="no verified tasks in rounds <= 0"):
        export_tau2(lake, CAMPAIGN, tmp_path / "empty", up_to=0)
    with pytest.raises(Tau2ExportError, match="no τ²-bench task set at"):
        register_task_set(tmp_path / "nothing")
    launcher = subprocess.run(
        [sys.executable, "-m", "evosyn.export.tau2_run", str(tmp_path / "nothing"), "run"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert launcher.returncode == 2
    assert launcher.stderr.startswith("error: no τ²-bench task set at")
