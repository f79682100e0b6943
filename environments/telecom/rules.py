"""The telecom feasibility rule (:func:`.generator.infeasible`) in sentences, for prompts.

Value lists come from the Generator's constants or from asking ``infeasible`` itself;
``tests/environments/test_rules.py`` checks that every reason ``infeasible`` gives is stated.
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
    """The sentences, one per kind of reason ``infeasible`` gives."""
    counts = r"num_read=\S+ and difficulty_profile=\S+ do not fit"
    return (
        Rule(
            "num_read is never 0: every task identifies the customer with a look-up.",
            r"num_read=0 is impossible",
        ),
        Rule(
            f"interaction_challenge {listing(PROPOSAL_CHALLENGES)} answers the agent's proposal "
            "of a write (the refuel amount a caller leaves open): choose at most one of them, "
            "and never with expected_outcome=refuse, num_write=0 or task_family "
            f"{listing(UNVARIED)}.",
            r"interaction_challenge=[\w, ]+ answers a proposal",
        ),
        Rule(
            "interaction_challenge=preference_change never goes with task_family=plan_change "
            "and computation=aggregate: the refuel amount is then derived, not chosen.",
            r"interaction_challenge=preference_change varies the refuel amount",
        ),
        Rule(
            "computation is never conditional: there is no calculate tool.",
            r"computation=conditional needs a calculation",
        ),
        Rule(
            f"task_family {listing(sorted(HANDOFF_FAMILIES))} can only be refused "
            "(expected_outcome=refuse): no tool fulfils them.",
            r"\S+/fulfill cannot be realized: no telecom tool",
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
            "tool_use_pattern takes only the values its task_family/expected_outcome can show: "
            + by_family(infeasible, FAMILIES, OUTCOMES, "tool_use_pattern", PATTERNS)
            + "; compare_options_then_apply also needs computation=constrained_opt (or none "
            "chosen), and diagnose_then_resolve a fix the user makes on the phone.",
            r"tool_use_pattern=\S+ (needs an agent write|has no options|needs a fix|conflicts)",
        ),
        Rule(
            "num_write takes only the values its task_family/expected_outcome can compose: "
            + by_family(infeasible, FAMILIES, OUTCOMES, "num_write", BUCKETS)
            + ".",
            r"num_write=\S+ does not fit",
        ),
        Rule(
            "num_read counts every look-up the task needs (the customer, the line or bill it "
            "acts on; multi_hop_retrieval adds two); the tool calls (reads, writes, a hand-off "
            f"when the task transfers) must fit difficulty_profile: {difficulties()} tool calls.",
            counts,
        ),
        write_counts(infeasible, FAMILIES, OUTCOMES, tuple(DIFFICULTY_CALLS), counts),
    )
