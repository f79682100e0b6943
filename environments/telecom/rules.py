"""The telecom feasibility rule (:data:`.generator.CHECKS`) in sentences, for prompts.

Value lists come from the Generator's constants or from asking ``infeasible`` itself;
``tests/environments/test_rules.py`` checks that every rule id the checks give is stated.
"""

from __future__ import annotations

import functools

from evosyn.buckets import BUCKETS, DIFFICULTY_CALLS
from evosyn.environments.kit.grounding import PROPOSAL_CHALLENGES, REALIZABLE
from evosyn.environments.kit.rules import Rule, by_family, difficulties, listing, write_counts
from evosyn.environments.telecom.generator import (
    AGENT_WRITE_PATTERNS,
    FAMILIES,
    HANDOFF_FAMILIES,
    UNVARIED,
    infeasible,
)

OUTCOMES = ("fulfill", "refuse")
PATTERNS = (
    *sorted(AGENT_WRITE_PATTERNS),
    "multi_hop_retrieval",
    "diagnose_then_resolve",
)


@functools.cache
def rules() -> tuple[Rule, ...]:
    """The sentences, each naming the rule ids of the checks it states."""
    return (
        Rule(
            "num_read is never 0: every task identifies the customer with a look-up.",
            ("no_reads",),
        ),
        Rule(
            f"interaction_challenge {listing(PROPOSAL_CHALLENGES)} answers the agent's proposal "
            "of a write (the refuel amount a caller leaves open): choose at most one of them, "
            "and never with expected_outcome=refuse, num_write=0 or task_family "
            f"{listing(UNVARIED)}.",
            ("proposal",),
        ),
        Rule(
            "interaction_challenge=preference_change never goes with task_family=plan_change "
            "and computation=aggregate: the refuel amount is then derived, not chosen.",
            ("preference_derived",),
        ),
        Rule(
            "computation is never conditional: there is no calculate tool.",
            ("conditional",),
        ),
        Rule(
            f"task_family {listing(sorted(HANDOFF_FAMILIES))} can only be refused "
            "(expected_outcome=refuse): no tool fulfils them.",
            ("handoff_fulfil",),
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
            "tool_use_pattern takes only the values its task_family/expected_outcome can show: "
            + by_family(infeasible, FAMILIES, OUTCOMES, "tool_use_pattern", PATTERNS)
            + "; compare_options_then_apply also needs computation=constrained_opt (or none "
            "chosen), and diagnose_then_resolve a fix the user makes on the phone.",
            (
                "pattern_needs_agent_write",
                "compare_without_options",
                "compare_computation",
                "diagnose_without_fix",
            ),
        ),
        Rule(
            "num_write takes only the values its task_family/expected_outcome can compose: "
            + by_family(infeasible, FAMILIES, OUTCOMES, "num_write", BUCKETS)
            + ".",
            ("write_count",),
        ),
        Rule(
            "num_read counts every look-up the task needs (the customer, the line or bill it "
            "acts on; multi_hop_retrieval adds two); the tool calls (reads, writes, a hand-off "
            f"when the task transfers) must fit difficulty_profile: {difficulties()} tool calls.",
            ("counts",),
        ),
        write_counts(infeasible, FAMILIES, OUTCOMES, tuple(DIFFICULTY_CALLS), ("counts",)),
    )
