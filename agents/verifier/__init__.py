"""The Verifier: deterministic verdicts on trajectories, by name (``replay``)."""

from evosyn.agents.verifier.base import Verifier, get_verifier, register_verifier, verifier_names
from evosyn.agents.verifier.replay import ReplayReport, ReplayVerifier

__all__ = [
    "ReplayReport",
    "ReplayVerifier",
    "Verifier",
    "get_verifier",
    "register_verifier",
    "verifier_names",
]
