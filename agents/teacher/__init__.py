"""The rollout teacher: produces the successful trajectory of a task."""

from evosyn.agents.teacher.base import (
    TEACHERS,
    UNACTED_CHALLENGE,
    UNACTED_PERSONA,
    Attempt,
    Teacher,
    by_side,
)

__all__ = ["TEACHERS", "UNACTED_CHALLENGE", "UNACTED_PERSONA", "Attempt", "Teacher", "by_side"]
