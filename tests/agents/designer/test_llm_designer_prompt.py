"""What the LLM Designer's prompt gives the model, rendered through ``LLMDesigner.prompt``."""

from __future__ import annotations

from evosyn.agents.designer.llm import LLMDesigner
from evosyn.agents.gateway import Gateway, GatewaySettings
from evosyn.agents.reflector import REALIZABLE
from evosyn.environments.dialogue_acts import ACTING
from evosyn.environments.registry import domain_plugin
from evosyn.records import Factor, FactorOrigin, Feedback, Probe, ValueFeedback
from evosyn.space import add_factor, seed_space

GATEWAY = Gateway("test", GatewaySettings(model="openai/unused", api_base="http://127.0.0.1:9/v1"))
SPACE = seed_space("airline", "c")


def feedback(*rows: ValueFeedback, probes: tuple[Probe, ...] = ()) -> Feedback:
    return Feedback(campaign_id="c", round=1, values=list(rows), probes=list(probes))


def probe() -> Probe:
    """The Reflector's measurement of num_write after round 1."""
    return Probe(
        campaign_id="c",
        round=1,
        name="num_write",
        distribution={"0": 51, "1": 33, "2": 12, "3-4": 12},
        failure_rate={"0": 0.059, "1": 0.152, "2": 0.083, "3-4": 0.75},
        coverage={"0": 0.4, "1": 0.6, "2": 0.0, "3-4": 0.0, "5+": 0.0},
        cmi=0.09,
        p_value=0.01,
    )


def steering(prompt: str) -> str:
    return prompt.split("## Steering signal", 1)[1].split("# Decision rules", 1)[0]


def test_a_new_factor_shows_the_coverage_the_reflector_saw() -> None:
    # The round's feedback predates the factor; the probe measured it at 40% / 60%.
    grown = add_factor(SPACE, REALIZABLE["num_write"], round=2)
    prompt = LLMDesigner(GATEWAY).prompt(grown, feedback(probes=(probe(),)), 2, 60)
    line = next(x for x in steering(prompt).splitlines() if x.startswith("- num_write"))
    assert "share of the verified data with each value: 0 40%, 1 60%, 2 0%, 3-4 0%, 5+ 0%" in line
    assert "learner failure rate on diagnostic tasks with it: 0 6%, 1 15%, 2 8%, 3-4 75%" in line
    assert line.endswith("values still empty or nearly empty: 2, 3-4, 5+")


def test_a_new_factor_with_feedback_rows_is_read_from_them() -> None:
    grown = add_factor(SPACE, REALIZABLE["num_write"], round=2)
    rows = [
        ValueFeedback(
            campaign_id="c", round=1, factor="num_write", value=v, coverage=c, n_verified=n
        )
        for v, c, n in (("0", 0.5, 10), ("1", 0.48, 9), ("2", 0.02, 1))
    ]
    prompt = LLMDesigner(GATEWAY).prompt(grown, feedback(*rows), 2, 60)
    line = next(x for x in steering(prompt).splitlines() if x.startswith("- num_write"))
    assert "from the feedback, share of the verified data with each value: 0 50%, 1 48%" in line
    assert line.endswith("values still empty or nearly empty: 2, 3-4, 5+")


def test_an_unmeasured_new_factor_is_said_to_be_so() -> None:
    grown = add_factor(SPACE, REALIZABLE["num_write"], round=2)
    prompt = LLMDesigner(GATEWAY).prompt(grown, feedback(), 2, 60)
    line = next(x for x in steering(prompt).splitlines() if x.startswith("- num_write"))
    assert "not measured yet" in line and line.endswith("empty: 0, 1, 2, 3-4, 5+")


def test_a_cold_start_prompt_keeps_every_rule_and_defines_what_they_name() -> None:
    prompt = LLMDesigner(GATEWAY).prompt(SPACE, None, 1, 60)
    for rule in domain_plugin("airline").rules():
        assert f"- {rule.text}" in prompt
    assert "Some rules name num_write, num_read and computation, which are not factors" in prompt
    assert f"- num_write: {REALIZABLE['num_write'].guidance}" in prompt


def test_challenges_and_difficulty_are_defined() -> None:
    prompt = LLMDesigner(GATEWAY).prompt(SPACE, None, 1, 60)
    challenges = next(f for f in SPACE.active_factors if f.name == "interaction_challenge")
    for value in challenges.values:
        assert f'  - {value}: "{ACTING[value]}"' in prompt
    assert "It counts the tool calls of the task's resolution: easy 2-3, medium 4-5, hard 6+" in (
        prompt
    )


def test_an_invented_factor_is_shown_with_its_definition_and_values() -> None:
    invented = Factor(
        name="passengers",
        values=["1", "2+"],
        definition="How many passengers the request is for.",
        origin=FactorOrigin.FAILURE_DRIVEN,
    )
    grown = add_factor(SPACE, invented, round=2)
    prompt = LLMDesigner(GATEWAY).prompt(grown, feedback(), 2, 60)
    space = prompt.split("## Current synthesis space", 1)[1].split("## Steering signal", 1)[0]
    assert '"passengers": [\n  "1",\n  "2+"\n ]' in space
    assert (
        "- passengers (experimental, select 1): Defined as: How many passengers the request is "
        "for." in space
    )
    line = next(x for x in steering(prompt).splitlines() if x.startswith("- passengers"))
    assert line.startswith(
        "- passengers with values 1, 2+ (defined as: How many passengers the request is for.)"
    )
