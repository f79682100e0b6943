"""The kit's feasibility checks: every conflict in order, ``first`` the first one's reason, and
a check that assumes an earlier rule skipped when that rule did not pass."""

from __future__ import annotations

import pytest

from evosyn.environments.feasibility import Asked, Checks, Conflict
from evosyn.environments.kit.rules import calculation_rules, computation_rule, opening_rules


def _checks() -> Checks:
    checks = Checks()

    @checks.rule("no_reads")
    def _no_reads(a: Asked) -> str | None:
        return "no reads" if a.reads == "0" else None

    @checks.rule("refusal_writes")
    def _refusal_writes(a: Asked) -> str | None:
        return "a refusal writes" if a.outcome == "refuse" and a.writes != "0" else None

    @checks.rule("few", "many", after=("refusal_writes",))
    def _counts(a: Asked) -> Conflict | None:
        if a.writes == "1":
            return Conflict("few", "one write is too few")
        return Conflict("many", "too many writes") if a.writes == "5+" else None

    @checks.rule("late", after=("few", "many"))
    def _late(a: Asked) -> str | None:
        return "always"

    return checks


def test_every_conflict_is_given_in_order_and_first_is_the_first_reason() -> None:
    checks = _checks()
    selections = {"num_read": ["0"], "expected_outcome": ["fulfill"], "num_write": ["1"]}
    assert [c.rule for c in checks.conflicts(selections)] == ["no_reads", "few"]
    assert checks.first(selections) == "no reads"
    assert checks.ids == ("no_reads", "refusal_writes", "few", "many", "late")


def test_a_check_is_skipped_when_a_rule_it_assumes_did_not_pass() -> None:
    checks = _checks()
    # refusal_writes fires: the counts are not asked, nor the check that assumes them.
    refused = {"expected_outcome": ["refuse"], "num_write": ["5+"]}
    assert [c.rule for c in checks.conflicts(refused)] == ["refusal_writes"]
    assert [c.rule for c in checks.conflicts({"num_write": ["2"]})] == ["late"]


def test_ids_are_unique_and_after_names_earlier_rules() -> None:
    checks = _checks()
    with pytest.raises(ValueError, match="taken"):
        checks.rule("few")
    with pytest.raises(ValueError, match="not registered before"):
        checks.rule("new", after=("later",))


def test_a_check_may_only_give_its_own_rules() -> None:
    checks = Checks()
    checks.rule("mine")(lambda a: Conflict("other", "x"))
    with pytest.raises(ValueError, match="gave rule 'other'"):
        checks.conflicts({})


def test_shared_checks_register_their_ids_in_order_with_their_reasons() -> None:
    checks = Checks()
    opening_rules(checks, first_read="reads something", unvaried=("inquiry",))
    computation_rule(checks, ("order", "inquiry"), lambda f, o: {"none", "aggregate"})
    calculation_rules(
        checks, ("order", "inquiry"), lambda f, o: {"none"}, pattern="calc", prefix="calc"
    )
    assert checks.ids == (
        "no_reads",
        "proposal",
        "computation",
        "calc_without_computation",
        "calc_without_sum",
    )
    selections = {
        "task_family": ["order"],
        "expected_outcome": ["fulfill"],
        "num_read": ["0"],
        "computation": ["conditional"],
        "tool_use_pattern": ["calc"],
    }
    assert [c.reason for c in checks.conflicts(selections)] == [
        "num_read=0 is impossible: every task reads something",
        "computation=conditional cannot be realized by order/fulfill",
        "tool_use_pattern=calc has nothing to compute in order/fulfill",
    ]
    # An unknown family or outcome is none of these rules' business.
    assert checks.conflicts({**selections, "num_read": ["1"], "task_family": ["other"]}) == []
    assert Asked.of({"task_family": ["order"], "expected_outcome": ["refuse"]}).known(["order"])


def test_ids_but_is_every_rule_registered_so_far_but_those() -> None:
    checks = _checks()
    assert checks.ids_but("refusal_writes", "late") == ("no_reads", "few", "many")
    with pytest.raises(ValueError, match="not registered"):
        checks.ids_but("later")
