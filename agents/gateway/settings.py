"""Per-role settings of the LLM gateway, resolved from the campaign's ``llm`` section."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from evosyn.agents.gateway.limits import AIMDSettings
from evosyn.config import LLMSection, ModelPrice

SAMPLING_ROLES = frozenset({"designer", "planner", "generator"})
"""Roles that sample at temperature 1.0 unless configured (as in the paper); others use 0.0."""


class GatewaySettings(BaseModel):
    """Everything the gateway needs to call one role's model. API keys are not settings."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(min_length=1, description="litellm model string, e.g. openai/gpt-4o.")
    api_base: str | None = Field(default=None, description="Base URL of the endpoint.")
    temperature: float = Field(default=0.0, ge=0.0, le=2.0, description="Sampling temperature.")
    max_tokens: int | None = Field(default=None, ge=1, description="Completion token limit.")
    timeout: float = Field(default=300.0, gt=0, description="Seconds per attempt.")
    concurrency: int = Field(
        default=8, ge=1, description="Most requests in flight at once to this model string."
    )
    max_attempts: int = Field(default=5, ge=1, description="Attempts per call, first included.")
    backoff_base_s: float = Field(
        default=1.0, ge=0.0, description="Backoff scale: attempt k waits up to base * 2**k."
    )
    backoff_max_s: float = Field(default=60.0, ge=0.0, description="Cap of one backoff wait.")
    retry_after_max_s: float = Field(
        default=300.0, ge=0.0, description="Cap on a server's Retry-After wait."
    )
    cache: bool | None = Field(
        default=None,
        description=(
            "Serve repeated requests from the disk cache. None: on for a campaign's roles "
            "(one folder per campaign), off for a gateway outside a campaign; False: off."
        ),
    )
    cache_dir: str = Field(
        default=".evosyn-cache/llm",
        description="Folder of the response cache (a campaign's answers in a subfolder).",
    )
    adaptive_concurrency: bool = Field(
        default=True,
        description="Adapt the model's limit to latency and 429/5xx (AIMD), up to concurrency.",
    )
    min_concurrency: int = Field(default=1, ge=1, description="Floor of the adaptive limit.")
    latency_tolerance: float = Field(
        default=2.0,
        gt=1.0,
        description="A reply slower than this times the baseline latency halves the limit.",
    )
    breaker_failures: int = Field(
        default=10, ge=1, description="Consecutive transient failures that pause the role."
    )
    breaker_pause_s: float = Field(
        default=30.0, ge=0.0, description="Seconds the open breaker pauses the role."
    )
    client: Literal["auto", "litellm"] = Field(
        default="auto",
        description="auto: an OpenAI-compatible model string (openai/, hosted_vllm/) with an "
        "api_base is called with the openai SDK directly (cheaper per call); litellm: always "
        "through litellm.",
    )
    price: ModelPrice | None = Field(
        default=None,
        description="The model's price from llm.prices, used when litellm prices it at $0.",
    )
    budget_usd: float | None = Field(
        default=None, gt=0.0, description="The campaign's spend cap (llm.budget_usd)."
    )
    round_budget_usd: float | None = Field(
        default=None, gt=0.0, description="Each round's spend cap (llm.round_budget_usd)."
    )

    def aimd(self) -> AIMDSettings | None:
        """The adaptive-limit settings, or None when the limit is fixed."""
        if not self.adaptive_concurrency:
            return None
        return AIMDSettings(
            min_concurrency=min(self.min_concurrency, self.concurrency),
            latency_tolerance=self.latency_tolerance,
        )


def resolve_settings(llm: LLMSection, role: str, **overrides: Any) -> GatewaySettings:
    """The settings of ``role``: built-in defaults, then ``llm.default``, then ``llm.roles[role]``.

    The model's price (``llm.prices``) and the caps (``llm.budget_usd``,
    ``llm.round_budget_usd``) come along.
    Unset (``None``) fields do not override. Keyword ``overrides`` apply last. Raises
    ValueError naming the config field when no model is configured for the role.
    """
    values: dict[str, Any] = {"temperature": 1.0 if role in SAMPLING_ROLES else 0.0}
    known = set(GatewaySettings.model_fields)
    layers = [llm.default.model_dump(exclude_none=True)]
    if role in llm.roles:
        layers.append(llm.roles[role].model_dump(exclude_none=True))
    layers.append({k: v for k, v in overrides.items() if v is not None})
    for layer in layers:
        values.update({k: v for k, v in layer.items() if k in known})
    if values.get("model") in llm.prices:
        values.setdefault("price", llm.prices[values["model"]])
    if llm.budget_usd is not None:
        values.setdefault("budget_usd", llm.budget_usd)
    if llm.round_budget_usd is not None:
        values.setdefault("round_budget_usd", llm.round_budget_usd)
    if not values.get("model"):
        raise ValueError(
            f"no model for role {role!r}: set llm.roles.{role}.model or llm.default.model"
        )
    return GatewaySettings.model_validate(values)
