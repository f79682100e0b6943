"""What the LLM Planner's prompt gives the model, and how its difficulty controls are checked.

The prompt is rendered through ``LLMPlanner.prompt``; replies go through ``parse_blueprint``
(and once through ``LLMPlanner.plan`` over HTTP, with its repair turn).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openai_server import OpenAIServer, Reply

from evosyn.agents.gateway import Gateway, GatewaySettings
from evosyn.agents.planner import LLMPlanner, PartialPlanningError
from evosyn.agents.planner.llm import parse_blueprint
from evosyn.agents.reflector import REALIZABLE
from evosyn.config import CampaignConfig, LLMSection, ModelSettings
from evosyn.environments.dialogue_acts import ACTING
from evosyn.environments.registry import domain_plugin
from evosyn.records import Direction, Factor
from evosyn.space import add_factor, seed_space

GATEWAY = Gateway("test", GatewaySettings(model="openai/unused", api_base="http://127.0.0.1:9/v1"))
SPACE = seed_space("airline", "c")
CONFLICTS = domain_plugin("airline").checks.conflicts
DIRECTION = Direction(
    campaign_id="c", round=1, direction_id="d", space_version=1, objective="exploration", budget=1
)
PREFERENCE_RULE = next(
    r.text for r in domain_plugin("airline").rules() if "preference_change" in r.text
)


def selections(**update: list[str]) -> dict[str, list[str]]:
    return {
        "task_family": ["flight_cancellation"],
        "expected_outcome": ["fulfill"],
        "policy_or_constraint_focus": ["fare_rule_constraint"],
        "tool_use_pattern": ["lookup_verify_then_modify"],
        "interaction_challenge": [],
        "difficulty_profile": ["medium"],
        **update,
    }


def reply(controls: dict[str, Any], **update: list[str]) -> dict[str, Any]:
    return {
        "selections": selections(**update),
        "intent": "cancel a reservation the policy allows",
        "difficulty_controls": controls,
    }


def parse(data: dict[str, Any], space: Any = SPACE) -> Any:
    return parse_blueprint(data, space, DIRECTION, 0, 0, CONFLICTS)


# --------------------------------------------------------------------------- difficulty


def test_the_planner_is_told_how_difficulty_counts_tool_calls() -> None:
    prompt = LLMPlanner(GATEWAY).prompt(SPACE, DIRECTION)
    card = next(x for x in prompt.splitlines() if x.startswith("- difficulty_profile: choose"))
    assert (
        "It counts the tool calls of the task's resolution: easy 2-3, medium 4-5, hard 6+" in card
    )
    rules = prompt.split("# Decision rules", 1)[1]
    assert '"expected_tool_calls" is how many tool calls the agent makes' in rules
    assert (
        "inside the range of the selected difficulty_profile (easy 2-3, medium 4-5, hard 6+)"
        in rules
    )
    assert '"requires_state_change" is whether resolving the task changes the database' in rules
    assert "Write a JSON boolean." in rules
    grown = add_factor(SPACE, REALIZABLE["num_write"], round=1)
    assert "at least the reads and writes that num_write selects" in LLMPlanner(GATEWAY).prompt(
        grown, DIRECTION
    )


def test_controls_that_agree_with_the_selection_are_kept() -> None:
    blueprint = parse(reply({"expected_tool_calls": 5, "requires_state_change": True}))
    assert blueprint.difficulty_controls == {
        "expected_tool_calls": 5,
        "requires_state_change": "true",
    }
    # A read-only family fulfilled changes nothing.
    inquiry = parse(
        reply(
            {"expected_tool_calls": 4, "requires_state_change": False},
            task_family=["loyalty_or_membership_service"],
            tool_use_pattern=["multi_entity_retrieval"],
            policy_or_constraint_focus=["loyalty_status_constraint"],
        )
    )
    assert inquiry.difficulty_controls["requires_state_change"] == "false"


@pytest.mark.parametrize(
    ("controls", "update", "problem"),
    [
        # A planned medium with 3 calls is a contradiction, not a request.
        (
            {"expected_tool_calls": 3},
            {},
            "expected_tool_calls is 3, outside difficulty_profile=medium",
        ),
        (
            {"expected_tool_calls": 7},
            {},
            "expected_tool_calls is 7, outside difficulty_profile=medium",
        ),
        ({"expected_tool_calls": 4.5}, {}, "expected_tool_calls is 4.5, not a whole number"),
        ({"expected_tool_calls": True}, {}, "expected_tool_calls is True, not a whole number"),
        (
            {"requires_state_change": "maybe"},
            {},
            "requires_state_change is 'maybe', not true or false",
        ),
        (
            {"requires_state_change": True},
            {"expected_outcome": ["refuse"], "tool_use_pattern": ["policy_check_before_action"]},
            "requires_state_change is true, but a refusal changes nothing",
        ),
        # A fulfilled cancellation writes: the domain's rule says so.
        ({"requires_state_change": False}, {}, "requires_state_change is false, but fulfilling"),
        # A read-only family fulfilled does not: the domain's rule again.
        (
            {"requires_state_change": True},
            {
                "task_family": ["loyalty_or_membership_service"],
                "tool_use_pattern": ["multi_entity_retrieval"],
                "policy_or_constraint_focus": ["loyalty_status_constraint"],
            },
            "requires_state_change is true, but num_write=1 conflicts with a read-only inquiry",
        ),
        ({"effort": 3}, {}, "difficulty_controls name ['effort']"),
    ],
)
def test_controls_that_contradict_the_selection_are_refused(
    controls: dict[str, Any], update: dict[str, list[str]], problem: str
) -> None:
    with pytest.raises(ValueError) as caught:
        parse(reply(controls, **update))
    assert problem in str(caught.value)


def test_controls_agree_with_a_selected_write_count() -> None:
    grown = add_factor(SPACE, REALIZABLE["num_write"], round=1)
    direction = DIRECTION.model_copy(update={"space_version": grown.version})
    data = reply({"expected_tool_calls": 4, "requires_state_change": False}, num_write=["1"])
    with pytest.raises(ValueError, match="requires_state_change is false, but num_write=1"):
        parse_blueprint(data, grown, direction, 0, 0, CONFLICTS)
    data = reply({"expected_tool_calls": 6, "requires_state_change": True}, num_write=["3-4"])
    data["selections"]["difficulty_profile"] = ["hard"]
    parse_blueprint(data, grown, direction, 0, 0, CONFLICTS)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with OpenAIServer() as srv:
        yield srv


def planner_on(server: OpenAIServer, tmp_path: Path) -> LLMPlanner:
    cfg = CampaignConfig(
        llm=LLMSection(
            default=ModelSettings(
                model="openai/planner-model",
                api_base=server.url,
                timeout=5.0,
                backoff_base_s=0.01,
                cache_dir=str(tmp_path / "cache"),
            )
        )
    )
    return LLMPlanner.from_config(cfg, CONFLICTS)


def test_a_contradicting_blueprint_is_repaired_with_the_range_named(
    server: OpenAIServer, tmp_path: Path
) -> None:
    bad = reply({"expected_tool_calls": 3, "requires_state_change": True})
    good = reply({"expected_tool_calls": 5, "requires_state_change": True})
    server.script(Reply.text(json.dumps(bad)), Reply.text(json.dumps(good)))
    [blueprint] = planner_on(server, tmp_path).plan(SPACE, DIRECTION, seed=0)
    assert blueprint.difficulty_controls["expected_tool_calls"] == 5
    repair = server.requests[-1].body["messages"][-1]["content"]
    assert "expected_tool_calls is 3, outside difficulty_profile=medium's range" in repair
    server.script(Reply.text(json.dumps(bad)), Reply.text(json.dumps(bad)))
    with pytest.raises(PartialPlanningError):
        planner_on(server, tmp_path / "again").plan(SPACE, DIRECTION, seed=1)


# --------------------------------------------------------------------------- rules and challenges


def test_a_round_one_prompt_keeps_the_rule_that_defines_preference_change() -> None:
    # The seed space has no num_write; the rule names it, and still binds the challenge.
    assert "num_write" in PREFERENCE_RULE
    assert "num_write" not in {f.name for f in SPACE.active_factors}
    prompt = LLMPlanner(GATEWAY).prompt(SPACE, DIRECTION)
    assert f"- {PREFERENCE_RULE}\n" in prompt
    assert "Some rules name num_write" in prompt
    assert f"- num_write: {REALIZABLE['num_write'].guidance}" in prompt
    # Every rule of the domain, whatever the space holds.
    for rule in domain_plugin("airline").rules():
        assert f"- {rule.text}" in prompt
    grown = add_factor(SPACE, REALIZABLE["num_write"], round=1)
    assert "Some rules name num_read and computation, which" in LLMPlanner(GATEWAY).prompt(
        grown, DIRECTION
    )


def test_every_challenge_is_defined_by_what_the_user_is_told() -> None:
    prompt = LLMPlanner(GATEWAY).prompt(SPACE, DIRECTION)
    challenges = next(f for f in SPACE.active_factors if f.name == "interaction_challenge")
    for value in challenges.values:
        assert f'  - {value}: "{ACTING[value]}"' in prompt


def test_an_invented_factor_is_offered_with_its_definition_and_values() -> None:
    invented = Factor(
        name="passengers",
        values=["1", "2+"],
        guidance="Ask for a request made for this many passengers.",
        definition="How many passengers the request is for.",
    )
    grown = add_factor(SPACE, invented, round=2)
    direction = DIRECTION.model_copy(update={"space_version": grown.version})
    prompt = LLMPlanner(GATEWAY).prompt(grown, direction)
    factors = prompt.split("## Factors and their values", 1)[1].split("\n## ", 1)[0]
    assert (
        '- passengers: choose 1 of ["1", "2+"]. Ask for a request made for this many passengers.\n'
        "  Defined as: How many passengers the request is for. (a labeller reads each task's "
        "value by this definition" in factors
    )
    # A seed factor has no definition line.
    assert factors.count("Defined as:") == 1
