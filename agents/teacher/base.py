"""The rollout teacher's protocol."""

from __future__ import annotations

from typing import Protocol

from evosyn.records import SynthTask, Trajectory


class Teacher(Protocol):
    """Rolls out a task into a trajectory in τ²-bench's message format."""

    def rollout(self, task: SynthTask, seed: int, attempt: int = 0) -> Trajectory:
        """The trajectory: system policy, user turns, tool calls with real observations, replies."""
        ...
