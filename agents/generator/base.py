"""The Generator role's protocol and its registry."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from evosyn.agents.gateway import resolve_settings
from evosyn.agents.registry import Registry
from evosyn.config import CampaignConfig
from evosyn.environments.kit.screen import GeneratorRejection, Screen
from evosyn.environments.registry import domain_plugin
from evosyn.records import Blueprint, Factor, SynthTask

__all__ = ["GENERATORS", "Generator", "GeneratorRejection", "Screen", "realizable"]


class Generator(Protocol):
    """Grounds blueprints into tasks whose gold actions realize the requested values."""

    def generate(self, blueprint: Blueprint, seed: int, screen: Screen | None = None) -> SynthTask:
        """A task for ``blueprint`` that ``screen`` lets through.

        Raises:
            GeneratorRejection: If the database cannot realize the blueprint, or no candidate
                passes ``screen``.
        """
        ...


GENERATORS: Registry[Generator] = Registry("agents.generator.kind")
"""Generator implementations by name."""


@GENERATORS.register("programmatic")
def _programmatic(cfg: CampaignConfig) -> Generator:
    # The domain's own Generator: a table of builders in its folder.
    return domain_plugin(cfg.campaign.domain).generator()


#: The ``single_agent`` ablation's role in ``llm.roles``.
SINGLE_AGENT = "single_agent"


def single_agent_on_model(cfg: CampaignConfig) -> bool:
    """Whether ``cfg``'s single agent is a model: one is configured for role ``single_agent``.

    A model configured by default (``llm.default``) counts.
    """
    try:
        resolve_settings(cfg.llm, SINGLE_AGENT)
    except ValueError:
        return False
    return True


def realizable(cfg: CampaignConfig) -> Mapping[str, Factor] | None:
    """The factors ``cfg``'s Generator can honour, by name; None when it may be asked any.

    A Generator registered as ``grounded`` (the domain's own builders) honours only the factors
    its domain registered; a model that proposes tasks (the LLM Generator) may be asked for any.
    The ``single_agent`` ablation puts one agent in the Generator's place: a model, or the
    domain's own Generator when no model is configured for it.
    """
    if cfg.ablations.single_agent:
        grounded = not single_agent_on_model(cfg)
    else:
        grounded = GENERATORS.get(cfg.agents.generator.kind).grounded
    return domain_plugin(cfg.campaign.domain).realizable if grounded else None
