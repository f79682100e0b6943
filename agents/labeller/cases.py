"""What the labeller reads: a task as text, and the records a probe of a new factor needs.

A case is one task in plain text: the customer's reason, what they know and do not know, how
they behave, and the gold tool calls that resolve it (:func:`task_text`). The probe of a factor
the Reflector invents needs the round's diagnostic results and the verified data, each with the
task it ran on: :func:`lake_inputs` reads them from a campaign's lake, official diagnostic tasks
from the domain.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

from tau2.data_model.tasks import StructuredUserInstructions, Task

from evosyn.agents.learner.diagnostic import OFFICIAL
from evosyn.environments import DIAGNOSTIC_SPLIT, get_domain
from evosyn.records import EvalResult, SynthTask, Verification


@dataclass(frozen=True)
class ProbeInputs:
    """The records a probe of a new factor reads after one round."""

    evaluations: list[EvalResult] = field(default_factory=list)
    """The learner's results on the round's diagnostic set (trials ``TASK#trialK`` included)."""
    verified: list[Verification] = field(default_factory=list)
    """Passed verifications of the data accumulated up to the round."""
    tasks: dict[str, Task] = field(default_factory=dict)
    """Task id (as the results and verifications name it) -> the τ²-bench task."""


InputsSource = Callable[[str, int], ProbeInputs]
"""(campaign id, round) -> the records a probe of a new factor reads."""


def task_text(task: Task) -> str:
    """``task`` as the labeller reads it: the customer's side, then the gold tool calls."""
    lines = []
    instructions = task.user_scenario.instructions
    if isinstance(instructions, StructuredUserInstructions):
        lines += [
            f"Reason for the call: {instructions.reason_for_call}",
            f"The customer knows: {instructions.known_info or 'nothing stated'}",
        ]
        if instructions.unknown_info:
            lines.append(f"The customer does not know: {instructions.unknown_info}")
        if instructions.task_instructions:
            lines.append(f"How the customer behaves: {instructions.task_instructions}")
    else:
        lines.append(f"The customer: {instructions}")
    if task.user_scenario.persona:
        lines.append(f"Persona: {task.user_scenario.persona}")
    criteria = task.evaluation_criteria
    actions = (criteria.actions if criteria else None) or []
    lines.append("Gold tool calls:" if actions else "Gold tool calls: none")
    lines += [
        f"  {i}. {a.name}({json.dumps(a.arguments, sort_keys=True, ensure_ascii=False)})"
        for i, a in enumerate(actions, 1)
    ]
    told = (criteria.communicate_info if criteria else None) or []
    if told:
        lines.append(f"The agent must tell the customer: {json.dumps(told, ensure_ascii=False)}")
    return "\n".join(lines)


def official_tasks(domain: str) -> dict[str, Task]:
    """The domain's official diagnostic tasks, keyed as their evaluation results name them."""
    return {f"{OFFICIAL}{t.id}": t for t in get_domain(domain).tasks(DIAGNOSTIC_SPLIT)}


def lake_inputs(
    root: str, domain: str, s3_endpoint: str | None = None, cache_dir: str | None = None
) -> InputsSource:
    """A source reading the probe's records from the lake at ``root`` (nothing if none is)."""

    def read(campaign_id: str, round: int) -> ProbeInputs:
        # Imported here: a Reflector is built where no lake is needed until it reflects.
        from evosyn.storage import Lake
        from evosyn.storage.lake import NoLakeError

        try:
            lake = Lake(root, s3_endpoint, cache_dir, create=False)
        except NoLakeError:
            return ProbeInputs()
        evaluations = [
            e for e in lake.read(EvalResult, campaign_id, round) if e.split == "diagnostic"
        ]
        verified = [
            v for v in lake.read(Verification, campaign_id) if v.passed and v.round <= round
        ]
        tasks = {t.task_id: t.task for t in lake.read(SynthTask, campaign_id) if t.round <= round}
        return ProbeInputs(evaluations, verified, tasks | official_tasks(domain))

    return read
