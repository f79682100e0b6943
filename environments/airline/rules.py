"""The airline feasibility rule (:data:`.feasibility.CHECKS`) in sentences, for prompts.

Every value list and bound comes from the Generator's own constants, or from asking
``infeasible`` itself, so the sentences cannot drift from the rule they state;
``tests/environments/test_rules.py`` checks that every rule id the checks give is stated.
"""

from __future__ import annotations

import functools

from evosyn.buckets import DIFFICULTY_CALLS
from evosyn.environments.airline.feasibility import WRITE_PATTERNS, infeasible
from evosyn.environments.airline.request import (
    FAMILIES,
    MAX_BOOKINGS,
    MAX_CERTIFICATES,
    NO_PAYMENT_CHOICE,
    READ_ONLY,
)
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


def _split_families() -> list[str]:
    # Families whose one write is whole (a booking, a cancellation): a split needs two.
    def fits(family: str, writes: str) -> bool:
        selections = {
            "task_family": [family],
            "expected_outcome": ["fulfill"],
            "tool_use_pattern": ["partial_update_or_split_action"],
            "num_write": [writes],
        }
        return infeasible(selections) is None

    return [f for f in FAMILIES if fits(f, "2") and not fits(f, "1")]


@functools.cache
def rules() -> tuple[Rule, ...]:
    """The sentences, each naming the rule ids of the checks it states."""
    return (
        no_reads_sentence("looks the caller up first"),
        proposal_sentence("the user's choice of payment method", NO_PAYMENT_CHOICE),
        Rule(
            "task_family=flight_booking never takes interaction_challenge=missing_information: "
            "a new booking has no id to look up.",
            ("booking_without_id",),
        ),
        computation_sentence(infeasible, FAMILIES),
        Rule(
            "expected_outcome=refuse changes nothing: num_write=0.",
            ("refusal_writes",),
        ),
        Rule(
            f"task_family={READ_ONLY} only looks things up: num_write=0.",
            ("inquiry_writes",),
        ),
        Rule(
            "Fulfilling any other task_family makes at least one write: num_write is not 0.",
            ("fulfil_without_write",),
        ),
        Rule(
            f"flight_booking composes at most {MAX_BOOKINGS} writes and refund_or_compensation "
            f"at most {MAX_CERTIFICATES}: neither takes num_write=5+.",
            ("too_many_writes",),
        ),
        Rule(
            f"tool_use_pattern {listing(sorted(WRITE_PATTERNS))} needs a write: none of them "
            f"goes with expected_outcome=refuse or task_family={READ_ONLY}.",
            ("pattern_needs_write",),
        ),
        Rule(
            "tool_use_pattern=search_compare_then_book chooses among searched flights: only "
            "with task_family flight_booking or flight_change, and never with computation none "
            "or aggregate.",
            ("search_without_search", "search_without_choice"),
        ),
        calculation_sentence("price_or_fee_recalculation", "recalculation"),
        Rule(
            "tool_use_pattern=partial_update_or_split_action in task_family "
            f"{listing(_split_families())} needs two writes: never with num_write=1.",
            ("split_needs_two_writes",),
        ),
        Rule(
            "num_read counts every look-up the task needs: the caller, each reservation it "
            "reads or changes, and the flight searches or status checks its family needs "
            "(multi_entity_retrieval adds look-ups of a second entity of one kind); a smaller "
            "num_read is impossible. The tool calls (reads, writes, and one calculate call "
            "when computation is aggregate or conditional) must fit difficulty_profile: "
            f"{difficulties()} tool calls.",
            ("reads_short", "calls_over", "calls_under"),
        ),
        write_counts(
            infeasible, FAMILIES, OUTCOMES, tuple(DIFFICULTY_CALLS), ("calls_over", "calls_under")
        ),
    )
