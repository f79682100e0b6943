"""The learner's protocol, its evaluation input and output, and its registry."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from evosyn.agents.registry import Registry
from evosyn.config import CampaignConfig, Weakness
from evosyn.records import EvalResult, LLMCall, Training, Verification

InfraKind = Literal["server_down", "server_error", "context_overflow", "user_sim_error"]


class DiagnosticItem(BaseModel):
    """One task the learner is evaluated on, with its gold trajectory's realized properties."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task_id: str = Field(description="Task id (official or synthesized held-out).")
    split: str = Field(description="diagnostic or test.")
    realized: dict[str, str] = Field(description="Realized properties of the gold trajectory.")


class InfraFailure(BaseModel):
    """An episode that could not be scored; never counted as a learner failure."""

    model_config = ConfigDict(extra="forbid")

    task_id: str
    trial: int = Field(ge=0)
    kind: InfraKind
    attempts: int = Field(ge=1)
    message: str


class Evaluation(BaseModel):
    """What one evaluation produced: scored episodes, unscored ones, and the model calls made."""

    model_config = ConfigDict(extra="forbid")

    results: list[EvalResult] = Field(description="One per scored episode.")
    failures: list[InfraFailure] = Field(
        default_factory=list, description="Episodes broken by infrastructure, left unscored."
    )
    calls: list[LLMCall] = Field(
        default_factory=list, description="Every model-call attempt, for ``llm_calls``."
    )


class Learner(Protocol):
    """A task agent: train on D_<=r, then evaluate."""

    name: str
    planted: tuple[Weakness, ...]
    """Weaknesses planted in it (the simulated learner's); none in a real one."""

    def answers(self, training: Training) -> bool:
        """Whether a stored training is what this learner would train now (same recipe)."""
        ...

    def train(
        self, verified: Sequence[Verification], campaign_id: str, round: int, training_id: str
    ) -> Training:
        """Train on the accumulated verified data; the record says how."""
        ...

    def evaluate(self, training: Training, items: Sequence[DiagnosticItem]) -> Evaluation:
        """The trained learner on ``items``: results, infrastructure failures and model calls."""
        ...


LEARNERS: Registry[Learner] = Registry("agents.learner.kind")
"""Learner implementations by name."""

# The real learners are imported when built: they pull in τ²-bench's orchestrator and litellm.


@LEARNERS.register("icl")
def _icl(cfg: CampaignConfig) -> Learner:
    from evosyn.agents.learner.icl import ICLLearner

    return ICLLearner(cfg)


@LEARNERS.register("sft", gpu=True)
def _sft(cfg: CampaignConfig) -> Learner:
    from evosyn.agents.learner.sft import SFTLearner

    return SFTLearner(cfg)
