"""Feedback after a round: per-value coverage and success, and probes for new factors."""

from evosyn.agents.feedback.probes import (
    FEATURES,
    PROBE_NAMES,
    compute_feedback,
    conditional_mutual_information,
    is_labelled,
    probe,
    strata_factors,
    task_of,
    without_learner_signal,
)

__all__ = [
    "FEATURES",
    "PROBE_NAMES",
    "compute_feedback",
    "conditional_mutual_information",
    "is_labelled",
    "probe",
    "strata_factors",
    "task_of",
    "without_learner_signal",
]
