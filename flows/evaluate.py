"""Evaluating a round's trained learner on the diagnostic or test set, as a flow for ``gpu``."""

from __future__ import annotations

import logging
from typing import Any, Literal

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.exceptions import MissingContextError

from evosyn.agents.learner.base import DiagnosticItem
from evosyn.agents.learner.diagnostic import official_diagnostic, split_verified
from evosyn.agents.roles import roles_for
from evosyn.config import CampaignConfig
from evosyn.environments import TEST_SPLIT, get_domain
from evosyn.flows.deployment import deployment_config
from evosyn.records import EvalResult, Training, Verification
from evosyn.tasks.loop import lake_of, transient

Split = Literal["diagnostic", "test"]
# The final test evaluation: three seeds per task, sampled at temperature 1.0.
TEST_OVERRIDES = ("agents.learner.trials=3", "llm.roles.learner.temperature=1.0")


class NoTrainingError(LookupError):
    """Evaluation was asked for a round that has no successful training yet."""


class EvaluationInfraError(RuntimeError):
    """Every episode was broken by infrastructure; nothing was scored or stored."""


def items_of(
    cfg: CampaignConfig, verified: list[Verification], split: Split
) -> list[DiagnosticItem]:
    """The tasks evaluated: official diagnostic plus held-out tasks, or the official test split."""
    if split == "test":
        return [
            DiagnosticItem(task_id=f"official:{t.id}", split="test", realized={})
            for t in get_domain(cfg.campaign.domain).tasks(TEST_SPLIT)
        ]
    _, held = split_verified(verified)
    return [*official_diagnostic(cfg.campaign.domain), *held]


def _logger() -> logging.Logger | logging.LoggerAdapter[logging.Logger]:
    # The run's logger inside Prefect; the module's when the body is called directly (tests).
    try:
        return get_run_logger()
    except MissingContextError:
        return logging.getLogger(__name__)


@task(
    name="evaluate",
    task_run_name="evaluate-r{round}",
    retries=2,
    retry_delay_seconds=1,
    retry_condition_fn=transient,
    cache_policy=NO_CACHE,
)
def evaluate_learner(
    cfg: CampaignConfig, campaign_id: str, round: int, split: Split = "diagnostic"
) -> list[EvalResult]:
    """Results of the round's trained learner on ``split``; stored results are reused.

    Episodes broken by infrastructure are logged and left unscored; if every episode is, the
    task fails with ``EvaluationInfraError`` and stores nothing, so a rerun evaluates again.
    """
    lake = lake_of(cfg)
    stored = [r for r in lake.read(EvalResult, campaign_id, round) if r.split == split]
    if stored:
        return stored
    trained = [t for t in lake.read(Training, campaign_id, round) if t.status == "succeeded"]
    if not trained:
        raise NoTrainingError(f"{campaign_id} round {round} has no training: train it first")
    verified = [v for v in lake.read(Verification, campaign_id) if v.round <= round]
    items = items_of(cfg, verified, split)
    learner = roles_for(cfg).learner
    results = learner.evaluate(trained[-1], items)
    failures = list(getattr(learner, "failures", []))
    logger = _logger()
    for failure in failures:
        logger.warning("infrastructure failure, not scored: %s", failure.model_dump_json())
    if items and not results:
        raise EvaluationInfraError(
            f"{campaign_id} round {round}: all {len(failures)} episodes failed on infrastructure"
        )
    lake.write(results, batch=split)
    return results


@flow(name="evosyn-evaluate", flow_run_name="{campaign_id}-evaluate-r{round}")
def evaluate_flow(
    campaign_id: str,
    round: int,
    config_path: str | None = None,
    config: dict[str, Any] | None = None,
    overrides: list[str] | None = None,
    split: Split = "diagnostic",
) -> list[EvalResult]:
    """Evaluate the learner trained after ``round`` on the diagnostic (or final test) split."""
    extra = [*(overrides or []), *(TEST_OVERRIDES if split == "test" else ())]
    cfg = deployment_config(config_path, config, extra)
    results = evaluate_learner(cfg, campaign_id, round, split)
    success = sum(r.success for r in results) / len(results) if results else 0.0
    get_run_logger().info(
        "%s round %d: %s success %.3f on %d episodes",
        campaign_id,
        round,
        split,
        success,
        len(results),
    )
    return results
