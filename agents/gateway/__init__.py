"""The one LLM gateway: every model call of EvoSyn, through litellm, with accounting."""

from evosyn.agents.gateway.budget import SpendLedger
from evosyn.agents.gateway.cache import ResponseCache, campaign_scope, request_digest
from evosyn.agents.gateway.errors import (
    BudgetExceeded,
    ContextLengthError,
    FatalLLMError,
    LLMError,
    ModelUnreachable,
    RetryableLLMError,
    classify,
    redact,
    retry_after,
)
from evosyn.agents.gateway.gateway import Completion, Gateway, Usage
from evosyn.agents.gateway.limits import SHARED_LIMITER, AIMDSettings, ConcurrencyLimiter
from evosyn.agents.gateway.settings import SAMPLING_ROLES, GatewaySettings, resolve_settings

__all__ = [
    "SAMPLING_ROLES",
    "SHARED_LIMITER",
    "AIMDSettings",
    "BudgetExceeded",
    "Completion",
    "ConcurrencyLimiter",
    "ContextLengthError",
    "FatalLLMError",
    "Gateway",
    "GatewaySettings",
    "LLMError",
    "ModelUnreachable",
    "ResponseCache",
    "RetryableLLMError",
    "SpendLedger",
    "Usage",
    "campaign_scope",
    "classify",
    "redact",
    "request_digest",
    "resolve_settings",
    "retry_after",
]
