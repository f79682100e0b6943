"""The learner's protocol and its evaluation input."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from evosyn.records import EvalResult, Training, Verification


class DiagnosticItem(BaseModel):
    """One task the learner is evaluated on, with its gold trajectory's realized properties."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task_id: str = Field(description="Task id (official or synthesized held-out).")
    split: str = Field(description="diagnostic or test.")
    realized: dict[str, str] = Field(description="Realized properties of the gold trajectory.")


class Learner(Protocol):
    """A task agent: train on D_<=r, then evaluate."""

    name: str

    def train(
        self, verified: Sequence[Verification], campaign_id: str, round: int, training_id: str
    ) -> Training:
        """Train on the accumulated verified data; the record says how."""
        ...

    def evaluate(self, training: Training, items: Sequence[DiagnosticItem]) -> list[EvalResult]:
        """Results of the trained learner on ``items``."""
        ...
