"""The values of the factors the labeller reads, for the feedback, on tasks that state none.

A synthesized task's value of an invented factor is the one its blueprint requested (the
Generator stated it and the labeller confirmed it). An official diagnostic task has no
blueprint, and a task made before the factor was invented requested no value of it, so after
every round the labeller reads their values off the tasks by the factor's definition. Both
sets are the same every round and are labelled in one fixed order, so each round sends the
same batches and the gateway's response cache answers them again.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence

from evosyn.agents.feedback.probes import task_of
from evosyn.agents.labeller.cases import official_tasks, task_text
from evosyn.agents.labeller.llm import LabelCase, LLMLabeller
from evosyn.agents.learner.diagnostic import is_official
from evosyn.records import EvalResult, Factor, SynthTask

logger = logging.getLogger(__name__)


def label_official(
    factors: Sequence[Factor],
    evaluations: Sequence[EvalResult],
    labeller: LLMLabeller,
    domain: str,
) -> list[EvalResult]:
    """``evaluations`` with each official task's labelled values of ``factors`` realized.

    A task the labeller leaves without a value (or whose task the domain no longer has) keeps
    its results as they were: it counts for no value of that factor. A value a feature
    computed is never replaced by a label.
    """
    official = sorted({task_of(e.task_id) for e in evaluations if is_official(e.task_id)})
    if not factors or not official:
        return list(evaluations)
    tasks = official_tasks(domain)
    cases = [LabelCase(task_id=t, text=task_text(tasks[t])) for t in official if t in tasks]
    labels: dict[str, dict[str, str]] = {}
    for factor in factors:
        values = _read(factor, cases, labeller, "official diagnostic tasks", len(official))
        for task_id, value in values.items():
            labels.setdefault(task_id, {})[factor.name] = value
    return [
        e.model_copy(update={"realized": labels[task] | e.realized})
        if (task := task_of(e.task_id)) in labels
        else e
        for e in evaluations
    ]


def label_unstated(
    factors: Sequence[Factor],
    tasks: Sequence[SynthTask],
    counted: Collection[str],
    labeller: LLMLabeller,
) -> dict[str, dict[str, list[str]]]:
    """Each synthesized task's requested values, with labels where it requested none.

    A task made before a factor was invented, or without a value of it, has its value read by
    the labeller (only the tasks in ``counted``: the verified and diagnostic ones the feedback
    counts), so the data made earlier covers the values it realizes. A task the labeller
    leaves without a value keeps none.
    """
    requested = {t.task_id: dict(t.requested) for t in tasks}
    for factor in factors:
        unstated = sorted(
            (t for t in tasks if t.task_id in counted and not t.requested.get(factor.name)),
            key=lambda t: t.task_id,
        )
        if not unstated:
            continue
        cases = [LabelCase(task_id=t.task_id, text=task_text(t.task)) for t in unstated]
        what = "synthesized tasks made without it"
        for task_id, value in _read(factor, cases, labeller, what, len(cases)).items():
            requested[task_id][factor.name] = [value]
    return requested


def _read(
    factor: Factor, cases: Sequence[LabelCase], labeller: LLMLabeller, what: str, total: int
) -> dict[str, str]:
    """The labeller's value of ``factor`` on ``cases``; logs how many of ``total`` lack it."""
    labelling = labeller.label(factor, cases)
    missing = total - len(labelling.values)
    if missing:
        reasons = "; ".join(sorted(set(labelling.unlabelled.values())))[:300]
        logger.info(
            "%s: %d of %d %s unlabelled (%s)",
            factor.name,
            missing,
            total,
            what,
            reasons or "no stored task",
        )
    return labelling.values
