"""The Generator role's protocol and its registry."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

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


def realizable(cfg: CampaignConfig) -> Mapping[str, Factor] | None:
    """The factors ``cfg``'s Generator can honour, by name; None when it may be asked any.

    The domain's own Generator honours only the factors its domain registered; a model that
    proposes tasks (the LLM Generator, the single agent) may be asked for any factor.
    """
    if cfg.ablations.single_agent or cfg.agents.generator.kind != "programmatic":
        return None
    return domain_plugin(cfg.campaign.domain).realizable
