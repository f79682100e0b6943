"""The LLM Generator's factor lines define a requested shape value in the domain's words."""

from __future__ import annotations

import pytest

from evosyn.agents.generator.contract import definitions, underivable
from evosyn.agents.prompt_context import value_meanings
from evosyn.environments.registry import domain_plugin, get_domain
from evosyn.records import Blueprint
from evosyn.space import seed_space


@pytest.mark.parametrize(
    ("domain", "factor", "value"),
    [
        ("airline", "trip_shape", "round_trip"),
        ("airline", "payment_split", "certificate_and_card"),
        ("retail", "write_mix", "several_kinds"),
    ],
)
def test_a_selected_shape_value_is_defined_beside_its_factor(
    domain: str, factor: str, value: str
) -> None:
    plugin = domain_plugin(domain)
    space = seed_space(domain, "defs")
    known = {**{f.name: f for f in space.factors}, **plugin.realizable}
    selections = {f.name: [f.values[0]] for f in space.active_factors}
    selections.pop("interaction_challenge", None)
    blueprint = Blueprint.model_construct(
        blueprint_id="b", selections={**selections, factor: [value]}, controls={}
    )
    [line] = [x for x in definitions(get_domain(domain), blueprint, known) if x.startswith(factor)]
    meaning = value_meanings(factor, [value])[value]
    assert f"{value}: {meaning.rstrip('.')}." in line
    # Only the selected value is defined: another value's meaning is not shown.
    others = value_meanings(factor, [v for v in known[factor].values if v != value])
    assert others and not any(m.rstrip(".") in line for m in others.values())


def test_a_factor_added_from_a_probe_is_defined_by_what_its_feature_counts() -> None:
    # A live Reflector added num_numeric_args; the Generator saw only "honour its value as
    # named" and wrote tasks with one derived number where 2, 3-4 and 5+ were asked.
    space = seed_space("airline", "defs")
    known = {f.name: f for f in space.factors}
    selections = {f.name: [f.values[0]] for f in space.active_factors}
    selections.pop("interaction_challenge", None)
    blueprint = Blueprint.model_construct(
        blueprint_id="b", selections={**selections, "num_numeric_args": ["3-4"]}, controls={}
    )
    [line] = [
        x
        for x in definitions(get_domain("airline"), blueprint, known)
        if x.startswith("num_numeric_args")
    ]
    assert "gold_actions" in line and "derived" in line and "3-4" in line


def test_a_refusal_is_told_it_keeps_the_family_it_was_asked_for() -> None:
    # Live: a model declined two "seat_or_baggage_service, refuse" blueprints as contradictory,
    # since the line said a task without writes counts as loyalty_or_membership_service.
    space = seed_space("airline", "defs")
    known = {f.name: f for f in space.factors}
    selections = {f.name: [f.values[0]] for f in space.active_factors}
    selections.pop("interaction_challenge", None)
    selections |= {"task_family": ["seat_or_baggage_service"], "expected_outcome": ["refuse"]}
    blueprint = Blueprint.model_construct(blueprint_id="b", selections=selections, controls={})
    [line] = [
        x
        for x in definitions(get_domain("airline"), blueprint, known)
        if x.startswith("task_family")
    ]
    assert "except in a refusal" in line and "keeps the family" in line
    # ... which is what the check does: a refusal that wrote nothing is not held to its family.
    assert underivable("task_family", ["refuse"], {"num_write": "0"})
    assert not underivable("task_family", ["fulfill"], {"num_write": "0"})
