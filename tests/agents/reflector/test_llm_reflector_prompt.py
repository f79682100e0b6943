"""What the LLM Reflector's prompt gives the model, rendered through ``LLMReflector.prompt``."""

from __future__ import annotations

from evosyn.agents.gateway import Gateway, GatewaySettings
from evosyn.agents.reflector import REALIZABLE
from evosyn.agents.reflector.llm import LLMReflector
from evosyn.environments.dialogue_acts import ACTING
from evosyn.records import Feedback
from evosyn.space import seed_space

GATEWAY = Gateway("test", GatewaySettings(model="openai/unused", api_base="http://127.0.0.1:9/v1"))


def test_every_challenge_is_defined_by_what_the_user_is_told() -> None:
    space = seed_space("retail", "c")
    prompt = LLMReflector(GATEWAY, "retail", REALIZABLE).prompt(
        space, Feedback(campaign_id="c", round=1), 1
    )
    section = prompt.split("## Current synthesis space", 1)[1].split("## Coverage", 1)[0]
    challenges = next(f for f in space.active_factors if f.name == "interaction_challenge")
    assert "Each value is what the simulated user is told to do" in section
    for value in challenges.values:
        assert f'  - {value}: "{ACTING[value]}"' in section
