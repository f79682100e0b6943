"""Fixtures of the Verifier's judge tests: a scripted OpenAI-compatible server over real HTTP.

Both judges (NL assertions, realization) are answered by ``tests/openai_server.py`` through the
real gateway client; a dummy key stands in for the one litellm's OpenAI client asks for.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from openai_server import Faults, OpenAIServer


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIServer]:
    """A scripted server (replies queued with ``script``)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with OpenAIServer() as srv:
        yield srv


@pytest.fixture
def failing(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIServer]:
    """A server answering every request with a 500."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with OpenAIServer(faults=Faults(p_server_error=1.0)) as srv:
        yield srv
