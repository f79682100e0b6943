"""The programmatic Planner: cardinalities, hard constraints, preferences, determinism."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

import pytest

from evosyn.agents.planner import PlanningError, ProgrammaticPlanner
from evosyn.records import Direction, Factor, ObjectiveType
from evosyn.space import add_factor, seed_space


def _direction(budget: int = 200, **constraints: object) -> Direction:
    return Direction(
        campaign_id="c",
        round=1,
        direction_id="d0",
        space_version=1,
        objective=ObjectiveType.EXPLORATION,
        budget=budget,
        **constraints,  # type: ignore[arg-type]
    )


def test_blueprints_obey_cardinalities_and_hard_constraints() -> None:
    space = seed_space("airline", "c")
    direction = _direction(
        allowed={"task_family": ["flight_cancellation", "flight_change"]},
        forbidden={"difficulty_profile": ["easy"], "interaction_challenge": ["emotional_pressure"]},
    )
    blueprints = ProgrammaticPlanner().plan(space, direction, seed=1)
    assert len(blueprints) == 200 and len({b.blueprint_id for b in blueprints}) == 200
    for b in blueprints:
        b.validate_against(space)
        assert b.selections["task_family"][0] in {"flight_cancellation", "flight_change"}
        assert b.selections["difficulty_profile"] != ["easy"]
        assert "emotional_pressure" not in b.selections["interaction_challenge"]
    sizes = Counter(len(b.selections["tool_use_pattern"]) for b in blueprints)
    assert set(sizes) == {1, 2, 3}, "every allowed cardinality is sampled"
    assert Counter(len(b.selections["interaction_challenge"]) for b in blueprints)[0] > 0


def test_preferred_values_are_favoured_not_forced() -> None:
    space = seed_space("retail", "c")
    blueprints = ProgrammaticPlanner().plan(
        space, _direction(preferred={"task_family": ["return_delivered_order"]}), seed=2
    )
    families = Counter(b.selections["task_family"][0] for b in blueprints)
    # weight 4 against 5 others of weight 1: about 4/9 of the mass
    assert 0.3 < families["return_delivered_order"] / 200 < 0.6
    assert len(families) == 6


def test_weights_set_the_mix_of_a_factor() -> None:
    space = seed_space("airline", "c")
    weights = {"difficulty_profile": {"easy": 0.1, "medium": 1.0, "hard": 0.4}}
    blueprints = ProgrammaticPlanner().plan(space, _direction(weights=weights), seed=2)
    mix = Counter(b.selections["difficulty_profile"][0] for b in blueprints)
    # 1 : 0.4 : 0.1 of 1.5 -> about 0.67, 0.27, 0.07
    assert 0.55 < mix["medium"] / 200 < 0.8 and 0.15 < mix["hard"] / 200 < 0.4
    assert 0 < mix["easy"] / 200 < 0.15
    left_out = {"difficulty_profile": {"hard": 1.0}}
    blueprints = ProgrammaticPlanner().plan(space, _direction(weights=left_out), seed=2)
    assert {tuple(b.selections["difficulty_profile"]) for b in blueprints} == {("hard",)}


def test_weights_are_soft_where_the_domain_rules_their_values_out() -> None:
    space = seed_space("airline", "c")

    def never_easy_cancellations(selections: Mapping[str, Sequence[str]]) -> str | None:
        if selections["task_family"] == ["flight_cancellation"] and selections[
            "difficulty_profile"
        ] == ["easy"]:
            return "a cancellation is never easy"
        return None

    direction = _direction(
        budget=20,
        allowed={"task_family": ["flight_cancellation"]},
        weights={"difficulty_profile": {"easy": 1.0}},
    )
    blueprints = ProgrammaticPlanner(never_easy_cancellations).plan(space, direction, seed=0)
    assert len(blueprints) == 20
    assert all(b.selections["difficulty_profile"] != ["easy"] for b in blueprints)


def test_same_seed_same_blueprints_other_seed_others() -> None:
    space = seed_space("telecom", "c")
    planner = ProgrammaticPlanner()
    a = planner.plan(space, _direction(budget=20), seed=5)
    assert a == planner.plan(space, _direction(budget=20), seed=5)
    assert a != planner.plan(space, _direction(budget=20), seed=6)


def test_infeasible_combinations_and_avoid_patterns_are_never_proposed() -> None:
    space = seed_space("airline", "c")

    def refuse_without_write(selections: Mapping[str, Sequence[str]]) -> str | None:
        if "refuse" in selections["expected_outcome"] and (
            "state_change_with_confirmation" in selections["tool_use_pattern"]
        ):
            return "a refusal makes no state change"
        return None

    direction = _direction(avoid_patterns=["task_family=flight_booking & difficulty_profile=hard"])
    for b in ProgrammaticPlanner(refuse_without_write).plan(space, direction, seed=3):
        assert refuse_without_write(b.selections) is None
        assert not (
            b.selections["task_family"] == ["flight_booking"]
            and b.selections["difficulty_profile"] == ["hard"]
        )


def test_evolved_factor_values_become_difficulty_controls() -> None:
    space = add_factor(
        seed_space("airline", "c"),
        Factor(name="num_write", values=["0", "1", "2", "3-4", "5+"]),
        round=1,
    )
    direction = _direction(budget=30, allowed={"num_write": ["3-4"]}).model_copy(
        update={"space_version": 2}
    )
    for b in ProgrammaticPlanner().plan(space, direction, seed=0):
        assert b.selections["num_write"] == ["3-4"] and b.difficulty_controls == {
            "num_write": "3-4"
        }


def test_unsatisfiable_direction_names_the_blocking_constraint() -> None:
    space = seed_space("airline", "c")
    with pytest.raises(PlanningError, match="expected_outcome needs 1 value"):
        ProgrammaticPlanner().plan(
            space, _direction(forbidden={"expected_outcome": ["fulfill", "refuse"]}), seed=0
        )
    with pytest.raises(PlanningError, match=r"no feasible blueprint.*always no"):
        ProgrammaticPlanner(lambda s: "always no").plan(space, _direction(budget=1), seed=0)
    with pytest.raises(PlanningError, match="refers to space v2, not v1"):
        ProgrammaticPlanner().plan(
            space, _direction().model_copy(update={"space_version": 2}), seed=0
        )
    with pytest.raises(ValueError, match="unknown values"):
        ProgrammaticPlanner().plan(space, _direction(allowed={"task_family": ["teleport"]}), seed=0)
