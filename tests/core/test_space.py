"""Seed spaces, revisions and budget allocation."""

from __future__ import annotations

import pytest

from evosyn.environments.registry import list_domains
from evosyn.records import Factor, FactorStatus
from evosyn.space import (
    add_factor,
    allocate_budget,
    check_revision,
    seed_space,
    set_status,
)


@pytest.mark.parametrize("domain", list_domains())
def test_seed_spaces_have_the_six_shared_axes(domain: str) -> None:
    space = seed_space(domain, "c")
    assert [f.name for f in space.factors] == [
        "task_family",
        "expected_outcome",
        "policy_or_constraint_focus",
        "tool_use_pattern",
        "interaction_challenge",
        "difficulty_profile",
    ]
    assert space.version == 1 and space.domain == domain
    assert all(f.status == FactorStatus.SEED for f in space.factors)
    assert space.factor("expected_outcome").values == ["fulfill", "refuse"]
    assert (
        space.factor("interaction_challenge").min_select,
        space.factor("interaction_challenge").max_select,
    ) == (0, 2)


def test_seed_space_sizes_follow_the_paper() -> None:
    sizes = {
        d: [len(f.values) for f in seed_space(d, "c").factors]
        for d in ("airline", "retail", "telecom")
    }
    assert sizes == {
        "airline": [6, 2, 8, 7, 7, 3],
        "retail": [6, 2, 8, 7, 7, 3],
        "telecom": [6, 2, 6, 6, 6, 3],
    }


def test_unknown_domain_is_named() -> None:
    with pytest.raises(ValueError, match="unknown domain 'car'"):
        seed_space("car", "c")


def test_adding_a_factor_makes_a_new_version_and_keeps_seeds() -> None:
    v1 = seed_space("airline", "c")
    v2 = add_factor(v1, Factor(name="num_write", values=["0", "1", "2", "3-4", "5+"]), round=2)
    assert (v2.version, v2.round) == (2, 2)
    assert v2.factor("num_write").status == FactorStatus.EXPERIMENTAL
    assert v2.factor("num_write").round_introduced == 2
    check_revision(v1, v2)
    assert len(v1.factors) == 6, "the old version is untouched"
    with pytest.raises(ValueError, match="already in the synthesis space"):
        add_factor(v2, Factor(name="num_write", values=["0"]), round=3)
    v3 = set_status(v2, "num_write", FactorStatus.STANDARD, round=3)
    assert v3.version == 3 and v3.factor("num_write").status == FactorStatus.STANDARD
    check_revision(v2, v3)


def test_seed_factors_cannot_be_removed_renamed_or_deprecated() -> None:
    v1 = seed_space("airline", "c")
    with pytest.raises(ValueError, match="seed factor 'task_family' cannot change status"):
        set_status(v1, "task_family", FactorStatus.DEPRECATED, round=1)
    removed = v1.model_copy(update={"version": 2, "factors": v1.factors[1:]})
    with pytest.raises(ValueError, match="'task_family' was removed"):
        check_revision(v1, removed)
    renamed = v1.model_copy(
        update={
            "version": 2,
            "factors": [v1.factors[0].model_copy(update={"name": "family"}), *v1.factors[1:]],
        }
    )
    with pytest.raises(ValueError, match="'task_family' was removed"):
        check_revision(v1, renamed)
    merged = v1.model_copy(
        update={
            "version": 2,
            "factors": [
                v1.factors[0].model_copy(
                    update={"values": [*v1.factors[0].values, "flight_change_or_cancel"]}
                ),
                *v1.factors[1:],
            ],
        }
    )
    with pytest.raises(ValueError, match="changed its values"):
        check_revision(v1, merged)
    with pytest.raises(ValueError, match="must be version 2"):
        check_revision(v1, v1)


@pytest.mark.parametrize(
    ("weights", "total", "expected"),
    [
        ([1, 1, 1], 10, [4, 3, 3]),
        ([0.5, 0.25, 0.25], 4, [2, 1, 1]),
        ([0, 0], 3, [2, 1]),
        ([3, 0], 5, [5, 0]),
    ],
)
def test_allocation_sums_to_the_budget(
    weights: list[float], total: int, expected: list[int]
) -> None:
    parts = allocate_budget(weights, total)
    assert parts == expected and sum(parts) == total


def test_allocation_rejects_bad_weights() -> None:
    for weights in ([], [-1.0], [float("nan")]):
        with pytest.raises(ValueError, match="weights"):
            allocate_budget(weights, 3)
