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
)
from evosyn.agents.learner.simulated import SimulatedLearner

__all__ = [
    "LEARNERS",
    "DiagnosticItem",
    "EvalInputs",
    "Evaluation",
    "InfraFailure",
    "Learner",
    "SimulatedLearner",
    "Trained",
    "TrainingData",
]
