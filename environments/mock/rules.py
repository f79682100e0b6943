"""The mock feasibility rule (:func:`.generator.infeasible`) in sentences, for prompts.

``tests/environments/test_rules.py`` checks that every reason ``infeasible`` gives is stated
(for the factors a mock space can hold: no ``computation``, which mock cannot realize).
"""

from __future__ import annotations

import functools

from evosyn.buckets import DIFFICULTY_CALLS
from evosyn.environments.kit.rules import Rule, difficulties, write_counts
from evosyn.environments.mock.generator import infeasible

FAMILIES = ("task_creation", "task_status_update")
OUTCOMES = ("fulfill", "refuse")


@functools.cache
def rules() -> tuple[Rule, ...]:
    """The sentences, one per kind of reason ``infeasible`` gives."""
    return (
        Rule(
            "num_read is at most 1: the one look-up tool is get_users.",
            r"mock has one look-up",
        ),
        Rule(
            "tool_use_pattern=lookup_then_act needs the look-up: num_read=1.",
            r"lookup_then_act needs the look-up",
        ),
        Rule(
            "expected_outcome=refuse goes only with task_family=task_status_update (a "
            "deletion, which the agent hands to a human): difficulty_profile=easy, num_read=1, "
            "num_write=0, and never tool_use_pattern=batched_multi_item_action.",
            r"mock refuses only deletions|a refused deletion",
        ),
        Rule(
            "tool_use_pattern=escalation_handoff and policy_or_constraint_focus="
            "no_deletion_transfer go only with expected_outcome=refuse.",
            r"a hand-off is mock's only refusal",
        ),
        Rule(
            "A fulfilled request writes: num_write is not 0.",
            r"a fulfilled mock request writes",
        ),
        Rule(
            "The tool calls (at most one look-up, then the writes) must fit difficulty_profile: "
            f"{difficulties()} tool calls.",
            r"num_write=\S+ does not fit difficulty_profile",
        ),
        write_counts(
            infeasible,
            FAMILIES,
            OUTCOMES,
            tuple(DIFFICULTY_CALLS),
            r"num_write=\S+ does not fit difficulty_profile",
        ),
    )
