"""The rollout teacher's protocol and its registry."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from evosyn.agents.registry import Registry
from evosyn.config import CampaignConfig
from evosyn.environments.registry import domain_plugin
from evosyn.kinds import ProgrammaticTeacherSettings
from evosyn.records import Attempt, SynthTask, Trajectory

__all__ = [
    "TEACHERS",
    "UNACTED_CHALLENGE",
    "UNACTED_PERSONA",
    "Attempt",
    "ProgrammaticTeacherSettings",
    "Teacher",
    "by_side",
    "mistake_rate",
]

#: How a verdict's reason starts when the simulated user did not act out what was requested:
#: only the user side of a rollout can make that right.
UNACTED_CHALLENGE = "requested interaction_challenge not acted out"
UNACTED_PERSONA = "requested persona not acted out"


def by_side(reasons: Sequence[str]) -> tuple[list[str], list[str]]:
    """``reasons`` split into the agent's to fix and the user simulator's, each in order.

    The user side owns what it failed to act out (a requested challenge or persona); every
    other reason (the database, the policy, grounding, what the agent said) is the agent's.
    """
    user = [r for r in reasons if r.startswith((UNACTED_CHALLENGE, UNACTED_PERSONA))]
    return [r for r in reasons if r not in user], user


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


def mistake_rate(cfg: CampaignConfig) -> float:
    """The programmatic teacher's share of seeded mistakes; 0 under another teacher kind."""
    if cfg.agents.teacher.kind != "programmatic":
        return 0.0
    return cfg.agents.teacher.kind_settings(ProgrammaticTeacherSettings).mistake_rate


@TEACHERS.register("programmatic")
def _programmatic(cfg: CampaignConfig) -> Teacher:
    # The domain's own teacher, slipping at the configured rate so Repair is exercised.
    return domain_plugin(cfg.campaign.domain).teacher(mistake_rate=mistake_rate(cfg))
