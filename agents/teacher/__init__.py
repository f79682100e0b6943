"""The rollout teacher: produces the successful trajectory of a task."""

from evosyn.agents.teacher.base import Teacher

__all__ = ["Teacher"]
