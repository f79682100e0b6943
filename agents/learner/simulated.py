"""A labelled simulation of a task agent with planted weaknesses, for running the loop on a CPU.

Success on a task is its difficulty's base success, reduced by each planted weakness whose
feature value the task realizes: ``penalty * (1 - mastery)``. Mastery of a weakness grows with
the verified training samples that fall in its region, with diminishing returns:
``1 - exp(-n / mastery_scale)``. Evaluation draws success from that probability with a generator
seeded by (seed, round, task id), so it is reproducible and resumable, and a campaign's id (a
name) does not change its draws.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Sequence
from typing import Literal

from evosyn.agents.learner.base import (
    LEARNERS,
    DiagnosticItem,
    EvalInputs,
    Evaluation,
    LakeInput,
    Learner,
    Trained,
    TrainingData,
    succeeded_by,
)
from evosyn.config import CampaignConfig, LearnerSection
from evosyn.records import EvalResult, Training


class SimulatedLearner:
    """The simulated learner; every record it writes says ``simulated``."""

    name = "simulated"
    reads: frozenset[LakeInput] = frozenset()

    def __init__(self, settings: LearnerSection, seed: int) -> None:
        self.settings = settings
        self.seed = seed
        self.planted = tuple(settings.weaknesses)

    def preflight(self, stage: Literal["train", "evaluate"]) -> None:
        """Nothing to check: it runs anywhere."""

    def answers(self, training: Training) -> bool:
        """Any succeeded simulated training: its recipe is read back when evaluating."""
        return succeeded_by(training, self.name)

    def train(self, data: TrainingData, round: int, training_id: str) -> Trained:
        """Count the training samples in each weak region; no weights are trained."""
        passed = data.verified
        exposure = [
            sum(1 for v in passed if v.realized.get(w.feature) in w.values)
            for w in self.settings.weaknesses
        ]
        training = Training(
            campaign_id=data.campaign_id,
            round=round,
            training_id=training_id,
            learner=self.name,
            recipe={
                "simulated": True,
                "weaknesses": [w.model_dump() for w in self.settings.weaknesses],
                "exposure": exposure,
                "mastery_scale": self.settings.mastery_scale,
                "base_success": self.settings.base_success,
            },
            dataset_snapshot=f"{len(passed)} verified samples of rounds <= {round}",
            n_samples=len(passed),
            status="succeeded",
        )
        return Trained(training=training)

    def success_probability(self, training: Training, realized: dict[str, str]) -> float:
        """The chance the trained learner solves a task with these realized properties."""
        recipe = training.recipe
        base = recipe["base_success"].get(realized.get("difficulty_profile", "medium"), 0.85)
        p = float(base)
        for weakness, n in zip(recipe["weaknesses"], recipe["exposure"], strict=True):
            if realized.get(weakness["feature"]) in weakness["values"]:
                mastery = 1.0 - math.exp(-n / recipe["mastery_scale"])
                p *= 1.0 - weakness["penalty"] * (1.0 - mastery)
        return p

    def evaluate(
        self, training: Training, items: Sequence[DiagnosticItem], inputs: EvalInputs
    ) -> Evaluation:
        """Seeded draws of success per task and trial from :meth:`success_probability`.

        With ``trials`` above one, each task gets one row per trial, ``TASK#trialK`` as the real
        learners name them.
        """
        results = []
        trials = self.settings.trials
        for item in items:
            p = self.success_probability(training, item.realized)
            for trial in range(trials):
                task_id = item.task_id if trials == 1 else f"{item.task_id}#trial{trial}"
                digest = hashlib.sha256(f"{self.seed}|r{training.round}|{task_id}".encode())
                success = random.Random(digest.digest()).random() < p
                results.append(
                    EvalResult(
                        campaign_id=training.campaign_id,
                        round=training.round,
                        training_id=training.training_id,
                        task_id=task_id,
                        split=item.split,
                        success=success,
                        reward=1.0 if success else 0.0,
                        realized=item.realized,
                        failure_reason=None
                        if success
                        else f"simulated failure (p_success={p:.2f})",
                    )
                )
        return Evaluation(results=results)


@LEARNERS.register("simulated")
def _simulated(cfg: CampaignConfig) -> Learner:
    return SimulatedLearner(cfg.agents.learner, cfg.campaign.seed)
