"""The Designer role's protocol and its registry."""

from __future__ import annotations

from typing import Protocol

from evosyn.agents.registry import Registry
from evosyn.records import Feedback, GenerationPlan, SynthesisSpace


class Designer(Protocol):
    """Turns the synthesis state and the latest feedback into a round's generation plan."""

    def design(
        self,
        space: SynthesisSpace,
        feedback: Feedback | None,
        campaign_id: str,
        round: int,
        budget: int,
    ) -> GenerationPlan:
        """A plan whose directions' budgets sum to ``budget``."""
        ...


DESIGNERS: Registry[Designer] = Registry("agents.designer.kind")
"""Designer implementations by name."""
