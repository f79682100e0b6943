"""Evaluating a round's trained learner on the diagnostic or test set, as a flow for ``gpu``."""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger

from evosyn.flows.deployment import check_round, deployment_config
from evosyn.records import EvalResult
from evosyn.report.metrics import wilson_interval
from evosyn.tasks.learning import (
    EvaluationInfraError,
    NoTrainingError,
    Split,
    evaluate_learner,
    fixed_set,
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
    check_round(cfg, campaign_id, round)
    results = evaluate_learner(cfg, campaign_id, round, split)
    # The diagnostic figure that compares across rounds is the fixed set's (official split).
    scored = fixed_set(results) if split == "diagnostic" else results
    rate = wilson_interval(sum(r.success for r in scored), len(scored))
    get_run_logger().info(
        "%s round %d: %s success %s [95%% CI %.3f, %.3f] on %d episodes%s",
        campaign_id,
        round,
        "fixed diagnostic set" if split == "diagnostic" else split,
        "n/a" if rate.value is None else f"{rate.value:.3f}",
        rate.low,
        rate.high,
        rate.n,
        f" ({len(results)} with the held-out tasks)" if split == "diagnostic" else "",
    )
    return results
