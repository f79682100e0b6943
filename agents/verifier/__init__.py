"""The Verifier: deterministic verdicts on trajectories (``programmatic``: τ²-bench replay)."""

from evosyn.agents.verifier.base import VERIFIERS, Verifier
from evosyn.agents.verifier.nl_judge import (
    NL_JUDGES,
    LLMNLJudge,
    NLJudge,
    NLVerdict,
    nl_reward,
)
from evosyn.agents.verifier.replay import ReplayReport, ReplayVerifier

__all__ = [
    "NL_JUDGES",
    "VERIFIERS",
    "LLMNLJudge",
    "NLJudge",
    "NLVerdict",
    "ReplayReport",
    "ReplayVerifier",
    "Verifier",
    "nl_reward",
]
