"""The Labeller as an LLM role: reads each task's value of a factor no feature computes.

A factor the Reflector invents comes with a definition and values, but no programmatic feature
reads it off a trajectory. The labeller is shown the definition and a batch of tasks as text
(:func:`~evosyn.agents.labeller.cases.task_text`) and answers one value (or null, where the
definition does not apply) per task. A reply that misses a task, names one twice or gives a
value outside the list gets one repair turn; a batch still invalid, or whose call failed, leaves
its tasks unlabelled with the reason, and they count as such rather than as any value.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evosyn.agents.gateway import Gateway, LLMError, resolve_settings
from evosyn.agents.llm_output import OutputRejected, ask_json
from evosyn.agents.prompt_context import render
from evosyn.config import CampaignConfig
from evosyn.records import Factor

ROLE = "labeller"
TEMPLATES = Path(__file__).parent
# Tasks per call: enough to keep a diagnostic set to a few calls, few enough to read closely.
BATCH = 8


class LabelCase(BaseModel):
    """One task to label: its id and its text."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task_id: str = Field(description="Task the label is for.")
    text: str = Field(min_length=1, description="The task as the labeller reads it.")


class LabelOutput(BaseModel):
    """One label as the model writes it."""

    model_config = ConfigDict(extra="forbid")

    task: str = Field(description="The task's key in the prompt.")
    value: str | None = Field(description="Its value of the factor, or null.")


class LabelsOutput(BaseModel):
    """The labeller's whole reply."""

    model_config = ConfigDict(extra="forbid")

    labels: list[LabelOutput]


@dataclass
class Labelling:
    """What one labelling of a factor gave: values by task, and the tasks left without one."""

    values: dict[str, str] = field(default_factory=dict)
    """Task id -> its value of the factor."""
    unlabelled: dict[str, str] = field(default_factory=dict)
    """Task id -> why it has no value (null answer, rejected reply, failed call)."""


def case_key(index: int) -> str:
    """The key a batch's ``index``-th task has in the prompt (ids stay out of it)."""
    return f"task {index + 1}"


def parse_labels(
    data: dict[str, Any], factor: Factor, keys: Sequence[str]
) -> dict[str, str | None]:
    """Key -> value in ``data`` for exactly the tasks ``keys``; ValueError naming a fault."""
    output = LabelsOutput.model_validate(data)
    found: dict[str, str | None] = {}
    for label in output.labels:
        if label.task not in keys:
            raise ValueError(f"{label.task!r} is not one of the tasks: {list(keys)}")
        if label.task in found:
            raise ValueError(f"{label.task!r} is labelled twice")
        value = label.value.strip() if isinstance(label.value, str) else None
        if value is not None and value not in factor.values:
            raise ValueError(
                f"{label.task}: {label.value!r} is not a value of {factor.name}: {factor.values}"
            )
        found[label.task] = value
    missing = [k for k in keys if k not in found]
    if missing:
        raise ValueError(f"no label for {', '.join(missing)}: label every task")
    return found


class LLMLabeller:
    """The labeller as one model call per batch of tasks.

    Args:
        gateway: Gateway of role ``labeller``.
        domain: Domain name (shown in the prompt).
        batch: Tasks per call.
    """

    name = "llm"

    def __init__(self, gateway: Gateway, domain: str = "airline", batch: int = BATCH) -> None:
        self.gateway = gateway
        self.gateways: list[Gateway] = [gateway]
        self.domain = domain
        self.batch = batch

    @classmethod
    def from_config(cls, cfg: CampaignConfig) -> LLMLabeller | None:
        """The labeller of a campaign, or None where no model is configured for it.

        Its model is ``llm.roles.labeller`` where set, else the Reflector's, else
        ``llm.default``'s.
        """
        sources = [ROLE] if ROLE in cfg.llm.roles else ["reflector", ROLE]
        for source in sources:
            try:
                settings = resolve_settings(cfg.llm, source)
            except ValueError:
                continue
            return cls(Gateway(ROLE, settings, seed=cfg.campaign.seed), cfg.campaign.domain)
        return None

    def prompt(self, factor: Factor, cases: Sequence[LabelCase]) -> str:
        """The labelling prompt of one batch."""
        shown = [{"key": case_key(i), "text": c.text} for i, c in enumerate(cases)]
        return render(TEMPLATES, "labeller.j2", domain=self.domain, factor=factor, cases=shown)

    def label(self, factor: Factor, cases: Sequence[LabelCase]) -> Labelling:
        """Every case's value of ``factor``, batch by batch, concurrently."""
        batches = [list(cases[i : i + self.batch]) for i in range(0, len(cases), self.batch)]
        out = Labelling()
        if not batches:
            return out
        workers = max(1, min(len(batches), self.gateway.settings.concurrency))
        with ThreadPoolExecutor(workers, thread_name_prefix="labeller") as pool:
            results = list(pool.map(lambda b: self._one(factor, b), batches))
        for batch, result in zip(batches, results, strict=True):
            if isinstance(result, str):
                out.unlabelled.update({c.task_id: result for c in batch})
                continue
            for i, case in enumerate(batch):
                value = result[case_key(i)]
                if value is None:
                    out.unlabelled[case.task_id] = (
                        "the labeller found the definition does not apply"
                    )
                else:
                    out.values[case.task_id] = value
        return out

    def _one(self, factor: Factor, batch: Sequence[LabelCase]) -> dict[str, str | None] | str:
        """The batch's values by key, or why there are none."""
        keys = [case_key(i) for i in range(len(batch))]
        try:
            return ask_json(
                self.gateway,
                self.prompt(factor, batch),
                lambda data: parse_labels(data, factor, keys),
                seed=0,
            )
        except OutputRejected as exc:
            return f"labeller output rejected: {exc.reason}"
        except LLMError as exc:
            return f"model call failed: {exc.error_class} after {exc.attempts} attempt(s)"
