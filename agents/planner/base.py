"""The Planner role's protocol."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from evosyn.records import Blueprint, Direction, SynthesisSpace

Feasibility = Callable[[Mapping[str, Sequence[str]]], str | None]
"""A domain's feasibility rule: the reason a combination of selections is infeasible, or None."""


class PlanningError(ValueError):
    """A direction the Planner cannot ground; the message says which constraint blocks it."""


class Planner(Protocol):
    """Grounds one direction into ``direction.budget`` blueprints."""

    def plan(self, space: SynthesisSpace, direction: Direction, seed: int) -> list[Blueprint]:
        """Blueprints obeying the direction's hard constraints and the paper's cardinalities."""
        ...
