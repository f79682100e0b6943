"""A factor the Reflector invented (``passengers``) and a blueprint asking for it, for tests.

Shared by the tests of the LLM Generator and of the single synthesis agent, which must meet an
invented factor alike.
"""

from __future__ import annotations

from evosyn.agents.gateway import Gateway, GatewaySettings
from evosyn.environments.airline.generator import AirlineGenerator
from evosyn.records import Blueprint, Factor, FactorStatus, SynthesisSpace, SynthTask
from evosyn.space import add_factor, seed_space

GATEWAY = Gateway("test", GatewaySettings(model="openai/unused", api_base="http://127.0.0.1:9/v1"))
PASSENGERS = Factor(
    name="passengers",
    values=["1", "2+"],
    definition="How many passengers the request is for: 1 alone, 2+ for two or more.",
    status=FactorStatus.EXPERIMENTAL,
)
SPACE = add_factor(seed_space("airline", "c"), PASSENGERS, round=2)
SELECTIONS = {
    "task_family": ["flight_cancellation"],
    "expected_outcome": ["fulfill"],
    "policy_or_constraint_focus": ["fare_rule_constraint"],
    "tool_use_pattern": ["lookup_verify_then_modify"],
    "interaction_challenge": [],
    "difficulty_profile": ["medium"],
}


def spaces(campaign_id: str, version: int) -> SynthesisSpace | None:
    return SPACE if (campaign_id, version) == ("c", SPACE.version) else None


def invented_reference() -> tuple[Blueprint, SynthTask]:
    """A real cancellation task, and a blueprint of the grown space asking for 2+ passengers."""
    plain = Blueprint(
        campaign_id="c",
        round=2,
        blueprint_id="bp",
        direction_id="d",
        space_version=1,
        selections=SELECTIONS,
        intent="cancel a reservation",
    )
    synth = AirlineGenerator().generate(plain, 3)
    wanted = plain.model_copy(
        update={
            "space_version": SPACE.version,
            "selections": {**SELECTIONS, "passengers": ["2+"]},
        }
    )
    return wanted, synth
