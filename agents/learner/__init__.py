"""The task agent (learner): trained on verified data, evaluated on the diagnostic set."""

from evosyn.agents.learner.base import (
    LEARNERS,
    DiagnosticItem,
    Evaluation,
    InfraFailure,
    Learner,
)
from evosyn.agents.learner.simulated import SimulatedLearner

__all__ = [
    "LEARNERS",
    "DiagnosticItem",
    "Evaluation",
    "InfraFailure",
    "Learner",
    "SimulatedLearner",
]
