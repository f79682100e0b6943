"""The one count check: the programmatic Generators' rejection and the LLM roles' contract."""

from __future__ import annotations

import contextlib

import pytest

from evosyn.environments.base import FunctionalSymbol
from evosyn.environments.kit.grounding import CountMiss, check_counts, count_misses
from evosyn.environments.kit.screen import GeneratorRejection
from evosyn.environments.registry import domain_plugin, domains_offering
from evosyn.records import Blueprint
from evosyn.space import seed_space

READ, WRITE, COMPUTE = FunctionalSymbol.READ, FunctionalSymbol.WRITE, FunctionalSymbol.COMPUTE


def blueprint(controls: dict[str, str] | None = None, **selections: str) -> Blueprint:
    return Blueprint(
        campaign_id="c",
        round=1,
        blueprint_id="bp",
        direction_id="d",
        space_version=1,
        selections={k: [v] for k, v in selections.items()},
        intent="counts",
        difficulty_controls=controls or {},
    )


def test_every_count_miss_is_listed_in_order() -> None:
    wanted = blueprint(num_read="2", num_write="3-4", difficulty_profile="hard")
    assert count_misses(wanted, reads=1, writes=1, calls=2) == [
        CountMiss("num_read", "2", 1),
        CountMiss("num_write", "3-4", 1),
        CountMiss("difficulty_profile", "hard", 2),
    ]
    assert count_misses(wanted, reads=2, writes=4, calls=6) == []


def test_a_difficulty_control_wins_and_an_uncountable_value_is_no_miss() -> None:
    controlled = blueprint({"num_write": "0"}, num_write="1")
    assert count_misses(controlled, reads=0, writes=1, calls=1) == [CountMiss("num_write", "0", 1)]
    assert (
        count_misses(
            blueprint(num_read="few", difficulty_profile="epic"), reads=9, writes=0, calls=9
        )
        == []
    )


@pytest.mark.parametrize(
    ("symbols", "reason"),
    [
        ([READ, WRITE], "num_read=3-4 was not met: the task has 1"),
        ([READ, READ, READ], "num_write=1 was not met: the task has 0"),
        ([READ, READ, READ, WRITE], "difficulty_profile=hard was not met: 4 tool calls"),
    ],
)
def test_the_programmatic_generators_reject_on_the_first_miss(
    symbols: list[FunctionalSymbol], reason: str
) -> None:
    wanted = blueprint(num_read="3-4", num_write="1", difficulty_profile="hard")
    with pytest.raises(GeneratorRejection) as caught:
        check_counts(symbols, wanted)
    assert str(caught.value) == reason
    check_counts([READ, READ, READ, COMPUTE, COMPUTE, WRITE], wanted)


@pytest.mark.parametrize("domain", domains_offering("generator"))
def test_a_generator_never_changes_the_records_it_shares_with_every_replay(domain: str) -> None:
    # GroundedGenerator.db hands out the parsed base's own records (no copies): a Generator
    # that changed one would change every later replay's database.
    generator = domain_plugin(domain).generator()
    before = generator.db.model_dump()
    families = next(f for f in seed_space(domain, "t").active_factors if f.name == "task_family")
    for family in families.values:
        for outcome in ("fulfill", "refuse"):
            for seed in range(2):
                wanted = blueprint(task_family=family, expected_outcome=outcome)
                with contextlib.suppress(GeneratorRejection):
                    generator.generate(wanted, seed)
    assert generator.db.model_dump() == before
