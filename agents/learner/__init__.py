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
from evosyn.config import CampaignConfig

# The real learners are imported when built: they pull in τ²-bench's orchestrator and litellm.


@LEARNERS.register("icl")
def _icl(cfg: CampaignConfig) -> Learner:
    from evosyn.agents.learner.icl import ICLLearner

    return ICLLearner(cfg)


@LEARNERS.register("sft")
def _sft(cfg: CampaignConfig) -> Learner:
    from evosyn.agents.learner.sft import SFTLearner

    return SFTLearner(cfg)


@LEARNERS.register("rl")
def _rl(cfg: CampaignConfig) -> Learner:
    from evosyn.agents.learner.rl import RLLearner

    return RLLearner(cfg)


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
