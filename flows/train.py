"""Training the learner on a round's accumulated verified data, as a flow for the ``gpu`` pool."""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger

from evosyn.flows.deployment import check_round, deployment_config
from evosyn.records import Training
from evosyn.tasks.learning import TrainingFailedError, train_learner

__all__ = ["TrainingFailedError", "train_flow", "train_learner"]


@flow(name="evosyn-train", flow_run_name="{campaign_id}-train-r{round}")
def train_flow(
    campaign_id: str,
    round: int,
    config_path: str | None = None,
    config: dict[str, Any] | None = None,
    overrides: list[str] | None = None,
) -> Training:
    """Train the campaign's learner after ``round`` (config by path or inline, plus overrides)."""
    cfg = deployment_config(config_path, config, overrides)
    check_round(cfg, campaign_id, round)
    training = train_learner(cfg, campaign_id, round)
    get_run_logger().info(
        "%s round %d: %s trained on %d samples in %.0fs (checkpoint %s)",
        campaign_id,
        round,
        training.learner,
        training.n_samples,
        training.seconds,
        training.checkpoint_uri,
    )
    return training
