"""The task agent (learner): trained on verified data, evaluated on the diagnostic set."""

from evosyn.agents.learner.base import (
    LEARNERS,
    DiagnosticItem,
    EvalInputs,
    Evaluation,
    InfraFailure,
    Learner,
    Trained,
    TrainingData,
    Weakness,
)
from evosyn.agents.learner.simulated import SimulatedLearner, SimulatedSettings

__all__ = [
    "LEARNERS",
    "DiagnosticItem",
    "EvalInputs",
    "Evaluation",
    "InfraFailure",
    "Learner",
    "SimulatedLearner",
    "SimulatedSettings",
    "Trained",
    "TrainingData",
    "Weakness",
]
