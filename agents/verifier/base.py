"""The Verifier contract and its registry."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from tau2.data_model.message import Message
from tau2.data_model.tasks import Task

from evosyn.agents.registry import Registry
from evosyn.records import Verification


@runtime_checkable
class Verifier(Protocol):
    """Decides deterministically whether a trajectory solves its task."""

    name: str

    def verify(
        self,
        task: Task,
        messages: Sequence[Message],
        *,
        campaign_id: str = "adhoc",
        round: int = 0,
        trajectory_id: str | None = None,
    ) -> Verification:
        """The verdict on ``messages`` as an attempt at ``task``."""
        ...


VERIFIERS: Registry[Verifier] = Registry("agents.verifier.kind")
"""Verifier implementations by name."""
