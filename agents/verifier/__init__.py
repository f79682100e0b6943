"""The Verifier: deterministic verdicts on trajectories (``programmatic``: τ²-bench replay)."""

from evosyn.agents.verifier.base import VERIFIERS, Verifier
from evosyn.agents.verifier.nl_judge import (
    NL_JUDGES,
    LLMNLJudge,
    NLJudge,
    NLVerdict,
    nl_reward,
)
from evosyn.agents.verifier.realize_judge import (
    REALIZE_JUDGES,
    LLMRealizeJudge,
    RealizeJudge,
    RealizeVerdict,
)
from evosyn.agents.verifier.replay import ReplayReport, ReplayVerifier

__all__ = [
    "NL_JUDGES",
    "REALIZE_JUDGES",
    "VERIFIERS",
    "LLMNLJudge",
    "LLMRealizeJudge",
    "NLJudge",
    "NLVerdict",
    "RealizeJudge",
    "RealizeVerdict",
    "ReplayReport",
    "ReplayVerifier",
    "Verifier",
    "nl_reward",
]
