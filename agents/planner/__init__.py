"""The Planner: grounds a Designer direction into blueprints over the synthesis space."""

from evosyn.agents.planner.base import (
    PLANNERS,
    Conflicts,
    Feasibility,
    PartialPlanningError,
    Planner,
    PlanningError,
)
from evosyn.agents.planner.llm import LLMPlanner
from evosyn.agents.planner.programmatic import ProgrammaticPlanner

__all__ = [
    "PLANNERS",
    "Conflicts",
    "Feasibility",
    "LLMPlanner",
    "PartialPlanningError",
    "Planner",
    "PlanningError",
    "ProgrammaticPlanner",
]
