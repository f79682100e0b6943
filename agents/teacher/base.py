"""The rollout teacher's protocol and its registry."""

from __future__ import annotations

from typing import Protocol

from evosyn.agents.registry import Registry
from evosyn.config import CampaignConfig
from evosyn.environments.registry import domain_plugin
from evosyn.records import Attempt, SynthTask, Trajectory

__all__ = ["TEACHERS", "Attempt", "Teacher"]


class Teacher(Protocol):
    """Rolls out a task into a trajectory in τ²-bench's message format."""

    def rollout(
        self, task: SynthTask, seed: int, attempt: int = 0, previous: Attempt | None = None
    ) -> Trajectory:
        """The trajectory: system policy, user turns, tool calls with real observations, replies.

        ``attempt`` k >= 1 is the k-th Repair; ``previous`` is the failed attempt before it.
        """
        ...


TEACHERS: Registry[Teacher] = Registry("agents.teacher.kind")
"""Teacher implementations by name."""


@TEACHERS.register("programmatic")
def _programmatic(cfg: CampaignConfig) -> Teacher:
    # The domain's own teacher, slipping at the configured rate so Repair is exercised.
    return domain_plugin(cfg.campaign.domain).teacher(mistake_rate=cfg.agents.teacher.mistake_rate)


@TEACHERS.register("llm", models=("teacher", "user_simulator"))
def _llm(cfg: CampaignConfig) -> Teacher:
    # Imported here: it pulls in τ²-bench's orchestrator and litellm, seconds of start-up
    # that a programmatic campaign does not need.
    from evosyn.agents.teacher.llm import LLMTeacher

    return LLMTeacher.from_config(cfg)
