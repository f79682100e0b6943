"""A campaign's verified tasks as a τ²-bench task set: ``tasks.json`` and ``split_tasks.json``.

τ²-bench's domains load a task file and the split file beside it (``split_<stem>.json``) and are
found through its registry by name. :func:`export_tau2` writes both files in that layout, plus
``task_set.json`` naming the set; :func:`register_task_set` registers them with τ²-bench's own
registry and loader, so τ²-bench's runner and CLI run them (``python -m evosyn.export.tau2_run``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from evosyn.names import global_id
from evosyn.storage import Lake

TASKS_FILE = "tasks.json"
SPLITS_FILE = f"split_{Path(TASKS_FILE).stem}.json"
MANIFEST_FILE = "task_set.json"


class Tau2ExportError(ValueError):
    """A campaign or folder that cannot become a τ²-bench task set; the message says why."""


class Tau2TaskSet(BaseModel):
    """What ``task_set.json`` says about an exported task set."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Task-set name to pass to τ²-bench (--task-set-name).")
    domain: str = Field(description="τ²-bench domain the tasks run in (--domain).")
    campaign_id: str = Field(description="Campaign the tasks come from.")
    rounds: list[int] = Field(description="Rounds whose verified tasks are in the set.")
    splits: dict[str, int] = Field(description="Split name -> number of tasks in it.")
    files: list[str] = Field(default_factory=list, description="Files written, by name.")


def task_set_name(campaign_id: str) -> str:
    """The τ²-bench task-set name of a campaign's export."""
    return f"evosyn-{campaign_id}"


def export_tau2(lake: Lake, campaign_id: str, out: Path, up_to: int | None = None) -> Tau2TaskSet:
    """Write the campaign's verified tasks (rounds <= ``up_to``) as a τ²-bench task set.

    A task is exported when one of its trajectories passed verification: the replay showed a
    conversation reaching reward 1, so the task is solvable as written. Splits: ``base`` (all,
    τ²-bench's default), ``train`` and ``diagnostic`` (the campaign's held-out tasks, which
    training never saw), and ``round_<r>``. Task ids are campaign-qualified.
    """
    from evosyn.agents.learner.diagnostic import is_held_out
    from evosyn.records import SynthTask, Verification

    lake.check_campaign(campaign_id)
    passed = {
        v.task_id
        for v in lake.read(Verification, campaign_id)
        if v.passed and (up_to is None or v.round <= up_to)
    }
    tasks = sorted(
        (t for t in lake.read(SynthTask, campaign_id) if t.task_id in passed),
        key=lambda t: (t.round, t.task_id),
    )
    if not tasks:
        scope = f"rounds <= {up_to}" if up_to is not None else "any round"
        raise Tau2ExportError(f"campaign {campaign_id!r} has no verified tasks in {scope}")
    domains = sorted({t.domain for t in tasks})
    if len(domains) != 1:
        raise Tau2ExportError(f"campaign {campaign_id!r} spans several domains {domains}")
    rows: list[dict[str, object]] = []
    splits: dict[str, list[str]] = {"base": [], "train": [], "diagnostic": []}
    for t in tasks:
        uid = global_id(campaign_id, t.task_id)
        rows.append(t.task.model_copy(update={"id": uid}).model_dump(mode="json"))
        splits["base"].append(uid)
        splits["diagnostic" if is_held_out(t.task_id) else "train"].append(uid)
        splits.setdefault(f"round_{t.round}", []).append(uid)
    out.mkdir(parents=True, exist_ok=True)
    manifest = Tau2TaskSet(
        name=task_set_name(campaign_id),
        domain=domains[0],
        campaign_id=campaign_id,
        rounds=sorted({t.round for t in tasks}),
        splits={name: len(ids) for name, ids in splits.items()},
        files=[TASKS_FILE, SPLITS_FILE, MANIFEST_FILE],
    )
    _write(out / TASKS_FILE, json.dumps(rows, ensure_ascii=False, indent=1))
    _write(out / SPLITS_FILE, json.dumps(splits, indent=1))
    _write(out / MANIFEST_FILE, manifest.model_dump_json(indent=1))
    return manifest


def read_task_set(folder: Path) -> Tau2TaskSet:
    """The manifest of an exported task set; Tau2ExportError if ``folder`` holds none."""
    path = folder / MANIFEST_FILE
    if not path.is_file():
        raise Tau2ExportError(f"no τ²-bench task set at {folder.resolve()} (no {MANIFEST_FILE})")
    try:
        return Tau2TaskSet.model_validate_json(path.read_text("utf-8"))
    except ValueError as exc:
        raise Tau2ExportError(f"{path.resolve()} is not a task-set manifest: {exc}") from None


def register_task_set(folder: Path) -> Tau2TaskSet:
    """Register the task set in ``folder`` with τ²-bench's registry (once per process).

    The loader is τ²-bench's own: ``tau2.utils.load_file`` for both files and
    ``Task.model_validate`` per task, with the same split semantics as its built-in domains
    (``None`` = every task, an unknown split is a ValueError naming the known ones).
    """
    from tau2.data_model.tasks import Task
    from tau2.registry import registry
    from tau2.utils.io_utils import load_file

    manifest = read_task_set(folder)
    tasks_path, splits_path = (folder / TASKS_FILE).resolve(), (folder / SPLITS_FILE).resolve()

    def get_splits() -> dict[str, list[str]]:
        splits: dict[str, list[str]] = load_file(splits_path)
        return splits

    def get_tasks(task_split_name: str | None = "base") -> list[Task]:
        tasks = [Task.model_validate(t) for t in load_file(tasks_path)]
        if task_split_name is None:
            return tasks
        splits = get_splits()
        if task_split_name not in splits:
            raise ValueError(
                f"Invalid task split name: {task_split_name}. Valid splits are: {splits.keys()}"
            )
        return [t for t in tasks if t.id in splits[task_split_name]]

    if manifest.name not in registry.get_task_sets():
        registry.register_tasks(get_tasks, manifest.name, get_task_splits=get_splits)
    return manifest


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
