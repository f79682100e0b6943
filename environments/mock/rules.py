"""The mock feasibility rule (:data:`.generator.CHECKS`) in sentences, for prompts.

``tests/environments/test_rules.py`` checks that every rule id the checks give is stated. The
``computation`` sentence never reaches a prompt: a mock space cannot hold that factor.
"""

from __future__ import annotations

import functools

from evosyn.buckets import DIFFICULTY_CALLS
from evosyn.environments.feasibility import Rule
from evosyn.environments.kit.rules import difficulties, write_counts
from evosyn.environments.mock.generator import infeasible

FAMILIES = ("task_creation", "task_status_update")
OUTCOMES = ("fulfill", "refuse")


@functools.cache
def rules() -> tuple[Rule, ...]:
    """The sentences, each naming the rule ids of the checks it states."""
    return (
        Rule(
            "num_read is at most 1: the one look-up tool is get_users.",
            ("one_lookup",),
        ),
        Rule(
            "computation is none: mock has no calculator and nothing to compute.",
            ("no_computation",),
        ),
        Rule(
            "tool_use_pattern=lookup_then_act needs the look-up: num_read=1.",
            ("lookup_without_read",),
        ),
        Rule(
            "expected_outcome=refuse goes only with task_family=task_status_update (a "
            "deletion, which the agent hands to a human): difficulty_profile=easy, num_read=1, "
            "num_write=0, and never tool_use_pattern=batched_multi_item_action.",
            ("refusal_family", "refusal_shape", "refusal_batch"),
        ),
        Rule(
            "tool_use_pattern=escalation_handoff and policy_or_constraint_focus="
            "no_deletion_transfer go only with expected_outcome=refuse.",
            ("handoff_fulfil",),
        ),
        Rule(
            "A fulfilled request writes: num_write is not 0.",
            ("fulfil_without_write",),
        ),
        Rule(
            "The tool calls (at most one look-up, then the writes) must fit difficulty_profile: "
            f"{difficulties()} tool calls.",
            ("write_calls",),
        ),
        write_counts(
            infeasible,
            FAMILIES,
            OUTCOMES,
            tuple(DIFFICULTY_CALLS),
            ("write_calls",),
        ),
    )
