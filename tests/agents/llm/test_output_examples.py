"""Every role's prompt shows an answer its own output model accepts.

A model that copies a template's example shape must not fail validation on the shape itself:
each example is parsed with the pydantic model the role parses replies with.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from evosyn.agents.designer.llm import DesignOutput, LLMDesigner
from evosyn.agents.gateway import Gateway, GatewaySettings
from evosyn.agents.generator.llm import LLMGenerator
from evosyn.agents.generator.single_agent import Proposal, ProposedTask, SingleAgentSynthesizer
from evosyn.agents.planner.llm import BlueprintOutput, LLMPlanner
from evosyn.agents.reflector.llm import LLMReflector, ReflectionOutput
from evosyn.records import Blueprint, Direction, Feedback
from evosyn.space import seed_space

GATEWAY = Gateway("test", GatewaySettings(model="openai/unused"))
SPACE = seed_space("airline", "c")
BLUEPRINT = Blueprint(
    campaign_id="c",
    round=1,
    blueprint_id="bp-1",
    direction_id="d",
    space_version=1,
    selections={"task_family": ["flight_change"]},
    intent="change a flight",
)
DIRECTION = Direction(
    campaign_id="c", round=1, direction_id="d", space_version=1, objective="exploration", budget=2
)


def example(prompt: str) -> Any:
    """The JSON example of the prompt's output section (its last section)."""
    heading = max(prompt.rfind("# Output"), prompt.rfind("OUTPUT\n"))
    assert heading >= 0, "no output section"
    start = prompt.index("{", heading)
    value, _ = json.JSONDecoder().raw_decode(prompt[start:])
    return value


PROMPTS = {
    "designer": (lambda: LLMDesigner(GATEWAY).prompt(SPACE, None, 1, 60), DesignOutput),
    "planner": (lambda: LLMPlanner(GATEWAY).prompt(SPACE, DIRECTION), BlueprintOutput),
    "generator": (lambda: LLMGenerator(GATEWAY).prompt(BLUEPRINT, seed=1), ProposedTask),
    "reflector": (
        lambda: LLMReflector(GATEWAY, "airline").prompt(
            SPACE, Feedback(campaign_id="c", round=1), 1
        ),
        ReflectionOutput,
    ),
    "single_agent": (lambda: SingleAgentSynthesizer(GATEWAY).prompt(BLUEPRINT, 0), Proposal),
}


@pytest.mark.parametrize("role", sorted(PROMPTS))
def test_the_output_example_parses_with_the_output_model(role: str) -> None:
    render, model = PROMPTS[role]
    shown = example(render())
    model.model_validate(shown)


def test_an_example_with_a_placeholder_in_a_closed_field_fails() -> None:
    # The check has teeth: "a | b" where the model takes one of a, b is refused.
    shown = {
        "reviews": [{"factor": "f", "decision": "promote | keep", "evidence": ""}],
        "proposal": {"action": "no_change"},
    }
    with pytest.raises(ValueError, match="decision"):
        ReflectionOutput.model_validate(shown)
