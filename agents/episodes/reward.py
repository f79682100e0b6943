"""Rewards of finished conversations: the replay verifier's verdict as one record.

Shared by the episode API (the reward that ends an episode) and the reward server (a
trajectory in, reward and reasons out). ``tau2_reward`` is τ²-bench's own reward, as
``tau2.evaluator.evaluator.evaluate_simulation`` computes it with evaluation type ALL: zero
when the conversation did not end with a stop, the product of the task's reward basis
otherwise. ``reward`` is the same figure, zeroed where an assistant write broke the domain's
policy model (:mod:`evosyn.agents.verifier.replay` says which tasks that check guards); it is
1 exactly when the verifier passes the trajectory.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field
from tau2.data_model.message import Message
from tau2.data_model.simulation import TerminationReason
from tau2.data_model.tasks import Task

from evosyn.agents.verifier.replay import ReplayVerifier
from evosyn.environments.base import Tau2Domain

#: Termination reasons τ²-bench's evaluator scores; any other ends the episode with reward 0.
SCORED = frozenset({TerminationReason.AGENT_STOP.value, TerminationReason.USER_STOP.value})


class RewardVerdict(BaseModel):
    """The reward of one conversation and why."""

    model_config = ConfigDict(extra="forbid")

    task_id: str = Field(description="The task attempted.")
    reward: float = Field(
        description="τ²-bench's reward, zeroed by a policy violation; 1 iff the verifier passes."
    )
    tau2_reward: float = Field(description="τ²-bench's reward alone (evaluation type ALL).")
    passed: bool = Field(description="The replay verifier's verdict (reward == 1).")
    termination_reason: str | None = Field(
        default=None, description="How the conversation ended (τ²-bench's reason), if given."
    )
    reasons: list[str] = Field(default_factory=list, description="Failing checks.")
    breakdown: dict[str, float] = Field(
        default_factory=dict, description="Reward per criterion of the task's basis."
    )
    policy_violations: list[str] = Field(
        default_factory=list, description="Domain policy rules assistant writes broke."
    )
    tool_issues: list[str] = Field(
        default_factory=list, description="Schema violations and erroring tool calls."
    )
    unchecked: list[str] = Field(
        default_factory=list, description="Natural-language assertions (need a judge)."
    )


class RewardScorer:
    """Scores conversations with the replay verifier; safe to share between threads.

    Args:
        domain: Domain name or instance the tasks belong to.
        policy: Which trajectories the domain's policy model checks (``"synthetic"``,
            ``"all"`` or ``"off"``, as :class:`ReplayVerifier` takes it).
    """

    def __init__(self, domain: str | Tau2Domain, policy: str = "synthetic") -> None:
        self.verifier = ReplayVerifier(domain, policy=policy)
        # The verifier's gold-state cache is an OrderedDict: one replay at a time.
        self._lock = threading.Lock()

    @property
    def domain(self) -> Tau2Domain:
        """The verifier's domain."""
        return self.verifier.domain

    def score(
        self,
        task: Task,
        messages: Sequence[Message],
        termination_reason: str | TerminationReason | None = None,
    ) -> RewardVerdict:
        """The verdict on ``messages`` as an attempt at ``task``.

        Args:
            task: The τ²-bench task attempted.
            messages: The whole conversation (with the task's message history, if any).
            termination_reason: How it ended; a reason other than an agent's or user's stop
                scores 0 without a replay, as τ²-bench's evaluator does. None: a stop.
        """
        reason = None if termination_reason is None else TerminationReason(termination_reason)
        if reason is not None and reason.value not in SCORED:
            return RewardVerdict(
                task_id=task.id,
                reward=0.0,
                tau2_reward=0.0,
                passed=False,
                termination_reason=reason.value,
                reasons=[f"terminated: {reason.value}"],
            )
        with self._lock:
            report = self.verifier.report(task, messages)
        reward = 0.0 if report.policy_violations else report.reward
        return RewardVerdict(
            task_id=task.id,
            reward=reward,
            tau2_reward=report.reward,
            passed=reward == 1.0,
            termination_reason=None if reason is None else reason.value,
            reasons=report.reasons,
            breakdown=report.breakdown,
            policy_violations=report.policy_violations,
            tool_issues=report.tool_issues,
            unchecked=report.unchecked,
        )
