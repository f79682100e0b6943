"""The cheap client path: OpenAI-compatible servers through the ``openai`` SDK directly.

litellm spends several milliseconds of CPU per call building, transforming and pricing each
request; for an OpenAI-compatible server (vLLM, any ``openai/NAME`` at an ``api_base``) the
``openai`` SDK, which litellm itself uses underneath, sends the same request for a fraction of
that (``tests/benchmarks/llm_overhead.py``). Every other provider stays on litellm.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import openai


# Model-string prefixes of OpenAI-compatible servers, and the variable holding their key.
_COMPATIBLE = {"openai/": "OPENAI_API_KEY", "hosted_vllm/": "HOSTED_VLLM_API_KEY"}
# litellm's names of the errors by HTTP status, so llm_calls rows read alike on both paths.
_STATUS_NAMES = {
    400: "BadRequestError",
    401: "AuthenticationError",
    403: "PermissionDeniedError",
    404: "NotFoundError",
    408: "Timeout",
    422: "UnprocessableEntityError",
    429: "RateLimitError",
    500: "InternalServerError",
    503: "ServiceUnavailableError",
}


def direct_model(model: str, api_base: str | None, client: str) -> str | None:
    """The model name to send the server directly, or None when litellm must make the call.

    Direct only with ``client: auto``, an ``api_base`` and an OpenAI-compatible model string.
    """
    if client != "auto" or not api_base:
        return None
    for prefix in _COMPATIBLE:
        if model.startswith(prefix):
            return model.removeprefix(prefix)
    return None


_CLIENTS: dict[tuple[str, str, float], openai.OpenAI] = {}
_CLIENTS_LOCK = threading.Lock()


def shared_client(model: str, api_base: str, timeout: float) -> openai.OpenAI:
    """The process's SDK client of one endpoint (its connection pool is shared by threads)."""
    variable = next(v for p, v in _COMPATIBLE.items() if model.startswith(p))
    # A server started without --api-key accepts any key; the SDK insists on one.
    key = os.environ.get(variable) or "EMPTY"
    ident = (api_base, key, timeout)
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(ident)
        if client is None:
            import openai  # here, not at import: a programmatic campaign never calls a model

            client = openai.OpenAI(base_url=api_base, api_key=key, timeout=timeout, max_retries=0)
            _CLIENTS[ident] = client
        return client


def error_name(exc: BaseException) -> str:
    """The name litellm gives an ``openai`` SDK error (``RateLimitError``, ``Timeout``, ...)."""
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return "Timeout"
    if isinstance(exc, openai.APIConnectionError):
        return "APIConnectionError"
    if isinstance(exc, openai.APIStatusError):
        if exc.status_code == 400 and is_context_length(exc):
            return "ContextWindowExceededError"
        return _STATUS_NAMES.get(exc.status_code, "APIError")
    return type(exc).__name__


def is_context_length(exc: BaseException) -> bool:
    """Whether an SDK error says the prompt does not fit the model's context window."""
    code = getattr(exc, "code", None)
    text = str(exc).lower()
    return code == "context_length_exceeded" or "maximum context length" in text


def send(client: openai.OpenAI, model: str, request: dict[str, Any]) -> Any:
    """One chat completion through the SDK (``request``: messages, tools and parameters)."""
    return client.chat.completions.create(model=model, **request)
