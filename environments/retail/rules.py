"""The retail feasibility rule (:data:`.feasibility.CHECKS`) in sentences, for prompts.

Value lists come from the Generator's constants or from asking ``infeasible`` itself;
``tests/environments/test_rules.py`` checks that every rule id the checks give is stated.
"""

from __future__ import annotations

import functools

from evosyn.buckets import DIFFICULTY_CALLS
from evosyn.environments.feasibility import OUTCOMES, Rule
from evosyn.environments.kit.rules import (
    calculation_sentence,
    computation_sentence,
    difficulties,
    listing,
    no_reads_sentence,
    proposal_sentence,
    write_counts,
)
from evosyn.environments.retail.feasibility import (
    BATCH_FAMILIES,
    FAMILIES,
    INQUIRY,
    UNVARIED,
    WRITE_PATTERNS,
    infeasible,
)


@functools.cache
def rules() -> tuple[Rule, ...]:
    """The sentences, each naming the rule ids of the checks it states."""
    return (
        no_reads_sentence("authenticates the caller with a look-up"),
        proposal_sentence("the refund or price-difference method a caller leaves open", UNVARIED),
        computation_sentence(infeasible, FAMILIES),
        Rule(
            "expected_outcome=refuse changes nothing: num_write=0.",
            ("refusal_writes",),
        ),
        Rule(
            f"Fulfilling any task_family but {INQUIRY} makes at least one write: num_write is "
            "not 0. More writes are further requests of the caller on their other orders, on "
            "the same pending order (its address changed before its items) or on the default "
            "address (cancel one order and return from another, exchange and return, change "
            "an order's address and items), each of a family that does not come before "
            f"task_family in the order {', '.join(FAMILIES)}.",
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
        calculation_sentence("price_or_refund_calculation", "calculation"),
        Rule(
            "num_read counts every look-up the task needs (the caller, each order and product "
            "it checks, the caller's profile where interaction_challenge is missing_information "
            "or a proposal challenge, a second order found in the profile or a second product "
            "for tool_use_pattern=multi_entity_retrieval); a smaller num_read is impossible. "
            "The tool calls (reads, writes, a "
            "calculate call when computation is aggregate or conditional, a hand-off to a human "
            "agent in every refusal with policy_or_constraint_focus=scope_or_escalation_boundary, "
            "after which the caller insists on a human agent) must fit difficulty_profile: "
            f"{difficulties()} tool calls.",
            ("reads_short", "calls_over", "calls_under"),
        ),
        write_counts(
            infeasible, FAMILIES, OUTCOMES, tuple(DIFFICULTY_CALLS), ("calls_over", "calls_under")
        ),
    )
