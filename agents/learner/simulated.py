"""A labelled simulation of a task agent with planted weaknesses, for running the loop on a CPU.

Success on a task is its difficulty's base success, reduced

- by each planted weakness whose feature value the task realizes: ``penalty * (1 - mastery)``.
  Mastery of a weakness grows with the verified training samples that fall in its region, with
  diminishing returns: ``1 - exp(-n / mastery_scale)``;
- by unfamiliarity (``familiarity_penalty``, off by default): ``penalty * (1 - familiarity)``,
  familiarity the mean over ``familiarity_features`` of ``1 - exp(-n_f / familiarity_scale)``
  with ``n_f`` the training samples that realize the task's value of feature f. So what else
  the data holds counts: its volume, and its variety over the values the tasks realize. (Only
  verified samples are trained on, so correctness is the Verifier's and the same in every arm.)

Evaluation draws success from that probability with a generator seeded by (seed, round, task
id, ``draw_stream``), so it is reproducible and resumable, and a campaign's id (a name) does
not change its draws. Two runs with the same seed and stream share their random numbers
(common random numbers, a variance reduction for paired comparisons); an experiment gives each
arm its own stream unless ``experiment.common_random_numbers`` asks for shared draws.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from evosyn.agents.learner.base import (
    LEARNERS,
    DiagnosticItem,
    EvalInputs,
    Evaluation,
    LakeInput,
    Learner,
    Trained,
    TrainingData,
    episode_id,
    succeeded_by,
)
from evosyn.config import CampaignConfig, LearnerSection
from evosyn.environments.features import factor_values
from evosyn.kinds import SimulatedSettings as SimulatedSettings
from evosyn.kinds import Weakness
from evosyn.records import EvalResult, Training


class SimulatedLearner:
    """The simulated learner; every record it writes says ``simulated``."""

    name = "simulated"
    reads: frozenset[LakeInput] = frozenset()

    def __init__(self, section: LearnerSection, seed: int) -> None:
        self.settings = section.kind_settings(SimulatedSettings)
        self.trials = section.trials
        self.seed = seed
        self.planted = tuple(self.settings.weaknesses)

    def preflight(self, stage: Literal["train", "evaluate"]) -> None:
        """Nothing to check: it runs anywhere."""

    def answers(self, training: Training) -> bool:
        """Any succeeded simulated training: its recipe is read back when evaluating."""
        return succeeded_by(training, self.name)

    def train(self, data: TrainingData, round: int, training_id: str) -> Trained:
        """Count the training samples in each weak region; no weights are trained."""
        passed = data.verified
        settings = self.settings
        exposure = [
            sum(1 for v in passed if in_weakness(v.realized, w)) for w in settings.weaknesses
        ]
        counts: dict[str, dict[str, int]] = {}
        if settings.familiarity_penalty > 0:
            for feature in settings.familiarity_features:
                seen: dict[str, int] = {}
                for v in passed:
                    for value in factor_values(v.realized, feature):
                        seen[value] = seen.get(value, 0) + 1
                counts[feature] = dict(sorted(seen.items()))
        training = Training(
            campaign_id=data.campaign_id,
            round=round,
            training_id=training_id,
            learner=self.name,
            recipe={
                "simulated": True,
                "weaknesses": [w.model_dump() for w in self.settings.weaknesses],
                "exposure": exposure,
                "mastery_scale": settings.mastery_scale,
                "base_success": settings.base_success,
                "familiarity_penalty": settings.familiarity_penalty,
                "familiarity_scale": settings.familiarity_scale,
                "familiarity_counts": counts,
                "draw_stream": settings.draw_stream,
            },
            dataset_snapshot=f"{len(passed)} verified samples of rounds <= {round}",
            n_samples=len(passed),
            status="succeeded",
        )
        return Trained(training=training)

    def evaluate(
        self, training: Training, items: Sequence[DiagnosticItem], inputs: EvalInputs
    ) -> Evaluation:
        """Seeded draws of success per task and trial from :func:`success_probability`.

        With ``trials`` above one, each task gets one row per trial, ``TASK#trialK`` as the real
        learners name them.
        """
        results = []
        trials = self.trials
        for item in items:
            p = success_probability(training, item.realized)
            for trial in range(trials):
                task_id = episode_id(item.task_id, trial, trials)
                stream = training.recipe.get("draw_stream", "")
                success = _uniform(self.seed, training.round, task_id, stream) < p
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


HELD_OUT_STREAM = "held-out"
"""The stream of :func:`held_out_results`' draws, which no role of the loop reads."""


def success_probability(training: Training, realized: Mapping[str, str]) -> float:
    """The chance the trained learner solves a task with these realized properties."""
    recipe = training.recipe
    base = recipe["base_success"].get(realized.get("difficulty_profile", "medium"), 0.85)
    p = float(base)
    for weakness, n in zip(recipe["weaknesses"], recipe["exposure"], strict=True):
        if in_weakness(realized, weakness):
            mastery = 1.0 - math.exp(-n / recipe["mastery_scale"])
            p *= 1.0 - weakness["penalty"] * (1.0 - mastery)
    penalty = float(recipe.get("familiarity_penalty", 0.0))
    counts: dict[str, dict[str, int]] = recipe.get("familiarity_counts", {})
    shown = [
        [seen.get(value, 0) for value in factor_values(realized, feature)]
        for feature, seen in counts.items()
        if factor_values(realized, feature)
    ]
    if penalty > 0 and shown:
        scale = float(recipe["familiarity_scale"])
        familiarity = sum(1.0 - math.exp(-min(ns) / scale) for ns in shown) / len(shown)
        p *= 1.0 - penalty * (1.0 - familiarity)
    return p


def _uniform(seed: int, round: int, task_id: str, stream: str) -> float:
    key = f"{seed}|r{round}|{task_id}"
    # The default stream keeps the key of single campaigns run before streams.
    digest = hashlib.sha256((f"{key}|{stream}" if stream else key).encode())
    return random.Random(digest.digest()).random()


def held_out_results(
    training: Training, results: Sequence[EvalResult], seed: int
) -> list[EvalResult]:
    """The same episodes scored again by the same trained learner, on fresh draws.

    A second evaluation that no role of the loop reads (the Designer and the Reflector saw
    ``results``): gaps measured on it carry none of the noise the loop's allocation followed.
    ``seed`` is the campaign's, as the learner that made ``results`` was given.
    """
    stream = training.recipe.get("draw_stream", "")
    held = f"{stream}|{HELD_OUT_STREAM}" if stream else HELD_OUT_STREAM
    out = []
    for r in results:
        p = success_probability(training, r.realized)
        success = _uniform(seed, training.round, r.task_id, held) < p
        reason = None if success else f"simulated failure (p_success={p:.2f})"
        update = {"success": success, "reward": float(success), "failure_reason": reason}
        out.append(r.model_copy(update=update))
    return out


def in_weakness(realized: Mapping[str, str], weakness: Weakness | Mapping[str, Any]) -> bool:
    """Whether realized values fall in a planted weakness (any value a set feature shows)."""
    w = weakness.model_dump() if isinstance(weakness, Weakness) else weakness
    return any(value in w["values"] for value in factor_values(realized, w["feature"]))


@LEARNERS.register("simulated")
def _simulated(cfg: CampaignConfig) -> Learner:
    return SimulatedLearner(cfg.agents.learner, cfg.campaign.seed)
