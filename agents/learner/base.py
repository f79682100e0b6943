"""The learner's protocol, its evaluation input and output, and its registry."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field
from tau2.data_model.tasks import Task

from evosyn.agents.registry import Registry
from evosyn.kinds import Weakness as Weakness
from evosyn.records import (
    EvalResult,
    LLMCall,
    SynthTask,
    Training,
    Trajectory,
    UnscoredEpisode,
    Verification,
)

InfraKind = Literal[
    "server_down", "server_error", "context_overflow", "user_sim_error", "user_sim_fault"
]
LakeInput = Literal["examples", "tasks", "checkpoint", "previous"]
"""What a learner's tasks read from the lake for it beyond the verifications of D_<=r:
``examples`` (their trajectories and tasks), ``tasks`` (the evaluated τ²-bench tasks),
``checkpoint`` (a local copy of the training's weights) and ``previous`` (its latest training
of an earlier round, with a local copy of those weights: where a learner that continues
training across rounds starts)."""


class DiagnosticItem(BaseModel):
    """One task the learner is evaluated on, with its gold trajectory's realized properties."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task_id: str = Field(description="Task id (official or synthesized held-out).")
    split: str = Field(description="diagnostic or test.")
    realized: dict[str, str] = Field(description="Realized properties of the gold trajectory.")


USER_SIMULATOR_KINDS: frozenset[InfraKind] = frozenset({"user_sim_fault", "user_sim_error"})
"""The kinds of unscored episode the user simulator caused (``RoundSummary.n_user_faults``)."""
USER_FAULTS = (
    "diagnostic episodes the user simulator broke (it invented a fact, hung up on a question "
    "or broke the turn protocol), left out of n and of every success rate; each is a row of "
    "unscored_episodes with what went wrong."
)
"""What the user-faults count of a round means, wherever it is shown."""


def episode_id(task_id: str, trial: int, trials: int) -> str:
    """An episode's task id in the lake: the task's, ``TASK#trialK`` with several trials."""
    return task_id if trials == 1 else f"{task_id}#trial{trial}"


class InfraFailure(BaseModel):
    """An episode that could not be scored; never counted as a learner failure."""

    model_config = ConfigDict(extra="forbid")

    task_id: str
    trial: int = Field(ge=0)
    kind: InfraKind
    attempts: int = Field(ge=1)
    message: str

    def row(self, training: Training, split: str, trials: int) -> UnscoredEpisode:
        """The ``unscored_episodes`` row of this episode of ``training``'s learner."""
        return UnscoredEpisode(
            campaign_id=training.campaign_id,
            round=training.round,
            training_id=training.training_id,
            task_id=episode_id(self.task_id, self.trial, trials),
            split=split,
            kind=self.kind,
            attempts=self.attempts,
            message=self.message,
        )


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


class TrainingData(BaseModel):
    """D_<=r, read from the lake by the train task (and by the evaluate task for ``examples``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    campaign_id: str
    scope: str = Field(
        default="any round", description="Its rounds: 'round R', 'rounds <= R' or 'any round'."
    )
    verified: list[Verification] = Field(
        description="Passed verifications of the rounds, held-out tasks excepted, in (round, "
        "trajectory id) order."
    )
    held_out: int = Field(ge=0, description="Passed verifications of held-out (diagnostic) tasks.")
    trajectories: dict[str, Trajectory] = Field(
        default_factory=dict,
        description="The verified trajectories by id; read for a learner that reads examples.",
    )
    tasks: dict[str, SynthTask] = Field(
        default_factory=dict,
        description="The verified tasks by id; read for a learner that reads examples.",
    )
    previous: Training | None = Field(
        default=None,
        description="The learner's latest training of an earlier round that answers its "
        "recipe and has weights; read for a learner that reads previous.",
    )
    previous_checkpoint: Path | None = Field(
        default=None, description="Local copy of the previous training's weights."
    )


class Trained(BaseModel):
    """What a training produced: its record, and the weights the train task stores."""

    model_config = ConfigDict(extra="forbid")

    training: Training
    checkpoint: Path | None = Field(
        default=None,
        description="Local folder of the trained weights; the train task uploads it to the "
        "lake and records its URI as the training's checkpoint_uri.",
    )


class EvalInputs(BaseModel):
    """What the evaluate task read from the lake for ``Learner.evaluate`` (its ``reads``)."""

    model_config = ConfigDict(extra="forbid")

    tasks: dict[str, Task] = Field(
        default_factory=dict, description="The τ²-bench task of each evaluated item, by its id."
    )
    data: TrainingData | None = Field(default=None, description="The training's D_<=r.")
    checkpoint: Path | None = Field(
        default=None, description="Local copy of the training's checkpoint."
    )


class Learner(Protocol):
    """A task agent: train on D_<=r, then evaluate.

    A learner neither reads nor writes the lake: the train and evaluate tasks read what its
    ``reads`` names, pass it in, and store what it returns.
    """

    name: str
    planted: tuple[Weakness, ...]
    """Weaknesses planted in it (the simulated learner's); none in a real one."""
    reads: frozenset[LakeInput]
    """What its tasks read from the lake for it (see :data:`LakeInput`)."""

    def preflight(self, stage: Literal["train", "evaluate"]) -> None:
        """Fail in one line if this machine cannot run ``stage``; called before any read."""
        ...

    def answers(self, training: Training) -> bool:
        """Whether a stored training is what this learner would train now (same recipe)."""
        ...

    def train(self, data: TrainingData, round: int, training_id: str) -> Trained:
        """Train on D_<=round; the record says how, and any weights come back to be stored."""
        ...

    def evaluate(
        self, training: Training, items: Sequence[DiagnosticItem], inputs: EvalInputs
    ) -> Evaluation:
        """The trained learner on ``items``: results, infrastructure failures and model calls."""
        ...


def succeeded_by(training: Training, name: str) -> bool:
    """Whether ``training`` succeeded and was trained by the learner named ``name``."""
    return training.status == "succeeded" and training.learner == name


LEARNERS: Registry[Learner] = Registry("agents.learner.kind")
"""Learner implementations by name."""

# Each kind and its settings are declared in evosyn/kinds.py: a config is validated there. The
# real learners register in the package (agents/learner/__init__.py), not here: their modules
# import this one.
