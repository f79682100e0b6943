"""The airline feasibility rule (:func:`.generator.infeasible`) in sentences, for prompts.

Every value list and bound comes from the Generator's own constants, or from asking
``infeasible`` itself, so the sentences cannot drift from the rule they state;
``tests/environments/test_rules.py`` checks that every reason ``infeasible`` gives is stated.
"""

from __future__ import annotations

import functools

from evosyn.buckets import DIFFICULTY_CALLS
from evosyn.environments.airline.generator import (
    FAMILIES,
    MAX_BOOKINGS,
    MAX_CERTIFICATES,
    NO_PAYMENT_CHOICE,
    WRITE_PATTERNS,
    infeasible,
)
from evosyn.environments.kit.grounding import PROPOSAL_CHALLENGES, REALIZABLE
from evosyn.environments.kit.rules import Rule, by_family, difficulties, listing, write_counts

OUTCOMES = ("fulfill", "refuse")
COMPUTATION_VALUES = REALIZABLE["computation"].values
READ_ONLY = "loyalty_or_membership_service"


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
    """The sentences, one per kind of reason ``infeasible`` gives."""
    counts = r"num_read=\S+ does not fit|difficulty_profile=\S+ (allows at most|needs) "
    return (
        Rule(
            "num_read is never 0: every task looks the caller up first.",
            r"num_read=0 is impossible",
        ),
        Rule(
            f"interaction_challenge {listing(PROPOSAL_CHALLENGES)} answers the agent's proposal "
            "of a write (the user's choice of payment method): choose at most one of them, and "
            "never with expected_outcome=refuse, num_write=0 or task_family "
            f"{listing(NO_PAYMENT_CHOICE)}.",
            r"interaction_challenge=[\w, ]+ answers a proposal",
        ),
        Rule(
            "task_family=flight_booking never takes interaction_challenge=missing_information: "
            "a new booking has no id to look up.",
            r"interaction_challenge=missing_information needs an id",
        ),
        Rule(
            "computation takes only the values its task_family/expected_outcome can realize: "
            + by_family(infeasible, FAMILIES, OUTCOMES, "computation", COMPUTATION_VALUES)
            + ".",
            r"computation=\S+ cannot be realized by",
        ),
        Rule(
            "expected_outcome=refuse changes nothing: num_write=0.",
            r"num_write=\S+ conflicts with a refusal",
        ),
        Rule(
            f"task_family={READ_ONLY} only looks things up: num_write=0.",
            r"num_write=\S+ conflicts with a read-only inquiry",
        ),
        Rule(
            "Fulfilling any other task_family makes at least one write: num_write is not 0.",
            r"fulfilling \S+ needs a write",
        ),
        Rule(
            f"flight_booking composes at most {MAX_BOOKINGS} writes and refund_or_compensation "
            f"at most {MAX_CERTIFICATES}: neither takes num_write=5+.",
            r"\S+ composes at most \d+ writes",
        ),
        Rule(
            f"tool_use_pattern {listing(sorted(WRITE_PATTERNS))} needs a write: none of them "
            f"goes with expected_outcome=refuse or task_family={READ_ONLY}.",
            r"tool_use_pattern=\S+ needs a write;",
        ),
        Rule(
            "tool_use_pattern=search_compare_then_book chooses among searched flights: only "
            "with task_family flight_booking or flight_change, and never with computation none "
            "or aggregate.",
            r"tool_use_pattern=search_compare_then_book (needs a flight search|is a choice)",
        ),
        Rule(
            "tool_use_pattern=price_or_fee_recalculation needs something to compute: never with "
            "computation=none, and only where the computation list above allows aggregate or "
            "conditional.",
            r"tool_use_pattern=price_or_fee_recalculation (conflicts with|has nothing)",
        ),
        Rule(
            "tool_use_pattern=partial_update_or_split_action in task_family "
            f"{listing(_split_families())} needs two writes: never with num_write=1.",
            r"tool_use_pattern=partial_update_or_split_action needs two",
        ),
        Rule(
            "num_read counts every look-up the task needs: the caller, each reservation it "
            "reads or changes, and the flight searches or status checks its family needs "
            "(multi_entity_retrieval adds look-ups of a second entity of one kind); a smaller "
            "num_read is impossible. The tool calls (reads, writes, and one calculate call "
            "when computation is aggregate or conditional) must fit difficulty_profile: "
            f"{difficulties()} tool calls.",
            counts,
        ),
        write_counts(infeasible, FAMILIES, OUTCOMES, tuple(DIFFICULTY_CALLS), counts),
    )
