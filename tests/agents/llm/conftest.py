"""Fixtures of the LLM-role tests: a dummy key, a scripted server and campaign configs.

Every test talks to ``tests/openai_server.py`` over real HTTP through the real litellm client.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from openai_server import OpenAIServer

from evosyn.config import CampaignConfig, LLMSection, ModelSettings
from evosyn.records import SynthesisSpace, SynthTask
from evosyn.space import seed_space

#: Model name of each role on the test server (``openai/<name>`` in the config).
MODELS = {
    "designer": "designer-model",
    "planner": "planner-model",
    "generator": "generator-model",
    "teacher": "teacher-model",
    "user_simulator": "user-model",
    "reflector": "reflector-model",
}


def task_json(synth: SynthTask, ref: str | None = None) -> dict[str, Any]:
    """The JSON a perfect Generator model would write for ``synth`` (tagged with ``ref``)."""
    task = synth.task
    instructions = task.user_scenario.instructions
    criteria = task.evaluation_criteria
    tag = f" [ref {ref}]" if ref else ""
    assert task.description is not None and criteria is not None
    return {
        "purpose": f"{task.description.purpose}{tag}",
        "reason_for_call": instructions.reason_for_call,  # type: ignore[union-attr]
        "known_info": instructions.known_info,  # type: ignore[union-attr]
        "unknown_info": instructions.unknown_info,  # type: ignore[union-attr]
        "task_instructions": f"{instructions.task_instructions}{tag}",  # type: ignore[union-attr]
        "gold_actions": [
            {"name": a.name, "arguments": a.arguments} for a in criteria.actions or []
        ],
        "communicate_info": criteria.communicate_info or [],
    }


def llm_config(
    server: OpenAIServer,
    tmp_path: Path,
    *,
    budget: int = 4,
    rounds: int = 1,
    timeout: float = 5.0,
) -> CampaignConfig:
    """A campaign with every role on ``llm``, each on its own model of ``server``."""
    default = ModelSettings(
        api_base=server.url,
        timeout=timeout,
        backoff_base_s=0.01,
        backoff_max_s=0.05,
        cache_dir=str(tmp_path / "cache"),
    )
    return CampaignConfig.model_validate(
        {
            "campaign": {
                "name": "llm",
                "id": "llm-e2e",
                "budget_per_round": budget,
                "rounds": rounds,
                "seed": 0,
            },
            "lake": {"root": str(tmp_path / "lake")},
            "agents": {
                role: {"kind": "llm"}
                for role in ("designer", "planner", "generator", "teacher", "reflector")
            },
            "llm": LLMSection(
                default=default,
                roles={role: ModelSettings(model=f"openai/{m}") for role, m in MODELS.items()},
            ).model_dump(),
        }
    )


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
