"""The Verifier contract and its registry."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from tau2.data_model.message import Message
from tau2.data_model.tasks import Task

from evosyn.agents.gateway import GatewaySettings, resolve_settings
from evosyn.agents.registry import Registry
from evosyn.config import CampaignConfig, ConfigError
from evosyn.records import Verification


@runtime_checkable
class Verifier(Protocol):
    """Decides deterministically whether a trajectory solves its task."""

    name: str

    def verify(
        self,
        task: Task,
        messages: Sequence[Message],
        *,
        campaign_id: str = "adhoc",
        round: int = 0,
        trajectory_id: str | None = None,
    ) -> Verification:
        """The verdict on ``messages`` as an attempt at ``task``."""
        ...


VERIFIERS: Registry[Verifier] = Registry("agents.verifier.kind")
"""Verifier implementations by name."""


def judge_settings(cfg: CampaignConfig, judge: str) -> GatewaySettings:
    """The gateway settings of the Verifier's ``judge`` (``nl_judge``, ``realize_judge``).

    Its ``llm`` settings over ``llm.default``; ConfigError naming the field to set if no model
    resolves.
    """
    section = getattr(cfg.agents.verifier, judge)
    overrides = section.llm.model_dump(exclude_none=True) if section.llm else {}
    try:
        return resolve_settings(cfg.llm, judge, **overrides)
    except ValueError:
        raise ConfigError(
            f"config error: agents.verifier.{judge}: no model for the {section.title}: set "
            f"agents.verifier.{judge}.llm.model or llm.default.model"
        ) from None
