"""The official evaluation sets (diagnostic and final test), with realized properties."""

from __future__ import annotations

from evosyn.agents.learner.diagnostic import official_diagnostic, official_test
from evosyn.environments import DIAGNOSTIC_SPLIT, TEST_SPLIT, get_domain


def test_official_sets_are_the_splits_with_their_gold_properties() -> None:
    domain = get_domain("airline")
    test, diagnostic = official_test("airline"), official_diagnostic("airline")
    assert [i.task_id for i in test] == [f"official:{t.id}" for t in domain.tasks(TEST_SPLIT)]
    assert len(diagnostic) == len(domain.tasks(DIAGNOSTIC_SPLIT))
    assert {i.split for i in test} == {"test"} and {i.split for i in diagnostic} == {"diagnostic"}
    assert not {i.task_id for i in test} & {i.task_id for i in diagnostic}
    # Every item carries its gold trajectory's counts; some test tasks are write-heavy, where
    # the shipped campaign plants its weakness.
    assert all(i.realized.get("num_write") for i in test)
    assert any(i.realized["num_write"] in ("3-4", "5+") for i in test)
