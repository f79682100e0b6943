"""The retail feasibility rule (:func:`.generator.infeasible`) in sentences, for prompts.

Value lists come from the Generator's constants or from asking ``infeasible`` itself;
``tests/environments/test_rules.py`` checks that every reason ``infeasible`` gives is stated.
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
    """The sentences, one per kind of reason ``infeasible`` gives."""
    counts = r"num_read=\S+ does not fit|difficulty_profile=\S+ (allows|needs) "
    return (
        Rule(
            "num_read is never 0: every task authenticates the caller with a look-up.",
            r"num_read=0 is impossible",
        ),
        Rule(
            f"interaction_challenge {listing(PROPOSAL_CHALLENGES)} answers the agent's proposal "
            "of a write (the refund or price-difference method a caller leaves open): choose "
            "at most one of them, and never with expected_outcome=refuse, num_write=0 or "
            f"task_family {listing(UNVARIED)}.",
            r"interaction_challenge=[\w, ]+ answers a proposal",
        ),
        Rule(
            "computation takes only the values its task_family/expected_outcome can realize: "
            + by_family(
                infeasible, FAMILIES, OUTCOMES, "computation", REALIZABLE["computation"].values
            )
            + ".",
            r"computation=\S+ cannot be realized by",
        ),
        Rule(
            "expected_outcome=refuse changes nothing: num_write=0.",
            r"num_write=\S+ conflicts with a refusal",
        ),
        Rule(
            f"Fulfilling any task_family but {INQUIRY} makes at least one write: num_write is "
            "not 0.",
            r"fulfilling \S+ needs a write",
        ),
        Rule(
            f"task_family={INQUIRY} makes at most one write (an address): num_write 0 or 1.",
            rf"{INQUIRY} makes at most one write",
        ),
        Rule(
            f"tool_use_pattern {listing(sorted(WRITE_PATTERNS))} needs a write: never with "
            "expected_outcome=refuse or num_write=0.",
            r"tool_use_pattern=\S+ needs a write;",
        ),
        Rule(
            "tool_use_pattern=batched_multi_item_action acts on a list of items: only with "
            f"task_family {listing(sorted(BATCH_FAMILIES))}.",
            r"tool_use_pattern=batched_multi_item_action needs an item list",
        ),
        Rule(
            "tool_use_pattern=price_or_refund_calculation needs something to compute: never "
            "with computation=none, and only where the computation list above allows "
            "aggregate or conditional.",
            r"tool_use_pattern=price_or_refund_calculation (conflicts with|has nothing)",
        ),
        Rule(
            "num_read counts every look-up the task needs (the caller, each order and product "
            "it checks); a smaller num_read is impossible. The tool calls (reads, writes, a "
            "calculate call when computation is aggregate or conditional, a hand-off when the "
            f"task transfers) must fit difficulty_profile: {difficulties()} tool calls.",
            counts,
        ),
        write_counts(infeasible, FAMILIES, OUTCOMES, tuple(DIFFICULTY_CALLS), counts),
    )
