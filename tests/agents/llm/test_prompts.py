"""Prompt rendering of the LLM roles, apart from calling and parsing: inputs in, no gaps left."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import jinja2
import pytest
from openai_server import OpenAIServer, Reply

from evosyn.agents.designer.llm import LLMDesigner
from evosyn.agents.gateway import Gateway, GatewaySettings
from evosyn.agents.generator.llm import LLMGenerator
from evosyn.agents.llm_output import repair_turn
from evosyn.agents.planner.llm import LLMPlanner
from evosyn.agents.prompt_context import (
    entity_sample,
    fitting_people,
    render,
    tool_lines,
)
from evosyn.agents.prompt_records import ENTITY_CHARS
from evosyn.agents.reflector import REALIZABLE
from evosyn.agents.reflector.llm import LLMReflector
from evosyn.config import LLMSection, ModelSettings
from evosyn.environments import get_domain
from evosyn.records import Blueprint, Direction, Feedback, ValueFeedback
from evosyn.space import add_factor, seed_space

GATEWAY = Gateway("test", GatewaySettings(model="openai/unused", api_base="http://127.0.0.1:9/v1"))
SPACE = seed_space("airline", "c")
LEFTOVER = re.compile(r"\{\{|\{%|%\}")


def feedback() -> Feedback:
    values = [
        ValueFeedback(
            campaign_id="c",
            round=1,
            factor="task_family",
            value="flight_change",
            coverage=0.9361,
            n_verified=44,
            success=0.42,
            n_diagnostic=12,
        )
    ]
    return Feedback(campaign_id="c", round=1, values=values)


def check(prompt: str) -> None:
    assert not LEFTOVER.search(prompt), "unrendered template syntax"
    assert "\\u0027" not in prompt and "&amp;" not in prompt  # no HTML escaping
    assert prompt.rstrip().endswith("}") or "Answer" in prompt


@pytest.mark.parametrize("domain", ["airline", "retail", "telecom"])
def test_designer_prompt_has_every_runtime_input(domain: str) -> None:
    space = seed_space(domain, "c")
    designer = LLMDesigner(GATEWAY, domain)
    cold = designer.prompt(space, None, 1, 60)
    check(cold)
    assert f"## Domain\n{domain}" in cold
    assert get_domain(domain).policy()[:200] in cold
    assert all(f"- {t['name']} [" in cold for t in tool_lines(get_domain(domain)))
    assert json.dumps(space.active_factors[0].name) in cold
    assert "COLD START" in cold and '"directions"' in cold
    assert designer.prompt(space, None, 1, 60) == cold  # a pure function of its inputs


def test_designer_prompt_reports_feedback_compactly() -> None:
    prompt = LLMDesigner(GATEWAY).prompt(SPACE, feedback(), 2, 60)
    check(prompt)
    assert "LEARNER FEEDBACK after round 1" in prompt and "COLD START" not in prompt
    assert '"coverage": 0.936' in prompt and '"learner_success": 0.42' in prompt
    assert "NEWLY ADDED" not in prompt


def test_planner_prompt_states_cardinalities_and_the_direction() -> None:
    direction = Direction(
        campaign_id="c",
        round=1,
        direction_id="d",
        space_version=1,
        objective="failure_targeted",
        allowed={"task_family": ["flight_change"]},
        avoid_patterns=["difficulty_profile=easy & expected_outcome=refuse"],
        budget=3,
        target="multi-step flight changes",
    )
    prompt = LLMPlanner(GATEWAY).prompt(SPACE, direction)
    check(prompt)
    assert '"target": "multi-step flight changes"' in prompt
    # A direction with no target (the programmatic Designer's) shows no empty one.
    untargeted = LLMPlanner(GATEWAY).prompt(SPACE, direction.model_copy(update={"target": ""}))
    assert '"target"' not in untargeted
    assert "- tool_use_pattern: choose 1..3 of" in prompt
    assert "- interaction_challenge: choose 0..2 of" in prompt
    assert "- task_family: choose 1 of" in prompt
    assert '"failure_targeted"' in prompt and "difficulty_profile=easy & expected_outcome" in prompt
    # A deprecated factor is not offered.
    grown = add_factor(SPACE, REALIZABLE["num_read"], round=1)
    assert "- num_read: choose 1 of" in LLMPlanner(GATEWAY).prompt(grown, direction)


def test_the_planner_asks_to_vary_only_a_mix_it_has() -> None:
    def direction(budget: int, **weights: dict[str, float]) -> Direction:
        return Direction(
            campaign_id="c",
            round=1,
            direction_id="d",
            space_version=1,
            objective="exploration",
            weights=weights,
            budget=budget,
        )

    planner = LLMPlanner(GATEWAY)
    # One blueprint has no others planned beside it.
    assert "above all in" not in planner.prompt(SPACE, direction(1))
    assert 'above all in "task_family"' in planner.prompt(SPACE, direction(3))
    # A weighted factor is mixed by its weights, not by the slot.
    mixed = planner.prompt(SPACE, direction(3, task_family={"flight_change": 1.0}))
    assert 'above all in "task_family"' not in mixed and "above all in" in mixed


def test_generator_prompt_grounds_the_blueprint_in_real_records() -> None:
    blueprint = Blueprint(
        campaign_id="c",
        round=1,
        blueprint_id="bp-1",
        direction_id="d",
        space_version=1,
        selections={"task_family": ["flight_change"]},
        intent="change a flight",
    )
    generator = LLMGenerator(GATEWAY)
    prompt = generator.prompt(blueprint, seed=3)
    check(prompt)
    users = re.findall(r"\[users (\w+)\]", prompt)
    assert len(users) == 3
    db = get_domain("airline").blank_state().env.tools.db
    assert all(u in db.users for u in users)
    assert "[reservations " in prompt  # the records the users point to
    block = re.search(r"## Blueprint\n(\{.*?\n\})\n", prompt, re.DOTALL)
    assert block and json.loads(block.group(1))["selections"] == blueprint.selections
    assert generator.prompt(blueprint, seed=3) == prompt
    assert generator.prompt(blueprint, seed=4) != prompt


@pytest.mark.parametrize("seed", [3, 4, 5])
def test_generator_prompt_shows_every_flight_its_reservations_reference(seed: int) -> None:
    blueprint = Blueprint(
        campaign_id="c",
        round=1,
        blueprint_id="bp-2",
        direction_id="d",
        space_version=1,
        selections={"task_family": ["flight_change"]},
        intent="change a flight",
    )
    prompt = LLMGenerator(GATEWAY).prompt(blueprint, seed=seed)
    records = {
        (table, key): json.loads(text)
        for table, key, text in re.findall(r"^\[(\w+) (\w+)\] (\{.*\})$", prompt, re.MULTILINE)
    }
    reservations = [r for (table, _), r in records.items() if table == "reservations"]
    assert reservations
    db = get_domain("airline").blank_state().env.tools.db
    for reservation in reservations:
        for segment in reservation["flights"]:
            flight = records.get(("flights", segment["flight_number"]))
            assert flight is not None, f"flight {segment['flight_number']} not shown"
            # The reserved date, as the database has it: status, seats left and prices.
            day = db.flights[segment["flight_number"]].dates[segment["date"]]
            assert flight["dates"][segment["date"]] == day.model_dump(mode="json")
    for (table, key), flight in records.items():
        if table == "flights":
            # Only dates some shown reservation flies on that flight, not the whole month.
            booked = {
                s["date"] for r in reservations for s in r["flights"] if s["flight_number"] == key
            }
            assert set(flight["dates"]) == booked
    rules = prompt.split("## How amounts must add up\n")[1].split("\n\n")[0]
    assert "payment_methods amounts must sum to exactly that total" in rules
    assert "30 per passenger with insurance" in rules and "50 per non-free bag" in rules
    assert "available seats" in rules


@pytest.mark.parametrize("domain", ["airline", "retail", "telecom"])
def test_entity_samples_are_seeded_and_whole(domain: str) -> None:
    d = get_domain(domain)
    first = entity_sample(d, random.Random(1), people=2)
    assert first == entity_sample(d, random.Random(1), people=2)
    # Every record is whole JSON within the bound, none cut inside it.
    assert first and all(len(e["record"]) <= ENTITY_CHARS for e in first)
    assert all(isinstance(json.loads(e["record"]), dict) for e in first)
    assert {e["table"] for e in first} & {"users", "customers"}


def test_a_generator_prompt_shows_someone_whose_records_carry_the_blueprint() -> None:
    # A compensation needs a cancelled flight; few people have one.
    blueprint = Blueprint(
        campaign_id="c",
        round=1,
        blueprint_id="bp-refund",
        direction_id="d",
        space_version=1,
        selections={"task_family": ["refund_or_compensation"], "expected_outcome": ["fulfill"]},
        intent="compensate a cancelled flight",
    )
    domain = get_domain("airline")
    [person, *_] = fitting_people(domain, blueprint, seed=3)
    prompt = LLMGenerator(GATEWAY).prompt(blueprint, seed=3)
    assert f"[users {person}]" in prompt
    assert len(re.findall(r"\[users (\w+)\]", prompt)) == 3
    assert '"status":"cancelled"' in prompt
    # Without a fitting person the draw is the plain seeded sample.
    d = get_domain("airline")
    assert entity_sample(d, random.Random(1), people=2, include=["nobody"]) == entity_sample(
        d, random.Random(1), people=2
    )


def test_reflector_prompt_is_the_audit_package() -> None:
    grown = add_factor(SPACE, REALIZABLE["num_write"], round=1)
    reflector = LLMReflector(GATEWAY, "airline", REALIZABLE)
    prompt = reflector.prompt(grown, feedback(), 1)
    check(prompt)
    assert (
        "version 2" in prompt
        and "- num_write [status experimental, origin seed, since round 1]" in prompt
    )
    assert "## Experimental factors to review\n- num_write" in prompt
    # Only realizable factors that are not yet in the space are offered.
    offered = prompt.split("Generator can realize")[1].split("# Decision rules")[0]
    assert "- num_read:" in offered and "- num_write:" not in offered
    assert "(no probes this round)" in prompt
    assert "Earlier decisions" not in prompt and "earlier decisions" not in prompt
    without = LLMReflector(GATEWAY, "airline").prompt(grown, feedback(), 1)
    assert "Generator can realize" not in without


def test_repair_turn_quotes_the_error() -> None:
    turn = repair_turn("at directions.0.budget: Input should be a valid integer")
    assert turn.startswith("Your previous answer cannot be used: at directions.0.budget")
    assert "cut off" not in turn
    assert "cut off" in repair_turn("truncated JSON", truncated=True)


def test_templates_are_files_and_strict(tmp_path: Path) -> None:
    for role in ("designer", "planner", "generator", "reflector"):
        path = Path(__file__).parents[3] / "agents" / role / f"{role}.j2"
        assert path.is_file(), path
    (tmp_path / "t.j2").write_text("{{ missing }}", "utf-8")
    with pytest.raises(jinja2.UndefinedError):
        render(tmp_path, "t.j2")
    (tmp_path / "j.j2").write_text("{{ x | json }}", "utf-8")
    assert render(tmp_path, "j.j2", x={"a": "b & c's"}) == '{"a": "b & c\'s"}'


@pytest.mark.parametrize(
    ("budget", "wanted", "unwanted"),
    [
        (60, "every task family and\nexpected outcome is sampled, with a share left", "cannot"),
        (6, "sampled, one blueprint each", "a share left"),
        (4, "The budget of 4 cannot sample all\n6 task families", "every task family"),
    ],
)
def test_cold_start_asks_only_what_the_budget_can_do(
    budget: int, wanted: str, unwanted: str
) -> None:
    prompt = LLMDesigner(GATEWAY).prompt(SPACE, None, 1, budget)
    check(prompt)
    assert wanted in prompt
    assert unwanted not in prompt.split("## Steering signal")[1].split("# Decision rules")[0]


def test_feedback_headers_define_the_columns_the_rows_carry() -> None:
    plain = feedback()
    for prompt in (
        LLMDesigner(GATEWAY).prompt(SPACE, plain, 2, 60),
        LLMReflector(GATEWAY, "airline").prompt(SPACE, plain, 1),
    ):
        assert "learner_success = task-agent success" in prompt
        assert "round_coverage" not in prompt  # no row carries it
    [value] = plain.values
    with_round = Feedback(
        campaign_id="c", round=1, values=[value.model_copy(update={"round_coverage": 0.5})]
    )
    prompt = LLMDesigner(GATEWAY).prompt(SPACE, with_round, 2, 60)
    assert "round_coverage = its share" in prompt and '"round_coverage": 0.5' in prompt


def test_rejection_notes_never_reach_another_prompt(server: OpenAIServer) -> None:
    def refusing(role: str) -> Gateway:
        section = LLMSection(default=ModelSettings(model="openai/m", api_base=server.url))
        return Gateway.from_config(section, role, cache=False, max_attempts=1)

    bad = Reply(status=400, error_message="bad request", error_type="invalid_request_error")
    server.script(bad, bad)
    plan = LLMDesigner(refusing("designer")).design(SPACE, None, "c", 1, 8)
    assert all("BadRequestError" in d.rationale for d in plan.directions)  # stored, as before
    for direction in plan.directions:
        prompt = LLMPlanner(GATEWAY).prompt(SPACE, direction)
        assert "BadRequestError" not in prompt and "output rejected" not in prompt
        shown = json.loads(
            prompt.split("## Direction")[1].split("\n\n")[0].strip().split("\n", 1)[1]
        )
        assert shown["rationale"] == direction.rationale.split("fallback plan: ", 1)[1]
    reflector = LLMReflector(refusing("reflector"), "airline")
    decision, _ = reflector.reflect(SPACE, feedback(), 1)
    assert "BadRequestError" in decision.rationale
    later = reflector.prompt(SPACE, feedback(), 2)
    assert "round 1: reallocate - the space is unchanged" in later
    assert "BadRequestError" not in later and "output rejected" not in later
