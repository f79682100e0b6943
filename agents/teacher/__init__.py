"""The rollout teacher: produces the successful trajectory of a task."""

from evosyn.agents.teacher.base import TEACHERS, Attempt, Teacher

__all__ = ["TEACHERS", "Attempt", "Teacher"]
