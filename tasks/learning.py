"""Prefect tasks of a round's learner side: train the learner, evaluate it, compute the feedback.

Beside them, what reads their stored results: the round's training, the items evaluated, the
fixed diagnostic set, the planted slice and the episodes the user simulator broke.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from evosyn.agents.feedback import compute_feedback, is_labelled, task_of
from evosyn.agents.gateway.errors import BudgetExceeded
from evosyn.agents.gateway.gateway import calls_batch
from evosyn.agents.labeller import LLMLabeller, label_official, label_unstated
from evosyn.agents.learner.base import USER_SIMULATOR_KINDS, DiagnosticItem, InfraFailure
from evosyn.agents.learner.diagnostic import (
    is_official,
    official_diagnostic,
    official_test,
    split_verified,
)
from evosyn.config import CampaignConfig
from evosyn.records import (
    EvalResult,
    Feedback,
    Probe,
    SynthesisSpace,
    SynthTask,
    Training,
    UnscoredEpisode,
    ValueFeedback,
    Verification,
)
from evosyn.tasks import learner_lake
from evosyn.tasks.lake_step import Calls, Ran, Rows, lake_step
from evosyn.tasks.loop import lake_of, report_stage, role_task, roles_for, run_logger

Split = Literal["diagnostic", "test"]


class TrainingFailedError(RuntimeError):
    """The training job exited without a checkpoint; its ``trainings`` row says why."""


class NoTrainingError(LookupError):
    """Evaluation was asked for a round that has no successful training yet."""


class EvaluationInfraError(RuntimeError):
    """Every episode was broken by infrastructure; nothing was scored or stored."""


@role_task("train", "train-r{round}")
def train_learner(cfg: CampaignConfig, campaign_id: str, round: int) -> Training:
    """Train on D_<=r minus held-out tasks; a stored successful training of the round is reused.

    A failed run is recorded (exit status, log tail) and raises ``TrainingFailedError``; the
    next attempt trains again under a new id.
    """
    training = _train(cfg, campaign_id, round)
    report_stage("train", round)
    return training


def stored_training(cfg: CampaignConfig, campaign_id: str, round: int) -> Training | None:
    """The round's stored training that ``cfg``'s learner would train now (the latest), or None."""
    learner = roles_for(cfg).learner
    done = [t for t in lake_of(cfg).read(Training, campaign_id, round) if learner.answers(t)]
    return done[-1] if done else None


def _train(cfg: CampaignConfig, campaign_id: str, round: int) -> Training:
    lake = lake_of(cfg)

    def run() -> Ran[Training]:
        tried = lake.read(Training, campaign_id, round)
        # A failed try stays on record; the next one gets its own id and batch.
        suffix = f"-retry{len(tried)}" if tried else ""
        training_id = f"{campaign_id}-r{round}-train{suffix}"
        learner = roles_for(cfg).learner
        prefix = cfg.agents.learner.checkpoint_prefix
        training = learner_lake.train(lake, learner, campaign_id, round, training_id, prefix)
        return Ran(training, marker=[([training], f"train{suffix}")])

    training = lake_step(lake, lambda: stored_training(cfg, campaign_id, round), run, None)
    if training.status != "succeeded":
        error = (training.error or "").splitlines()[0]
        raise TrainingFailedError(f"{training.training_id}: {error}")
    return training


def items_of(
    cfg: CampaignConfig, verified: list[Verification], split: Split
) -> list[DiagnosticItem]:
    """The tasks evaluated: official diagnostic plus held-out tasks, or the official test split."""
    if split == "test":
        return list(official_test(cfg.campaign.domain))
    _, held = split_verified(verified)
    return [*official_diagnostic(cfg.campaign.domain), *held]


def success_of(results: Sequence[EvalResult]) -> tuple[float | None, int]:
    """Share of successful episodes and their number; (None, 0) without any."""
    n = len(results)
    return (sum(r.success for r in results) / n if n else None), n


def fixed_set(results: Sequence[EvalResult]) -> list[EvalResult]:
    """The results on the fixed diagnostic set: the official diagnostic split's episodes.

    The held-out synthesized tasks grow with every round's data, so success on the whole
    diagnostic set mixes learner progress with a changing test; this subset does not change.
    """
    return [r for r in results if r.split == "diagnostic" and is_official(r.task_id)]


def planted_slice(cfg: CampaignConfig, results: Sequence[EvalResult]) -> list[EvalResult]:
    """The fixed set's results in a weakness planted in the learner (none in a real one)."""
    planted = roles_for(cfg).learner.planted
    return [
        r for r in fixed_set(results) if any(r.realized.get(w.feature) in w.values for w in planted)
    ]


@role_task("evaluate", "evaluate-r{round}")
def evaluate_learner(
    cfg: CampaignConfig, campaign_id: str, round: int, split: Split = "diagnostic"
) -> list[EvalResult]:
    """Results of the round's trained learner on ``split``; stored results are reused.

    Episodes broken by infrastructure or by the user simulator are left unscored: logged, and
    stored as ``unscored_episodes`` rows with the results. If every episode is, the task fails
    with ``EvaluationInfraError`` and stores no results, so a rerun evaluates again.
    """
    results = _evaluate(cfg, campaign_id, round, split)
    report_stage("evaluate", round)
    return results


