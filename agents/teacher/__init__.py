"""The rollout teacher: produces the successful trajectory of a task."""

from evosyn.agents.teacher.base import Attempt, Teacher

__all__ = ["Attempt", "Teacher"]
