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
programmatic Generators meet (:mod:`~evosyn.agents.generator.contract`); the customer lacks an
id (``unknown_info`` names one) only where ``missing_information`` is requested; and the gold
actions replay on the task's initial state without an error and, where the domain has a policy
model, without breaking it. A factor the Reflector invented is defined in the prompt by its
definition (read from the blueprint's space); the reply states the task's value of it
(``factor_values``), which must be the requested one, and the labeller, reading the task by the
definition alone, must agree. An invalid reply gets one repair turn naming every problem found;
a reply still invalid is a ``GeneratorRejection`` with the reason, which synthesis records as a
``generate`` rejection.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tau2.data_model.tasks import Task

from evosyn.agents.gateway import Gateway, LLMError
from evosyn.agents.generator.base import GENERATORS, Generator, GeneratorRejection, Screen
from evosyn.agents.generator.contract import (
    Contract,
    controls,
    definitions,
    lacks_id,
    unknown_info_problem,
)
from evosyn.agents.generator.single_agent import ProposedTask
from evosyn.agents.labeller import LLMLabeller
from evosyn.agents.labeller.stated import (
    SpaceSource,
    check_stated,
    defined,
    invented_in,
    lake_spaces,
)
from evosyn.agents.llm_output import OutputRejected, ask_json
from evosyn.agents.prompt_context import grounding, persona_meanings, render, tool_lines
from evosyn.config import CampaignConfig
from evosyn.environments.base import Tau2Domain
from evosyn.environments.kit.grounding import REALIZABLE
from evosyn.environments.registry import get_domain
from evosyn.records import Blueprint, Factor, SynthTask

ROLE = "generator"
TEMPLATES = Path(__file__).parent
UNREALIZABLE = "unrealizable"
"""The reply's one key when no record shown can realize the blueprint; it holds why."""


class _Unrealizable(Exception):
    """The model's answer that the records shown cannot realize the blueprint (no repair)."""


class LLMGenerator:
    """The Generator as one model call (plus a repair turn) per blueprint.

    Args:
        gateway: Gateway of role ``generator``.
        domain: Domain name or instance.
        entities: People sampled from the database into each prompt (with their records).
        spaces: Finds a blueprint's space, for the definitions of factors the Reflector
            invented; None: such factors are named without one, and never labelled.
        labeller: Checks the value of an invented factor a task states; None: unchecked.
    """

    name = "llm"

    def __init__(
        self,
        gateway: Gateway,
        domain: str | Tau2Domain = "airline",
        entities: int = 3,
        *,
        spaces: SpaceSource | None = None,
        labeller: LLMLabeller | None = None,
    ) -> None:
        self.gateway = gateway
        self.domain = get_domain(domain) if isinstance(domain, str) else domain
        self.entities = entities
        self.contract = Contract(self.domain)
        self.spaces = spaces
        self.labeller = labeller
        self.gateways: list[Gateway] = [gateway, *(labeller.gateways if labeller else [])]

    @classmethod
    def from_config(cls, cfg: CampaignConfig) -> LLMGenerator:
        """The Generator of a campaign: role ``generator`` of its ``llm`` section.

        It finds invented factors' definitions in the campaign lake's spaces, and the
        campaign's labeller checks the values it states.
        """
        gateway = Gateway.from_config(cfg.llm, ROLE, seed=cfg.campaign.seed)
        spaces = lake_spaces(cfg.lake.root, cfg.lake.s3_endpoint, cfg.lake.cache_dir)
        return cls(
            gateway, cfg.campaign.domain, spaces=spaces, labeller=LLMLabeller.from_config(cfg)
        )

    def invented(self, blueprint: Blueprint) -> dict[str, Factor]:
        """The labelled factors (invented by the Reflector) ``blueprint`` selects, by name."""
        return invented_in(blueprint, {*self.contract.factors, *REALIZABLE}, self.spaces)

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
        invented = self.invented(blueprint)
        return render(
            TEMPLATES,
            "generator.j2",
            domain=self.domain.name,
            policy=self.domain.policy(),
            tools=tool_lines(self.domain),
            blueprint=json.dumps(shown, indent=1),
            controls=bool(asked),
            factors=self._definitions(blueprint, invented),
            invented=sorted(invented),
            lacks_id=lacks_id(blueprint),
            personas=persona_meanings(),
            **grounding(self.domain, blueprint, seed, self.entities),
        )

    def _definitions(self, blueprint: Blueprint, invented: Mapping[str, Factor]) -> list[str]:
        return definitions(self.domain, blueprint, {**self.contract.factors, **defined(invented)})

    # ---------------------------------------------------------------- checking

    def check(self, task: Task, blueprint: Blueprint) -> None:
        """Raise ValueError unless ``task`` is executable and honours ``blueprint``.

        The message names every problem the contract finds at once (``; ``-separated,
        :meth:`~evosyn.agents.generator.contract.Contract.problems`): gold actions that are
        not agent tools or miss arguments, every way the realized values miss the request,
        and the first gold action the database or the policy refuses; and ``unknown_info``
        stated without ``missing_information`` requested, or missing with it
        (:func:`~evosyn.agents.generator.contract.unknown_info_problem`).
        """
        problems = self.contract.problems(task, blueprint)
        lacking = unknown_info_problem(task, blueprint)
        if lacking is not None:
            problems.append(lacking)
        if problems:
            raise ValueError("; ".join(problems))

    def parse(
        self, data: dict[str, Any], blueprint: Blueprint, screen: Screen | None = None
    ) -> Task:
        """The checked τ²-bench task in ``data`` for ``blueprint``; ValueError if invalid.

        A task ``screen`` stops (it repeats a kept task) is invalid: the repair turn asks
        for another. A reply whose one key is :data:`UNREALIZABLE` says no record shown can
        realize the blueprint, and why: no task, and no repair turn.
        """
        if set(data) == {UNREALIZABLE}:
            reason = data[UNREALIZABLE]
            if not isinstance(reason, str) or not reason.strip():
                raise ValueError(f'"{UNREALIZABLE}" holds one sentence on what the records lack')
            raise _Unrealizable(" ".join(reason.split()))
        invented = self.invented(blueprint)
        # Asked for only with an invented factor; elsewhere it is an unknown key like any other.
        stated = data.get("factor_values") if invented else None
        spec = ProposedTask.model_validate(
            {k: v for k, v in data.items() if not (invented and k == "factor_values")}
        )
        task = spec.to_task(f"{blueprint.blueprint_id}-task", self.domain.name)
        self.check(task, blueprint)
        if invented:
            self.check_stated(task, blueprint, invented, stated)
        reason = screen(task) if screen else None
        if reason is not None:
            raise ValueError(f"{reason}; propose a different task")
        return task

    def check_stated(
        self, task: Task, blueprint: Blueprint, invented: Mapping[str, Factor], stated: Any
    ) -> None:
        """Raise ValueError unless ``task`` states, and the labeller reads, each requested value.

        ``stated`` is the reply's ``factor_values``: invented factor -> the task's value
        (:func:`~evosyn.agents.labeller.stated.check_stated`).
        """
        check_stated(task, blueprint, invented, stated, self.labeller)

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
        except _Unrealizable as exc:
            # As a programmatic Generator whose database cannot realize a blueprint: the
            # blueprint is dropped with the reason, not bent into a task that misses it.
            raise GeneratorRejection(
                f"the llm generator found no record to realize it: {exc}"
            ) from None
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


@GENERATORS.register("llm")
def _llm(cfg: CampaignConfig) -> Generator:
    return LLMGenerator.from_config(cfg)
