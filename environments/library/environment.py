"""The library domain's τ²-bench environment constructor and task loaders.

Shaped like a ``tau2.domains.<name>.environment`` module: :func:`get_environment` builds the
``Environment`` (agent tools over the database, the policy text), :func:`get_tasks` and
:func:`get_tasks_split` read the official tasks and their splits from the files beside it.
"""

from __future__ import annotations

import json
from importlib import resources

from tau2.data_model.tasks import Task
from tau2.environment.environment import Environment

from evosyn.environments.library.data import load_db
from evosyn.environments.library.data_model import LibraryDB
from evosyn.environments.library.tools import LibraryTools

_FILES = resources.files(__package__ or "evosyn.environments.library")


def policy_text() -> str:
    """The agent policy (``policy.md``)."""
    return _FILES.joinpath("policy.md").read_text("utf-8")


def get_environment(db: LibraryDB | None = None, solo_mode: bool = False) -> Environment:
    """The library's τ²-bench environment over ``db`` (default: a fresh database).

    Raises:
        ValueError: If ``solo_mode`` is asked: the desk always talks with a patron.
    """
    if solo_mode:
        raise ValueError("the library domain does not support solo mode")
    return Environment(
        domain_name="library",
        policy=policy_text(),
        tools=LibraryTools(db if db is not None else load_db()),
    )


def get_tasks(task_split_name: str | None = None) -> list[Task]:
    """The official tasks (``tasks.json``): all, or one split's.

    Raises:
        ValueError: If the split is unknown.
    """
    raw = json.loads(_FILES.joinpath("tasks.json").read_text("utf-8"))
    tasks = [Task.model_validate(t) for t in raw]
    if task_split_name is None:
        return tasks
    splits = get_tasks_split()
    if task_split_name not in splits:
        raise ValueError(f"unknown split {task_split_name!r}; known: {sorted(splits)}")
    wanted = set(splits[task_split_name])
    return [t for t in tasks if t.id in wanted]


def get_tasks_split() -> dict[str, list[str]]:
    """Split name -> task ids (``split_tasks.json``)."""
    splits: dict[str, list[str]] = json.loads(
        _FILES.joinpath("split_tasks.json").read_text("utf-8")
    )
    return splits
