"""Evaluating a round's trained learner on the diagnostic or test set, as a flow for ``gpu``."""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger

from evosyn.flows.deployment import deployment_config
from evosyn.records import EvalResult
from evosyn.tasks.loop import (
    EvaluationInfraError,
    NoTrainingError,
    Split,
    evaluate_learner,
    items_of,
)

__all__ = [
    "TEST_OVERRIDES",
    "EvaluationInfraError",
    "NoTrainingError",
    "evaluate_flow",
    "evaluate_learner",
    "items_of",
]

# The final test evaluation: three seeds per task, sampled at temperature 1.0.
TEST_OVERRIDES = ("agents.learner.trials=3", "llm.roles.learner.temperature=1.0")


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
