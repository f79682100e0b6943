"""Verified task sets the episode API runs: from the lake, a synthesis batch or an export.

An :class:`EpisodeTask` is a τ²-bench task with, where one is stored, the conversation the
replay verifier passed for it (its *reference*). The offline user simulator plays the
reference's user turns; a task without one (a τ²-bench export holds tasks only) gets its user
turns from the domain's programmatic Teacher instead (:mod:`evosyn.agents.episodes.users`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field
from tau2.data_model.message import Message
from tau2.data_model.tasks import Task

from evosyn.records import SynthTask, Trajectory, Verification
from evosyn.storage import Lake


class TaskSetError(ValueError):
    """A source with no verified task the episode API could run; the message says why."""


class EpisodeTask(BaseModel):
    """One task an episode can be reset to."""

    model_config = ConfigDict(extra="forbid")

    task: Task = Field(description="The τ²-bench task (user scenario, evaluation criteria).")
    reference: list[Message] | None = Field(
        default=None, description="The verified conversation of the task, where one is stored."
    )
    campaign_id: str | None = Field(default=None, description="Campaign it comes from.")
    round: int | None = Field(default=None, description="Round it was synthesized in.")

    @property
    def task_id(self) -> str:
        """The task's id."""
        return str(self.task.id)


class TaskSet:
    """The verified tasks of one domain, by id.

    Args:
        domain: The domain every task runs in.
        items: The tasks; ids must be unique.
    """

    def __init__(self, domain: str, items: Iterable[EpisodeTask]) -> None:
        self.domain = domain
        self.items: dict[str, EpisodeTask] = {}
        for item in items:
            if item.task_id in self.items:
                raise TaskSetError(f"task {item.task_id!r} appears twice")
            self.items[item.task_id] = item

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[EpisodeTask]:
        return iter(self.items.values())

    def __getitem__(self, task_id: str) -> EpisodeTask:
        try:
            return self.items[task_id]
        except KeyError:
            raise KeyError(f"no task {task_id!r} in the {self.domain} task set") from None

    def ids(self) -> list[str]:
        """Task ids in the set's order."""
        return list(self.items)

    @classmethod
    def from_records(
        cls,
        tasks: Iterable[SynthTask],
        trajectories: Iterable[Trajectory],
        verifications: Iterable[Verification],
    ) -> TaskSet:
        """The tasks with a passed verification, each with its first passed trajectory.

        Raises:
            TaskSetError: If no task passed, or the tasks span several domains.
        """
        by_id = {t.trajectory_id: t for t in trajectories}
        passed: dict[str, Trajectory] = {}
        for verdict in verifications:
            trajectory = by_id.get(verdict.trajectory_id)
            if verdict.passed and trajectory is not None:
                passed.setdefault(verdict.task_id, trajectory)
        kept = [t for t in tasks if t.task_id in passed]
        if not kept:
            raise TaskSetError("no task has a verified trajectory")
        domains = sorted({t.domain for t in kept})
        if len(domains) != 1:
            raise TaskSetError(f"the tasks span several domains {domains}")
        return cls(
            domains[0],
            (
                EpisodeTask(
                    task=t.task,
                    reference=passed[t.task_id].messages,
                    campaign_id=t.campaign_id,
                    round=t.round,
                )
                for t in kept
            ),
        )

    @classmethod
    def from_lake(
        cls,
        lake: Lake,
        campaign_id: str,
        *,
        round: int | None = None,
        up_to: int | None = None,
    ) -> TaskSet:
        """A campaign's verified tasks: one round's, those of rounds <= ``up_to``, or all.

        Raises:
            TaskSetError: If the campaign has no verified task there.
        """
        lake.check_campaign(campaign_id)

        def keep(rnd: int) -> bool:
            return up_to is None or rnd <= up_to

        try:
            return cls.from_records(
                [t for t in lake.read(SynthTask, campaign_id, round) if keep(t.round)],
                [t for t in lake.read(Trajectory, campaign_id, round) if keep(t.round)],
                [v for v in lake.read(Verification, campaign_id, round) if keep(v.round)],
            )
        except TaskSetError as exc:
            scope = f"round {round}" if round is not None else f"rounds <= {up_to}"
            where = scope if round is not None or up_to is not None else "any round"
            raise TaskSetError(f"campaign {campaign_id!r}, {where}: {exc}") from None

    @classmethod
    def from_tau2_export(cls, folder: Path, split: str = "base") -> TaskSet:
        """The tasks of an exported τ²-bench task set (``evosyn export tau2``), one split.

        Raises:
            TaskSetError: If the folder holds no task set or the split is unknown.
        """
        from evosyn.export.tau2 import SPLITS_FILE, TASKS_FILE, Tau2ExportError, read_task_set

        try:
            manifest = read_task_set(folder)
        except Tau2ExportError as exc:
            raise TaskSetError(str(exc)) from None
        splits: Mapping[str, list[str]] = json.loads((folder / SPLITS_FILE).read_text("utf-8"))
        if split not in splits:
            raise TaskSetError(f"no split {split!r} in {folder}; it has {sorted(splits)}")
        wanted = set(splits[split])
        rows = json.loads((folder / TASKS_FILE).read_text("utf-8"))
        tasks = [Task.model_validate(row) for row in rows if row["id"] in wanted]
        return cls(
            manifest.domain,
            (EpisodeTask(task=t, campaign_id=manifest.campaign_id) for t in tasks),
        )
