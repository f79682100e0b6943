"""The Verifier: deterministic verdicts on trajectories (``programmatic``: τ²-bench replay)."""

from evosyn.agents.verifier.base import VERIFIERS, Verifier
from evosyn.agents.verifier.replay import ReplayReport, ReplayVerifier

__all__ = ["VERIFIERS", "ReplayReport", "ReplayVerifier", "Verifier"]
