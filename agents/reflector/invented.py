"""The probe of a factor the Reflector invented: label every task, then test it like any other.

A factor no programmatic feature computes has no realized values until someone reads them off
the tasks. Before such a factor enters the space, the labeller labels the round's diagnostic
tasks and the verified data by its definition; the labels are added to the records' realized
values, and the feedback's own probe (:func:`~evosyn.agents.feedback.probes.probe`: the CMI
with failure given the current factors and its permutation p, the coverage per value) runs on
them unchanged. The factor is kept only when :func:`~evosyn.agents.reflector.evidence.verdict`
finds failure-driven or coverage-gap evidence in that probe, and dropped otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

from evosyn.agents.feedback.probes import probe, strata_factors, task_of
from evosyn.agents.labeller import LabelCase, LLMLabeller, ProbeInputs, task_text
from evosyn.agents.reflector.evidence import verdict
from evosyn.records import Factor, FactorOrigin, Probe, SynthesisSpace

FAILED_SHOWN = 6
"""Failed diagnostic tasks the inventing Reflector reads (the most-failed first)."""
PASSED_SHOWN = 5
"""Passed ones beside them, for contrast (a live Reflector found three too few to tell)."""


@dataclass(frozen=True)
class Case:
    """A diagnostic task as the inventing Reflector reads it, with the learner's outcome."""

    passed: int
    """Trials the learner passed."""
    trials: int
    """Trials it ran."""
    text: str
    """The task as the labeller reads it (:func:`~evosyn.agents.labeller.task_text`)."""


def failure_cases(
    inputs: ProbeInputs, failed: int = FAILED_SHOWN, passed: int = PASSED_SHOWN
) -> list[Case]:
    """The round's most-failed diagnostic tasks, then some the learner always passed.

    A factor no probe measures can only be seen in the tasks themselves: what the failing ones
    share and the passing ones lack. Ties go by task id, so the same round shows the same cases.
    """
    outcomes: dict[str, list[bool]] = {}
    for e in inputs.evaluations:
        outcomes.setdefault(task_of(e.task_id), []).append(e.success)
    stored = sorted((sum(o) / len(o), t) for t, o in outcomes.items() if t in inputs.tasks)
    worst = [t for rate, t in stored if rate < 1][:failed]
    best = [t for rate, t in stored if rate == 1][:passed]
    return [
        Case(sum(outcomes[t]), len(outcomes[t]), task_text(inputs.tasks[t]))
        for t in [*worst, *best]
    ]


@dataclass(frozen=True)
class Trial:
    """The outcome of probing a proposed factor."""

    origin: FactorOrigin | None
    """The kind of evidence found; None: the factor is dropped."""
    evidence: str
    """The labelling counts and the probe's figures, in words."""
    probe: Probe | None = None
    """The probe of the labelled values; None where no diagnostic task has a value."""


def try_factor(
    factor: Factor,
    space: SynthesisSpace,
    inputs: ProbeInputs,
    labeller: LLMLabeller,
    round: int,
    seed: int = 0,
) -> Trial:
    """Label ``factor`` on ``inputs``' tasks and probe it against the learner's failures.

    ``space`` is the space the round ran in: the probe is conditioned on its factors.
    """
    diagnostic = sorted({task_of(e.task_id) for e in inputs.evaluations})
    verified = sorted({v.task_id for v in inputs.verified})
    wanted = list(dict.fromkeys([*diagnostic, *verified]))
    cases = [
        LabelCase(task_id=t, text=task_text(inputs.tasks[t])) for t in wanted if t in inputs.tasks
    ]
    labelling = labeller.label(factor, cases)
    labels = labelling.values
    counts = (
        f"labelled {sum(t in labels for t in diagnostic)}/{len(diagnostic)} diagnostic and "
        f"{sum(t in labels for t in verified)}/{len(verified)} verified tasks"
    )
    missing = [t for t in wanted if t not in inputs.tasks]
    reasons = sorted(set(labelling.unlabelled.values()))
    if missing:
        reasons.append(f"{len(missing)} without a stored task")
    if reasons:
        counts += f" (unlabelled: {'; '.join(reasons)[:300]})"
    evaluations = [
        e.model_copy(update={"realized": e.realized | {factor.name: labels[task_of(e.task_id)]}})
        for e in inputs.evaluations
        if task_of(e.task_id) in labels
    ]
    if not evaluations:
        return Trial(None, f"{counts}: no diagnostic task has a value, so nothing is measured")
    records = [
        v.model_copy(update={"realized": v.realized | {factor.name: labels[v.task_id]}})
        for v in inputs.verified
        if v.task_id in labels
    ]
    measured = probe(
        factor.name,
        evaluations,
        records,
        strata_factors(space, evaluations),
        space.campaign_id,
        round,
        seed,
    )
    assert measured is not None  # every result passed to it carries the factor
    origin, figures = verdict(measured)
    return Trial(origin, f"{counts}; {figures}", measured)
