"""Duplicates among synthesized tasks, within a campaign and across the campaigns of a lake.

Two tasks are duplicates when either holds:

* **exact**: the same initial-state calls, gold writes, expected answers and environment
  assertions once ids the task itself makes up are masked (a new telecom bill's id; the
  pattern is the domain's :attr:`~evosyn.environments.base.DomainKnowledge.generated_id`).
  Reads are left out when there are writes: one extra look-up does not make new training
  data; a task that only answers or hands off (a transfer's summary is free text) is keyed
  by what it looks up too (as a set). A task that writes, answers and looks up nothing has
  no such key and is compared by its instructions only;
* **near**: their user instructions are near-identical, an estimated Jaccard similarity of
  word 3-shingles (MinHash, ``datasketch``) at or above :data:`NEAR_IDENTICAL_JACCARD`.

:class:`SeenTasks` answers "does this task repeat one already kept?" for the synthesis step,
which rejects a repeat with the reason it returns, and counts repeats for the audit.
"""

from __future__ import annotations

import json
import re

from tau2.data_model.tasks import Task

from evosyn.environments import quality
from evosyn.environments.base import FunctionalSymbol
from evosyn.environments.contamination import NearDuplicates, instruction_text
from evosyn.environments.registry import get_domain

#: Estimated Jaccard similarity of instruction shingles at which two tasks are near-identical.
#: Higher than the official-task bar (0.6): our own tasks share their phrase grammar, so
#: different requests in the same words score about 0.5-0.7.
NEAR_IDENTICAL_JACCARD = 0.8


def exact_key(domain: str, task: Task) -> str | None:
    """What makes ``task`` the task it is, generated ids masked; None when nothing tells it.

    None for a task with neither writes nor answers that hands nothing off (a read-only
    inquiry with nothing to say) or hands off without a look-up: such tasks differ in what the
    user asks, which the instructions comparison covers.
    """
    env = get_domain(domain)
    criteria = task.evaluation_criteria
    actions = (criteria.actions if criteria else None) or []
    # Writes and hand-offs in gold order; ``changes`` says whether any of them is a write.
    decisive: list[tuple[str, str, dict[str, object]]] = []
    reads: list[tuple[str, str, dict[str, object]]] = []
    changes = False
    for action in actions:
        symbol = env.symbol(action.name, action.requestor)
        if symbol == FunctionalSymbol.WRITE:
            decisive.append((action.requestor, action.name, action.arguments))
            changes = True
        elif symbol == FunctionalSymbol.TRANSFER:  # the summary is free text
            decisive.append((action.requestor, action.name, {}))
        elif symbol == FunctionalSymbol.READ:
            reads.append((action.requestor, action.name, action.arguments))
    answers = quality.expected_answers(task)
    if not changes and not answers and not (decisive and reads):
        return None
    if not changes:
        # An answer ("pending") or a hand-off alone is no identity: every transfer-only task
        # would share one key. What was looked up says what the task is about.
        decisive += sorted(reads, key=lambda r: json.dumps(r, sort_keys=True, default=str))
    initial = task.initial_state.initialization_actions if task.initial_state else None
    assertions = (criteria.env_assertions if criteria else None) or []
    body = json.dumps(
        [
            [(c.env_type, c.func_name, c.arguments) for c in initial or []],
            decisive,
            answers,
            [a.model_dump(mode="json") for a in assertions],
        ],
        sort_keys=True,
        default=str,
    )
    pattern = env.knowledge.generated_id
    return re.sub(pattern, "<generated>", body) if pattern else body


class SeenTasks:
    """The tasks kept so far, indexed to name the one a new task repeats."""

    def __init__(self, domain: str) -> None:
        self.domain = domain
        self._exact: dict[str, str] = {}
        self._near = NearDuplicates(NEAR_IDENTICAL_JACCARD)
        #: Ids of the kept tasks, in the order they were kept.
        self.task_ids: list[str] = []

    def __len__(self) -> int:
        return len(self.task_ids)

    def reason(self, task: Task) -> str | None:
        """Why ``task`` repeats a kept task (one line naming it), or None when it is new."""
        key = exact_key(self.domain, task)
        if key is not None and key in self._exact:
            return (
                f"repeats task {self._exact[key]}: same initial state, writes, answers and "
                "assertions"
            )
        match = self._near.match(instruction_text(task))
        if match is not None:
            return f"instructions near-identical to task {match[0]} (Jaccard ≈ {match[1]:.2f})"
        return None

    def add(self, task: Task) -> None:
        """Keep ``task``: later ones repeating it are duplicates."""
        key = exact_key(self.domain, task)
        if key is not None:
            self._exact.setdefault(key, task.id)
        self._near.add(task.id, instruction_text(task))
        self.task_ids.append(task.id)
