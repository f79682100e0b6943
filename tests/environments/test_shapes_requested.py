"""Task shapes as factor values: declared by the ontologies, honoured, and read back from gold.

The candidate factors (``write_mix``, ``trip_shape``, ``payment_split``, ``fault_kind``) are
realizable with a meaning per value and rule sentences for the prompts; a requested value is
made by the programmatic Generator and shows in the gold; a value it cannot make is not
planned and, asked for anyway, is rejected with a reason naming it.
"""

from __future__ import annotations

import pytest

from evosyn.agents.planner.programmatic import ProgrammaticPlanner
from evosyn.agents.prompt_context import value_meanings
from evosyn.environments.kit.rules import unstated
from evosyn.environments.kit.screen import GeneratorRejection
from evosyn.environments.registry import (
    declared_meanings,
    domain_plugin,
    get_domain,
    ontology_candidates,
)
from evosyn.environments.shapes import official_shapes, shape_match, shape_values
from evosyn.records import Blueprint, Direction
from evosyn.space import add_factor, seed_space
from tests.environments.test_rules import found_rules

CANDIDATES = {
    "airline": ["write_mix", "trip_shape", "payment_split"],
    "retail": ["write_mix"],
    "telecom": ["fault_kind"],
}


def _candidates(domain: str) -> list[str]:
    text = domain_plugin(domain).ontology.read_text("utf-8")
    return [c.name for c in ontology_candidates(text)]


@pytest.mark.parametrize("domain", sorted(CANDIDATES))
def test_candidates_are_realizable_outside_the_seed_space_with_meanings(domain: str) -> None:
    plugin = domain_plugin(domain)
    assert _candidates(domain) == CANDIDATES[domain]
    seed = {f.name for f in seed_space(domain, "c").factors}
    for name in CANDIDATES[domain]:
        factor = plugin.realizable[name]
        assert name not in seed  # make run's seed space is unchanged
        meanings = value_meanings(name, factor.values)
        assert sorted(meanings) == sorted(factor.values)
        assert all(len(m) > 20 for m in meanings.values())
    assert value_meanings("task_family", ["flight_booking"]) == {}


def test_a_factor_two_domains_declare_means_one_thing() -> None:
    assert declared_meanings()["write_mix"]["several_kinds"].startswith("The gold calls two")
    assert "no_write" in declared_meanings()["write_mix"]


@pytest.mark.parametrize("domain", sorted(CANDIDATES))
def test_every_candidate_rule_is_stated_and_given(domain: str) -> None:
    plugin = domain_plugin(domain)
    stated = {i for rule in plugin.rules() for i in rule.ids}
    assert unstated(plugin.rules(), plugin.checks.ids) == []
    assert stated <= set(plugin.checks.ids)
    text = plugin.ontology.read_text("utf-8")
    ids = {i for c in ontology_candidates(text) for r in c.rules for i in r.ids}
    assert sorted(ids - set(found_rules(domain))) == []


def test_official_gold_reads_as_the_official_shapes() -> None:
    counts: dict[str, int] = {}
    for task in get_domain("airline").tasks("base"):
        for key, value in shape_values("airline", task).items():
            counts[f"{key}={value}"] = counts.get(f"{key}={value}", 0) + 1
    assert counts["write_mix=several_kinds"] == official_shapes("airline").multi_write
    assert counts["trip_shape=round_trip"] == counts["trip_shape=connection"] == 3
    assert counts["payment_split=certificate_and_card"] == 3
    telecom = get_domain("telecom").tasks("base")[0]
    realized = shape_values("telecom", telecom)
    assert list(realized) == ["fault_kinds"]
    kind = realized["fault_kinds"].split(";")[0]
    assert shape_match("fault_kind", kind, realized) is True
    assert shape_match("trip_shape", "one_way", realized) is None


def _planned(domain: str, factor: str, value: str, n: int) -> list[Blueprint]:
    plugin = domain_plugin(domain)
    space = add_factor(seed_space(domain, "req", round=1), plugin.realizable[factor], 1)
    direction = Direction(
        campaign_id="req",
        round=1,
        direction_id=f"r1-{factor}-{value}",
        space_version=space.version,
        objective="exploration",
        allowed={factor: [value]},
        budget=n,
    )
    return ProgrammaticPlanner(plugin.infeasible).plan(space, direction, 5)


@pytest.mark.parametrize(
    ("domain", "factor", "value"),
    [
        ("airline", "trip_shape", "round_trip"),
        ("airline", "trip_shape", "connection"),
        ("airline", "payment_split", "gift_card_and_card"),
        ("airline", "write_mix", "several_kinds"),
        ("retail", "write_mix", "several_kinds"),
        ("retail", "write_mix", "one_kind"),
        ("telecom", "fault_kind", "break_app_sms_permission"),
        ("telecom", "fault_kind", "bad_wifi_calling"),
    ],
)
def test_a_requested_shape_is_made_and_read_back(domain: str, factor: str, value: str) -> None:
    generator = domain_plugin(domain).generator()
    made = 0
    for blueprint in _planned(domain, factor, value, 4):
        try:
            task = generator.generate(blueprint, 5).task
        except GeneratorRejection as rejection:
            assert factor in str(rejection) or "counts" in str(rejection)
            continue
        made += 1
        assert shape_match(factor, value, shape_values(domain, task)), blueprint.selections
    assert made >= 3


@pytest.mark.parametrize(
    ("domain", "selections", "named"),
    [
        ("airline", {"task_family": ["flight_change"], "trip_shape": ["connection"]}, "trip_shape"),
        (
            "airline",
            {"task_family": ["flight_booking"], "computation": ["conditional"]}
            | {"write_mix": ["several_kinds"]},
            "write_mix",
        ),
        ("retail", {"task_family": ["order_cancellation"], "write_mix": ["no_write"]}, "write_mix"),
        (
            "telecom",
            {"task_family": ["device_upgrade"], "fault_kind": ["airplane_mode_on"]},
            "fault_kind",
        ),
    ],
)
def test_what_cannot_be_made_is_not_planned_and_rejected_with_its_factor_named(
    domain: str, selections: dict[str, list[str]], named: str
) -> None:
    plugin = domain_plugin(domain)
    outcome = "refuse" if domain == "telecom" else "fulfill"
    asked = {"expected_outcome": [outcome], **selections}
    reason = plugin.infeasible(asked)
    assert reason is not None and named in reason
    blueprint = Blueprint(
        campaign_id="req",
        round=1,
        blueprint_id="b-unmade",
        direction_id="d",
        space_version=2,
        selections=asked,
        intent="",
    )
    with pytest.raises(GeneratorRejection, match=named):
        plugin.generator().generate(blueprint, 5)
