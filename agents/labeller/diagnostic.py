"""The official diagnostic tasks' values of the factors the labeller reads, for the feedback.

A synthesized task's value of an invented factor is the one its blueprint requested (the
Generator stated it and the labeller confirmed it); an official diagnostic task has no
blueprint, so after every round the labeller reads its value off the task by the factor's
definition. The official tasks are the same every round and are labelled in one fixed order,
so each round sends the same batches and the gateway's response cache answers them again.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from evosyn.agents.feedback.probes import task_of
from evosyn.agents.labeller.cases import official_tasks, task_text
from evosyn.agents.labeller.llm import LabelCase, LLMLabeller
from evosyn.agents.learner.diagnostic import is_official
from evosyn.records import EvalResult, Factor

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
        labelling = labeller.label(factor, cases)
        for task_id, value in labelling.values.items():
            labels.setdefault(task_id, {})[factor.name] = value
        missing = len(official) - len(labelling.values)
        if missing:
            reasons = "; ".join(sorted(set(labelling.unlabelled.values())))[:300]
            logger.info(
                "%s: %d of %d official diagnostic tasks unlabelled (%s)",
                factor.name,
                missing,
                len(official),
                reasons or "no stored task",
            )
    return [
        e.model_copy(update={"realized": labels[task] | e.realized})
        if (task := task_of(e.task_id)) in labels
        else e
        for e in evaluations
    ]