def _evaluate(cfg: CampaignConfig, campaign_id: str, round: int, split: Split) -> list[EvalResult]:
    lake = lake_of(cfg)
    training = stored_training(cfg, campaign_id, round)
    if training is None:
        raise NoTrainingError(
            f"{campaign_id} round {round} has no {cfg.agents.learner.kind} training: train it first"
        )
    learner = roles_for(cfg).learner

    def stored() -> list[EvalResult] | None:
        found = [
            r
            for r in lake.read(EvalResult, campaign_id, round)
            if r.split == split and r.training_id == training.training_id
        ]
        return found or None

    failures: list[InfraFailure] = []

    def run() -> Ran[list[EvalResult]]:
        # Read once: the items and the learner's examples both come from it.
        verifications = lake.read(Verification, campaign_id)
        verified = [v for v in verifications if v.round <= round]
        items = items_of(cfg, verified, split)
        domain = cfg.campaign.domain
        try:
            evaluation = learner_lake.evaluate(
                lake, learner, training, items, domain, verifications
            )
        except BudgetExceeded as stop:
            # Stopped at a spend cap: the attempts it paid for are stored, the results not.
            if stop.calls:
                lake.write(stop.calls, batch=calls_batch(f"evaluate-{split}", stop.calls))
            raise
        failures.extend(evaluation.failures)
        # The learner's and the user simulator's calls cost as much as synthesis's: every
        # attempt lands in llm_calls, an evaluation broken by infrastructure included.
        calls = evaluation.calls
        key = calls_batch(f"evaluate-{split}", calls) if calls else ""
        # Before the results (the step's marker): stored results come with their unscored rows.
        splits = {item.task_id: item.split for item in items}
        trials = cfg.agents.learner.trials
        unscored = [f.row(training, splits[f.task_id], trials) for f in evaluation.failures]
        rows: list[Rows] = [(calls, key), (unscored, f"unscored-{split}")]
        return Ran(evaluation.results, marker=[(evaluation.results, split)], rows=rows)

    results = lake_step(lake, stored, run, None)
    logger = run_logger()
    for failure in failures:
        logger.warning("infrastructure failure, not scored: %s", failure.model_dump_json())
    if not results:
        raise EvaluationInfraError(
            f"{campaign_id} round {round}: all {len(failures)} episodes failed on infrastructure"
        )
    return results


def user_faults_of(
    cfg: CampaignConfig, campaign_id: str, round: int, evaluations: Sequence[EvalResult]
) -> int:
    """Diagnostic episodes of ``evaluations``' training that the user simulator broke.

    Read from the lake, where the evaluation stored them, so a round whose evaluation ran on
    another pool, or was stored before a resume, counts them too.
    """
    trainings = {r.training_id for r in evaluations}
    return sum(
        u.split == "diagnostic" and u.training_id in trainings and u.kind in USER_SIMULATOR_KINDS
        for u in lake_of(cfg).read(UnscoredEpisode, campaign_id, round)
    )


@role_task("feedback", "feedback-r{round}")
def feedback_of(
    cfg: CampaignConfig,
    space: SynthesisSpace,
    evaluations: list[EvalResult],
    previous: Feedback | None,
    round: int,
) -> Feedback:
    """Per-value coverage and success, and probes, after ``round``."""
    fb = _feedback(cfg, space, evaluations, previous, round)
    report_stage("feedback", round)
    return fb


def _feedback(
    cfg: CampaignConfig,
    space: SynthesisSpace,
    evaluations: list[EvalResult],
    previous: Feedback | None,
    round: int,
) -> Feedback:
    lake = lake_of(cfg)
    cid = space.campaign_id

    def stored() -> Feedback | None:
        values = lake.read(ValueFeedback, cid, round)
        if not values:
            return None
        return Feedback(
            campaign_id=cid, round=round, values=values, probes=lake.read(Probe, cid, round)
        )

    # A factor the Reflector invented has no computed value on the official diagnostic tasks:
    # the labeller reads it (held-out synthesized tasks carry the value they were made with).
    labelled = [f for f in space.active_factors if is_labelled(f)]
    labeller = LLMLabeller.from_config(cfg) if labelled else None
    if labeller is not None:
        # Cached for the campaign, as every role's answers: the same official tasks labelled
        # again next round are answered without a model call.
        labeller.gateway.bind_campaign(cid, cfg.lake.root)

    def run() -> Ran[Feedback]:
        verified = [v for v in lake.read(Verification, cid) if v.round <= round]
        made = [t for t in lake.read(SynthTask, cid) if t.round <= round]
        requested = {t.task_id: t.requested for t in made}
        scored = evaluations
        if labeller is not None:
            scored = label_official(labelled, evaluations, labeller, cfg.campaign.domain)
            # Data made before the factor was invented covers the values the labeller reads.
            counted = {v.task_id for v in verified if v.passed}
            counted |= {task_of(e.task_id) for e in evaluations}
            requested = label_unstated(labelled, made, counted, labeller)
        elif labelled:
            run_logger().warning(
                "no labeller is configured: the official diagnostic tasks have no value of %s",
                ", ".join(f.name for f in labelled),
            )
        fb = compute_feedback(
            space, scored, verified, requested, cid, round, previous, seed=cfg.campaign.seed
        )
        return Ran(fb, marker=[(fb.values, "values")], rows=[(fb.probes, "probes")])

    calls = Calls(labeller.gateways, cid, round, "feedback") if labeller is not None else None
    return lake_step(lake, stored, run, calls)
