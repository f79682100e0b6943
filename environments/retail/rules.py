"""The retail feasibility rule (:data:`.generator.CHECKS`) in sentences, for prompts.

Value lists come from the Generator's constants or from asking ``infeasible`` itself;
``tests/environments/test_rules.py`` checks that every rule id the checks give is stated.
"""

from __future__ import annotations

import functools

from evosyn.buckets import DIFFICULTY_CALLS
from evosyn.environments.kit.grounding import PROPOSAL_CHALLENGES, REALIZABLE
from evosyn.environments.kit.rules import Rule, by_family, difficulties, listing, write_counts
from evosyn.environments.retail.generator import (
    BATCH_FAMILIES,
    FAMILIES,
    UNVARIED,
    WRITE_PATTERNS,
    infeasible,
)

OUTCOMES = ("fulfill", "refuse")
INQUIRY = "profile_or_inquiry"


@functools.cache
def rules() -> tuple[Rule, ...]:
    """The sentences, each naming the rule ids of the checks it states."""
    return (
        Rule(
            "num_read is never 0: every task authenticates the caller with a look-up.",
            ("no_reads",),
        ),
        Rule(
            f"interaction_challenge {listing(PROPOSAL_CHALLENGES)} answers the agent's proposal "
            "of a write (the refund or price-difference method a caller leaves open): choose "
            "at most one of them, and never with expected_outcome=refuse, num_write=0 or "
            f"task_family {listing(UNVARIED)}.",
            ("proposal",),
        ),
        Rule(
            "computation takes only the values its task_family/expected_outcome can realize: "
            + by_family(
                infeasible, FAMILIES, OUTCOMES, "computation", REALIZABLE["computation"].values
            )
            + ".",
            ("computation",),
        ),
        Rule(
            "expected_outcome=refuse changes nothing: num_write=0.",
            ("refusal_writes",),
        ),
        Rule(
            f"Fulfilling any task_family but {INQUIRY} makes at least one write: num_write is "
            "not 0.",
            ("fulfil_without_write",),
        ),
        Rule(
            f"task_family={INQUIRY} makes at most one write (an address): num_write 0 or 1.",
            ("inquiry_writes",),
        ),
        Rule(
            f"tool_use_pattern {listing(sorted(WRITE_PATTERNS))} needs a write: never with "
            "expected_outcome=refuse or num_write=0.",
            ("pattern_needs_write",),
        ),
        Rule(
            "tool_use_pattern=batched_multi_item_action acts on a list of items: only with "
            f"task_family {listing(sorted(BATCH_FAMILIES))}.",
            ("batch_without_items",),
        ),
        Rule(
            "tool_use_pattern=price_or_refund_calculation needs something to compute: never "
            "with computation=none, and only where the computation list above allows "
            "aggregate or conditional.",
            ("calculation_without_computation", "calculation_without_sum"),
        ),
        Rule(
            "num_read counts every look-up the task needs (the caller, each order and product "
            "it checks); a smaller num_read is impossible. The tool calls (reads, writes, a "
            "calculate call when computation is aggregate or conditional, a hand-off when the "
            f"task transfers) must fit difficulty_profile: {difficulties()} tool calls.",
            ("reads_short", "calls_over", "calls_under"),
        ),
        write_counts(
            infeasible, FAMILIES, OUTCOMES, tuple(DIFFICULTY_CALLS), ("calls_over", "calls_under")
        ),
    )
