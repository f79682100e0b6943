"""Errors of the LLM gateway, and how litellm's exceptions map onto them."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evosyn.records import LLMCall

# Substrings that look like credentials even when they are not in the environment.
_KEY_PATTERNS = (
    re.compile(r"Bearer\s+[^\s'\"]+"),
    re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}"),
    re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
)
_SECRET_ENV = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD)", re.IGNORECASE)
# Status codes worth another attempt: timeouts, conflicts, rate limits, server errors.
RETRYABLE_STATUS = frozenset({408, 409, 425, 429})


class LLMError(RuntimeError):
    """A model call that failed; the message never contains an API key.

    Attributes:
        error_class: name of the underlying exception class (e.g. ``RateLimitError``).
        status_code: HTTP status of the failure, when there was one.
        attempts: attempts made before giving up (set by the gateway).

    """

    def __init__(self, message: str, error_class: str, status_code: int | None = None) -> None:
        super().__init__(message)
        self.error_class = error_class
        self.status_code = status_code
        self.attempts = 0


class RetryableLLMError(LLMError):
    """A failure that may succeed on another attempt (429, 5xx, timeout, connection)."""

    def __init__(
        self,
        message: str,
        error_class: str,
        status_code: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, error_class, status_code)
        self.retry_after = retry_after


class FatalLLMError(LLMError):
    """A failure that cannot succeed by retrying (400, 401, 403, 404, bad arguments)."""


class ContextLengthError(FatalLLMError):
    """The request does not fit the model's context window."""


def redact(text: str, environ: dict[str, str] | None = None) -> str:
    """``text`` with secrets from the environment and key-like strings replaced by ``***``."""
    env = os.environ if environ is None else environ
    secrets = sorted(
        (v for k, v in env.items() if _SECRET_ENV.search(k) and len(v) >= 6),
        key=len,
        reverse=True,
    )
    for secret in secrets:
        text = text.replace(secret, "***")
    for pattern in _KEY_PATTERNS:
        text = pattern.sub("***", text)
    return text


def _headers(exc: BaseException) -> dict[str, str]:
    found: dict[str, str] = {}
    for source in (getattr(exc, "litellm_response_headers", None), getattr(exc, "response", None)):
        headers = getattr(source, "headers", source)
        if headers is None:
            continue
        try:
            found.update({str(k).lower(): str(v) for k, v in dict(headers).items()})
        except (TypeError, ValueError):
            continue
    return found


def retry_after(exc: BaseException, now: datetime | None = None) -> float | None:
    """Seconds the server asked to wait (``retry-after-ms`` or ``Retry-After``), if it did."""
    headers = _headers(exc)
    if "retry-after-ms" in headers:
        try:
            return max(0.0, float(headers["retry-after-ms"]) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    # Retry-After may also be an HTTP date.
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def _status(exc: BaseException) -> int | None:
    status: Any = getattr(exc, "status_code", None)
    try:
        return int(status) if status is not None else None
    except (TypeError, ValueError):
        return None


def classify(exc: BaseException) -> LLMError:
    """Our error for an exception raised by litellm or the ``openai`` SDK (or around them).

    An SDK error gets litellm's name for it, so ``error_class`` reads alike on both paths.
    """
    # Imported here: litellm and openai take seconds to import; only a model call needs them.
    import openai
    from litellm.exceptions import APIConnectionError, ContextWindowExceededError, Timeout

    from evosyn.agents.gateway.client import error_name

    sdk = type(exc).__module__.startswith("openai")
    name = error_name(exc) if sdk else type(exc).__name__
    message = redact(str(exc) or name)
    status = _status(exc)
    if isinstance(exc, ContextWindowExceededError) or name == "ContextWindowExceededError":
        return ContextLengthError(message, name, status)
    if isinstance(
        exc,
        Timeout | APIConnectionError | openai.APIConnectionError | TimeoutError | ConnectionError,
    ):
        return RetryableLLMError(message, name, status, retry_after(exc))
    if status is not None and (status in RETRYABLE_STATUS or status >= 500):
        return RetryableLLMError(message, name, status, retry_after(exc))
    return FatalLLMError(message, name, status)


class BudgetExceeded(RuntimeError):
    """A cap of what model calls may cost is reached: no call is sent.

    ``llm.budget_usd`` caps the campaign's calls, ``llm.round_budget_usd`` each round's.
    Not an ``LLMError``: a role must not turn it into a rejected sample. It stops the round
    (nothing of the unfinished step is stored but its model calls); a resume with a larger cap
    continues.

    Attributes:
        cap_usd: the cap.
        spent_usd: what the capped calls had cost when this call was refused.
        key: the config key of the cap (``llm.budget_usd`` or ``llm.round_budget_usd``).
        round: the capped round (None for the campaign's cap).
        calls: the ``llm_calls`` rows of attempts made before the stop that the raiser could
            not store itself (a learner's evaluation); the step that stores rows writes them.

    """

    def __init__(
        self, role: str, cap_usd: float, spent_usd: float, round: int | None = None
    ) -> None:
        key = "llm.budget_usd" if round is None else "llm.round_budget_usd"
        spender = "the campaign's" if round is None else f"round {round}'s"
        super().__init__(
            f"{key} reached: {spender} model calls cost ${spent_usd:.4f} of its "
            f"${cap_usd:g} cap ({role} call refused); raise {key} and resume"
        )
        self.cap_usd = cap_usd
        self.spent_usd = spent_usd
        self.key = key
        self.round = round
        self.calls: list[LLMCall] = []


class ModelUnreachable(RuntimeError):
    """Every model call a role made in a step failed: the round stops instead of going on empty.

    Not an ``LLMError``: each failed call already became a rejected request, and a round of
    nothing but those would be stored as a round that planned nothing. The step stores its
    ``llm_calls`` rows (every failed attempt) and nothing else, so a resume retries it.

    Attributes:
        role: the role whose calls all failed.
        endpoint: the model and the address they were sent to.
    """

    def __init__(self, role: str, endpoint: str, failure: str) -> None:
        super().__init__(
            f"{role}: every model call failed ({failure}) at {endpoint}; check that the model "
            "is served there, then resume"
        )
        self.role = role
        self.endpoint = endpoint
