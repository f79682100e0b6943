"""The Generator as an LLM agent: one model call turns a blueprint into a τ²-bench task.

The prompt (``generator.j2``) carries the domain policy, the agent's tools, a seeded sample of
real records to ground the task in with what the agent's searches return on them, the
blueprint, what each requested value means (an interaction challenge as what the simulated
user is told to do), and the persona manners a task may ask for. The reply is parsed into a τ²-bench
``Task`` and checked before it is accepted: every gold action names an agent tool with its
required arguments and no unknown ones; the values the gold actions realize are the requested
ones (task family, read and write buckets, difficulty, computation, and the Planner's
expected tool calls and state change) and the domain's rule on
the family and outcome holds (a fulfilled request writes, a refusal does not), the contract the
programmatic Generators meet (:mod:`~evosyn.agents.generator.contract`); and the gold actions
replay on the task's initial state without an error and, where the domain has a policy model,
without breaking it. An invalid reply gets one repair turn naming every problem found; a reply
still invalid is a ``GeneratorRejection`` with the reason, which synthesis records as a
``generate`` rejection.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tau2.data_model.tasks import (
    Task,
)

from evosyn.agents.gateway import Gateway, LLMError
from evosyn.agents.generator.base import GENERATORS, Generator, GeneratorRejection, Screen
from evosyn.agents.generator.contract import Contract, controls
from evosyn.agents.generator.single_agent import ProposedTask
from evosyn.agents.llm_output import OutputRejected, ask_json
from evosyn.agents.prompt_context import grounding, persona_meanings, render, tool_lines
from evosyn.config import CampaignConfig
from evosyn.environments.base import Tau2Domain
from evosyn.environments.registry import get_domain
from evosyn.records import Blueprint, SynthTask

ROLE = "generator"
TEMPLATES = Path(__file__).parent


class LLMGenerator:
    """The Generator as one model call (plus a repair turn) per blueprint.

    Args:
        gateway: Gateway of role ``generator``.
        domain: Domain name or instance.
        entities: People sampled from the database into each prompt (with their records).
    """

    name = "llm"

    def __init__(
        self, gateway: Gateway, domain: str | Tau2Domain = "airline", entities: int = 3
    ) -> None:
        self.gateway = gateway
        self.gateways: list[Gateway] = [gateway]
        self.domain = get_domain(domain) if isinstance(domain, str) else domain
        self.entities = entities
        self.contract = Contract(self.domain)

    @classmethod
    def from_config(cls, cfg: CampaignConfig) -> LLMGenerator:
        """The Generator of a campaign: role ``generator`` of its ``llm`` section."""
        gateway = Gateway.from_config(cfg.llm, ROLE, seed=cfg.campaign.seed)
        return cls(gateway, cfg.campaign.domain)

    # ---------------------------------------------------------------- prompt

    def prompt(self, blueprint: Blueprint, seed: int) -> str:
        """The Generator prompt for ``blueprint`` (entities drawn from ``seed``).

        The difficulty controls are shown typed and without copies of the selections
        (:func:`~evosyn.agents.generator.contract.controls`), each defined with the factors.
        """
        shown: dict[str, object] = {
            "id": blueprint.blueprint_id,
            "selections": blueprint.selections,
            "intent": blueprint.intent,
        }
        asked = controls(blueprint)
        if asked:
            shown["difficulty_controls"] = asked
        return render(
            TEMPLATES,
            "generator.j2",
            domain=self.domain.name,
            policy=self.domain.policy(),
            tools=tool_lines(self.domain),
            blueprint=json.dumps(shown, indent=1),
            controls=bool(asked),
            factors=self.contract.definitions(blueprint),
            personas=persona_meanings(),
            **grounding(self.domain, blueprint, seed, self.entities),
        )

    # ---------------------------------------------------------------- checking

    def check(self, task: Task, blueprint: Blueprint) -> None:
        """Raise ValueError unless ``task`` is executable and honours ``blueprint``.

        The message names every problem the contract finds at once (``; ``-separated,
        :meth:`~evosyn.agents.generator.contract.Contract.problems`): gold actions that are
        not agent tools or miss arguments, every way the realized values miss the request,
        and the first gold action the database or the policy refuses.
        """
        problems = self.contract.problems(task, blueprint)
        if problems:
            raise ValueError("; ".join(problems))

    def parse(
        self, data: dict[str, Any], blueprint: Blueprint, screen: Screen | None = None
    ) -> Task:
        """The checked τ²-bench task in ``data`` for ``blueprint``; ValueError if invalid.

        A task ``screen`` stops (it repeats a kept task) is invalid: the repair turn asks
        for another.
        """
        spec = ProposedTask.model_validate(data)
        task = spec.to_task(f"{blueprint.blueprint_id}-task", self.domain.name)
        self.check(task, blueprint)
        reason = screen(task) if screen else None
        if reason is not None:
            raise ValueError(f"{reason}; propose a different task")
        return task

    # ---------------------------------------------------------------- the protocol

    def generate(self, blueprint: Blueprint, seed: int, screen: Screen | None = None) -> SynthTask:
        """A task for ``blueprint`` that ``screen`` lets through.

        Raises:
            GeneratorRejection: the output stayed invalid after the repair turn, or the model
                call failed for good.
        """
        try:
            task = ask_json(
                self.gateway,
                self.prompt(blueprint, seed),
                lambda data: self.parse(data, blueprint, screen),
                seed=seed,
            )
        except OutputRejected as exc:
            raise GeneratorRejection(f"llm generator output rejected: {exc.reason}") from None
        except LLMError as exc:
            raise GeneratorRejection(
                f"model call failed: {exc.error_class} after {exc.attempts} attempt(s)"
            ) from None
        return SynthTask(
            campaign_id=blueprint.campaign_id,
            round=blueprint.round,
            task_id=task.id,
            blueprint_id=blueprint.blueprint_id,
            domain=self.domain.name,
            task=task,
            requested={k: list(v) for k, v in blueprint.selections.items()},
            generator=self.name,
        )


@GENERATORS.register("llm", models=(ROLE,))
def _llm(cfg: CampaignConfig) -> Generator:
    return LLMGenerator.from_config(cfg)
