"""The one LLM gateway: every model call of EvoSyn, through litellm, with accounting."""

from evosyn.agents.gateway.cache import ResponseCache, campaign_scope, request_digest
from evosyn.agents.gateway.errors import (
    ContextLengthError,
    FatalLLMError,
    LLMError,
    RetryableLLMError,
    classify,
    redact,
    retry_after,
)
from evosyn.agents.gateway.gateway import Completion, Gateway, Usage
from evosyn.agents.gateway.limits import SHARED_LIMITER, ConcurrencyLimiter
from evosyn.agents.gateway.settings import SAMPLING_ROLES, GatewaySettings, resolve_settings

__all__ = [
    "SAMPLING_ROLES",
    "SHARED_LIMITER",
    "Completion",
    "ConcurrencyLimiter",
    "ContextLengthError",
    "FatalLLMError",
    "Gateway",
    "GatewaySettings",
    "LLMError",
    "ResponseCache",
    "RetryableLLMError",
    "Usage",
    "campaign_scope",
    "classify",
    "redact",
    "request_digest",
    "resolve_settings",
    "retry_after",
]
