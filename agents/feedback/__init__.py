"""Feedback after a round: per-value coverage and success, and probes for new factors."""

from evosyn.agents.feedback.probes import (
    PROBE_NAMES,
    compute_feedback,
    conditional_mutual_information,
    probe,
    without_learner_signal,
)

__all__ = [
    "PROBE_NAMES",
    "compute_feedback",
    "conditional_mutual_information",
    "probe",
    "without_learner_signal",
]
