"""Training the learner on a round's accumulated verified data, as a flow for the ``gpu`` pool."""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from evosyn.agents.learner.diagnostic import split_verified
from evosyn.agents.roles import roles_for
from evosyn.config import CampaignConfig
from evosyn.flows.deployment import deployment_config
from evosyn.records import Training, Verification
from evosyn.tasks.loop import lake_of, transient


class TrainingFailedError(RuntimeError):
    """The training job exited without a checkpoint; its ``trainings`` row says why."""


@task(
    name="train",
    task_run_name="train-r{round}",
    retries=2,
    retry_delay_seconds=1,
    retry_condition_fn=transient,
    cache_policy=NO_CACHE,
)
def train_learner(cfg: CampaignConfig, campaign_id: str, round: int) -> Training:
    """Train on D_<=r minus held-out tasks; a stored successful training of the round is reused.

    A failed run is recorded (exit status, log tail) and raises ``TrainingFailedError``; the
    next attempt trains again under a new id.
    """
    lake = lake_of(cfg)
    stored = lake.read(Training, campaign_id, round)
    done = [t for t in stored if t.status == "succeeded"]
    if done:
        return done[0]
    verified = [v for v in lake.read(Verification, campaign_id) if v.round <= round]
    train, _ = split_verified(verified)
    learner = roles_for(cfg).learner
    suffix = f"-retry{len(stored)}" if stored else ""
    training_id = f"{campaign_id}-r{round}-train{suffix}"
    training = learner.train(train, campaign_id, round, training_id)
    lake.write([training], batch=f"train{suffix}")
    if training.status != "succeeded":
        raise TrainingFailedError(f"{training_id}: {(training.error or '').splitlines()[0]}")
    return training


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
