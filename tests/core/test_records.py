"""Records validate what crosses each boundary of the loop."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from samples import sample_records

from evosyn.records import (
    Blueprint,
    Direction,
    Factor,
    FactorOrigin,
    FactorReview,
    GenerationPlan,
    ObjectiveType,
    ReflectorDecision,
    ReviewAction,
    SynthesisSpace,
    SynthTask,
    Verification,
)
from evosyn.space import seed_space


def _blueprint(**selections: list[str]) -> Blueprint:
    base = {
        "task_family": ["flight_cancellation"],
        "expected_outcome": ["refuse"],
        "policy_or_constraint_focus": ["refund_eligibility"],
        "tool_use_pattern": ["lookup_verify_then_modify"],
        "interaction_challenge": [],
        "difficulty_profile": ["medium"],
    }
    base.update(selections)
    return Blueprint(
        campaign_id="c",
        round=1,
        blueprint_id="b",
        direction_id="d",
        space_version=1,
        selections=base,
        intent="refuse a non-refundable cancellation",
    )


def test_blueprint_obeys_the_papers_cardinalities() -> None:
    space = seed_space("airline", "c")
    _blueprint().validate_against(space)
    _blueprint(
        policy_or_constraint_focus=["refund_eligibility", "time_window_constraint"],
        interaction_challenge=["user_false_claim", "emotional_pressure"],
    ).validate_against(space)
    bad = [
        ({"task_family": ["flight_change", "flight_booking"]}, "task_family needs 1..1"),
        ({"expected_outcome": []}, "expected_outcome needs 1..1"),
        (
            {"policy_or_constraint_focus": ["refund_eligibility"] * 0},
            "policy_or_constraint_focus needs 1..2",
        ),
        (
            {
                "tool_use_pattern": [
                    "multi_entity_retrieval",
                    "policy_check_before_action",
                    "price_or_fee_recalculation",
                    "search_compare_then_book",
                ]
            },
            "needs 1..3",
        ),
        (
            {
                "interaction_challenge": [
                    "missing_information",
                    "preference_change",
                    "emotional_pressure",
                ]
            },
            "0..2",
        ),
        ({"difficulty_profile": ["impossible"]}, "unknown values"),
        ({"num_write": ["1"]}, "unknown factors"),
        ({"tool_use_pattern": ["multi_entity_retrieval", "multi_entity_retrieval"]}, "repeats"),
    ]
    for selections, message in bad:
        with pytest.raises(ValueError, match=message):
            _blueprint(**selections).validate_against(space)


def test_evolved_factor_takes_exactly_one_value() -> None:
    space = seed_space("airline", "c")
    evolved = space.model_copy(
        update={
            "version": 2,
            "factors": [
                *space.factors,
                Factor(
                    name="num_write", values=["0", "1", "2", "3-4", "5+"], status="experimental"
                ),
            ],
        }
    )
    _blueprint(num_write=["3-4"]).validate_against(evolved)
    with pytest.raises(ValueError, match=r"num_write needs 1\.\.1"):
        _blueprint().validate_against(evolved)


def test_factor_and_space_reject_malformed_input() -> None:
    with pytest.raises(ValidationError, match="duplicate values"):
        Factor(name="f", values=["a", "a"])
    with pytest.raises(ValidationError, match="max_select exceeds"):
        Factor(name="f", values=["a"], max_select=2)
    with pytest.raises(ValidationError, match=r"string_pattern_mismatch|should match pattern"):
        Factor(name="Bad Name", values=["a"])
    f = Factor(name="f", values=["a"])
    with pytest.raises(ValidationError, match="duplicate factor names"):
        SynthesisSpace(campaign_id="c", round=0, domain="airline", version=1, factors=[f, f])
    with pytest.raises(ValidationError, match="Extra inputs"):
        Factor(name="f", values=["a"], colour="red")  # type: ignore[call-arg]


def test_campaign_id_must_be_path_safe() -> None:
    for bad in ("../x", "a/b", "", "_schema", "x" * 129):
        with pytest.raises(ValidationError, match="campaign_id"):
            Verification(
                campaign_id=bad, round=0, task_id="t", trajectory_id="t", passed=True, reward=1
            )


def test_plan_budgets_must_sum_and_directions_name_real_values() -> None:
    space = seed_space("retail", "c")
    d = Direction(
        campaign_id="c",
        round=1,
        direction_id="d0",
        space_version=1,
        objective=ObjectiveType.EXPLORATION,
        budget=4,
        preferred={"task_family": ["order_cancellation"]},
    )
    d.validate_against(space)
    GenerationPlan(campaign_id="c", round=1, total_budget=4, directions=[d])
    with pytest.raises(ValidationError, match="sum to 4, not 5"):
        GenerationPlan(campaign_id="c", round=1, total_budget=5, directions=[d])
    wrong = d.model_copy(update={"forbidden": {"task_family": ["flight_booking"]}})
    with pytest.raises(ValueError, match=r"forbidden\.task_family has unknown values"):
        wrong.validate_against(space)
    with pytest.raises(KeyError, match="unknown factor 'colour'"):
        d.model_copy(update={"allowed": {"colour": ["red"]}}).validate_against(space)
    weighted = d.model_copy(update={"weights": {"task_family": {"flight_booking": 1.0}}})
    with pytest.raises(ValueError, match=r"weights\.task_family has unknown values"):
        weighted.validate_against(space)
    for bad in ({"order_cancellation": -1.0}, {"order_cancellation": 0.0}, {"x": float("nan")}):
        with pytest.raises(ValidationError, match=r"weights\.task_family must be finite"):
            Direction.model_validate(d.model_dump() | {"weights": {"task_family": bad}})


def test_reflector_adds_a_factor_only_with_add_factor() -> None:
    with pytest.raises(ValidationError, match="new_factor is required"):
        ReflectorDecision(campaign_id="c", round=1, action="add_factor", next_space_version=2)
    with pytest.raises(ValidationError, match="new_factor is required"):
        ReflectorDecision(
            campaign_id="c",
            round=1,
            action="reallocate",
            next_space_version=1,
            new_factor=Factor(name="f", values=["a"]),
        )


def test_reflector_decision_in_words_names_additions_promotions_and_deprecations() -> None:
    added = ReflectorDecision(
        campaign_id="c",
        round=1,
        action="add_factor",
        new_factor=Factor(name="num_write", values=["0", "1"], origin=FactorOrigin.COVERAGE_GAP),
        reviews=[
            FactorReview(factor="computation", action=ReviewAction.PROMOTE, evidence="e"),
            FactorReview(factor="num_read", action=ReviewAction.KEEP, evidence="e"),
            FactorReview(factor="num_numeric_args", action=ReviewAction.DEPRECATE, evidence="e"),
        ],
        next_space_version=2,
    )
    assert added.in_words() == (
        "added num_write (coverage-gap); promoted computation; deprecated num_numeric_args"
    )
    kept = ReflectorDecision(campaign_id="c", round=1, action="reallocate", next_space_version=1)
    assert kept.in_words() == "reallocated budget"


def test_a_task_cue_names_one_of_its_gold_actions() -> None:
    [task] = [r for r in sample_records() if isinstance(r, SynthTask)]
    kept = SynthTask.model_validate(task.model_dump())
    assert kept.cues == {"a0": "The reason is change of plan."}
    with pytest.raises(ValidationError, match="cues name no gold action of the task: a9"):
        SynthTask.model_validate({**task.model_dump(), "cues": {"a9": "I also want a refund."}})
