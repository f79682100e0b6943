"""The Planner role's protocol."""

from __future__ import annotations

from typing import Protocol

from evosyn.agents.registry import Registry
from evosyn.environments.registry import Conflicts, Feasibility
from evosyn.records import Blueprint, Direction, SynthesisSpace

__all__ = [
    "PLANNERS",
    "Conflicts",
    "Feasibility",
    "PartialPlanningError",
    "Planner",
    "PlanningError",
]


class PlanningError(ValueError):
    """A direction the Planner cannot ground; the message says which constraint blocks it."""


class PartialPlanningError(PlanningError):
    """Some blueprints of a direction were rejected; the others are in ``blueprints``.

    Attributes:
        blueprints: The blueprints that planned, in index order.
        rejected: Blueprint id -> why the model's output for it was rejected.
    """

    def __init__(self, direction_id: str, blueprints: list[Blueprint], rejected: dict[str, str]):
        first = next(iter(rejected.items()))
        super().__init__(
            f"direction {direction_id}: {len(rejected)} of {len(blueprints) + len(rejected)} "
            f"blueprints rejected (first: {first[0]}: {first[1]})"
        )
        self.blueprints = blueprints
        self.rejected = rejected


class Planner(Protocol):
    """Grounds one direction into ``direction.budget`` blueprints."""

    def plan(self, space: SynthesisSpace, direction: Direction, seed: int) -> list[Blueprint]:
        """Blueprints obeying the direction's hard constraints and the paper's cardinalities."""
        ...


PLANNERS: Registry[Planner] = Registry("agents.planner.kind")
"""Planner implementations by name."""
