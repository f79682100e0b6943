"""Fixtures of the LLM-role tests: a dummy key, a scripted server and campaign configs.

Every test talks to ``tests/openai_server.py`` over real HTTP through the real litellm client.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from llm_scripts import llm_config, task_json
from openai_server import OpenAIServer

from evosyn.config import CampaignConfig
from evosyn.records import SynthesisSpace
from evosyn.space import seed_space


@pytest.fixture
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """A dummy key for litellm's OpenAI client (the test server ignores it)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


@pytest.fixture(scope="session")
def airline_space() -> SynthesisSpace:
    """The airline seed space."""
    return seed_space("airline", "llm-e2e")


@pytest.fixture
def server(api_key: None) -> Iterator[OpenAIServer]:
    """A plain scripted server (replies queued with ``script``)."""
    with OpenAIServer() as srv:
        yield srv


@pytest.fixture(scope="session")
def make_config() -> Callable[..., CampaignConfig]:
    """``llm_config``: a campaign with every role on ``llm`` against a server."""
    return llm_config


@pytest.fixture(scope="session")
def to_task_json() -> Callable[..., dict[str, Any]]:
    """``task_json``: the JSON a perfect Generator model writes for a task."""
    return task_json
