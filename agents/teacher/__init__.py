"""The rollout teacher: produces the successful trajectory of a task."""

from evosyn.agents.teacher.base import (
    TEACHERS,
    UNACTED_CHALLENGE,
    UNACTED_PERSONA,
    Attempt,
    Teacher,
    by_side,
)
from evosyn.config import CampaignConfig


# Registered in the package, not beside the protocol: the LLM teacher's module imports base.
@TEACHERS.register("llm")
def _llm(cfg: CampaignConfig) -> Teacher:
    # Imported here: it pulls in τ²-bench's orchestrator and litellm, seconds of start-up
    # that a programmatic campaign does not need.
    from evosyn.agents.teacher.llm import LLMTeacher

    return LLMTeacher.from_config(cfg)


__all__ = ["TEACHERS", "UNACTED_CHALLENGE", "UNACTED_PERSONA", "Attempt", "Teacher", "by_side"]
