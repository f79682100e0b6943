"""Evaluating a round's trained learner on the diagnostic set, as a flow for the ``gpu`` pool."""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from evosyn.agents.learner.diagnostic import official_diagnostic, split_verified
from evosyn.agents.roles import roles_for
from evosyn.config import CampaignConfig
from evosyn.flows.deployment import deployment_config
from evosyn.records import EvalResult, Training, Verification
from evosyn.tasks.loop import lake_of, transient


class NoTrainingError(LookupError):
    """Evaluation was asked for a round that has no training yet."""


@task(
    name="evaluate",
    task_run_name="evaluate-r{round}",
    retries=2,
    retry_delay_seconds=1,
    retry_condition_fn=transient,
    cache_policy=NO_CACHE,
)
def evaluate_learner(cfg: CampaignConfig, campaign_id: str, round: int) -> list[EvalResult]:
    """Results of the round's trained learner on the official and held-out diagnostic tasks."""
    lake = lake_of(cfg)
    stored = lake.read(EvalResult, campaign_id, round)
    if stored:
        return stored
    trained = lake.read(Training, campaign_id, round)
    if not trained:
        raise NoTrainingError(f"{campaign_id} round {round} has no training: train it first")
    verified = [v for v in lake.read(Verification, campaign_id) if v.round <= round]
    _, held = split_verified(verified)
    items = [*official_diagnostic(cfg.campaign.domain), *held]
    results = roles_for(cfg).learner.evaluate(trained[0], items)
    lake.write(results, batch="diagnostic")
    return results


@flow(name="evosyn-evaluate", flow_run_name="{campaign_id}-evaluate-r{round}")
def evaluate_flow(
    campaign_id: str,
    round: int,
    config_path: str | None = None,
    config: dict[str, Any] | None = None,
    overrides: list[str] | None = None,
) -> list[EvalResult]:
    """Evaluate the learner trained after ``round`` (config by path or inline, plus overrides)."""
    cfg = deployment_config(config_path, config, overrides)
    results = evaluate_learner(cfg, campaign_id, round)
    success = sum(r.success for r in results) / len(results) if results else 0.0
    get_run_logger().info(
        "%s round %d: diagnostic success %.3f on %d tasks",
        campaign_id,
        round,
        success,
        len(results),
    )
    return results
