"""τ²-bench's stock evaluation, for cross-checking the replay verifier (slow).

This is ``tau2.evaluator.evaluator.evaluate_simulation`` with evaluation type ALL for a bare
trajectory, without importing τ²-bench's registry (which pulls in the LLM stack): the same
three evaluators, the same environment constructors, the same way of combining rewards.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tau2.data_model.message import Message
from tau2.data_model.tasks import RewardType, Task
from tau2.environment.environment import Environment
from tau2.evaluator.evaluator_action import ActionEvaluator
from tau2.evaluator.evaluator_communicate import CommunicateEvaluator
from tau2.evaluator.evaluator_env import EnvironmentEvaluator

from evosyn.environments.registry import domain_plugin


def stock_constructor(domain: str) -> Callable[..., Environment]:
    """The environment constructor τ²-bench's registry holds for ``domain``."""
    return domain_plugin(domain).stock_environment


def stock_reward(domain: str, task: Task, messages: Sequence[Message]) -> float | None:
    """τ²-bench's reward for ``messages`` on ``task``; None where its evaluator raises.

    NL assertions are left out, as in the replay verifier.
    """
    criteria = task.evaluation_criteria
    if criteria is None:
        return 1.0
    trajectory = list(messages)
    try:
        env = EnvironmentEvaluator.calculate_reward(
            environment_constructor=stock_constructor(domain),
            task=task,
            full_trajectory=trajectory,
        )
    except Exception:
        return None
    action = ActionEvaluator.calculate_reward(task=task, full_trajectory=trajectory)
    communicate = CommunicateEvaluator.calculate_reward(task=task, full_trajectory=trajectory)
    basis = set(criteria.reward_basis)
    reward = 1.0
    if basis & {RewardType.DB, RewardType.ENV_ASSERTION}:
        reward *= env.reward
    if RewardType.ACTION in basis:
        reward *= action.reward
    if RewardType.COMMUNICATE in basis:
        reward *= communicate.reward
    return reward
