"""The telecom feasibility rule (:data:`.forms.CHECKS`) in sentences, for prompts.

Value lists come from the Generator's constants or from asking ``infeasible`` itself;
``tests/environments/test_rules.py`` checks that every rule id the checks give is stated.
"""

from __future__ import annotations

import functools

from evosyn.buckets import BUCKETS, DIFFICULTY_CALLS
from evosyn.environments.feasibility import OUTCOMES, Rule
from evosyn.environments.kit.rules import (
    by_family,
    computation_sentence,
    difficulties,
    listing,
    no_reads_sentence,
    proposal_sentence,
    write_counts,
)
from evosyn.environments.telecom import faults
from evosyn.environments.telecom.forms import (
    AGENT_WRITE_PATTERNS,
    FAMILIES,
    HANDOFF_FAMILIES,
    UNVARIED,
    infeasible,
)


def _in_group(group: str) -> list[faults.Fault]:
    return [f for f in faults.FAULTS.values() if f.group == group]


PATTERNS = (
    *sorted(AGENT_WRITE_PATTERNS),
    "multi_hop_retrieval",
    "diagnose_then_resolve",
)


@functools.cache
def rules() -> tuple[Rule, ...]:
    """The sentences, each naming the rule ids of the checks it states."""
    return (
        no_reads_sentence("identifies the customer with a look-up"),
        proposal_sentence("the refuel amount a caller leaves open", UNVARIED),
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
        computation_sentence(infeasible, FAMILIES),
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
            "Telecom tasks are mostly troubleshooting calls, as in τ²-bench: the caller reports "
            f"a symptom ({listing(faults.SYMPTOMS)}) that faults on the phone and the line "
            "cause; the user checks the phone, reports what it shows, and fixes each fault on "
            "the phone (one restart for all); the account fault decides the family the writes "
            "realize: a data limit refuelled is plan_change (also abroad, with roaming enabled "
            "on the line first: two kinds of write), a suspension lifted line_management (also "
            "on two lines at once, after paying the overdue bill, or abroad with roaming "
            "enabled), phone fixes alone or roaming enabled abroad service_troubleshooting. A "
            "caller may also call from their phone about another line of their account (a "
            "family member's), with no phone fault. Every fix the user makes on the phone is a "
            "write, so num_write counts them with the agent's writes.",
            ("write_count",),
        ),
        Rule(
            "The faults a caller's phone may have, per symptom, under τ²-bench's names: "
            + "; ".join(
                f"{symptom}: "
                + ", ".join(f.name for g in faults.GROUPS[symptom] for f in _in_group(g))
                for symptom in faults.SYMPTOMS
            )
            + "; on the account: "
            + ", ".join(faults.ACCOUNT_FAULTS)
            + ". What no tool fixes is escalated to a human agent (a refusal that transfers): "
            "a SIM card locked with a PIN (service_troubleshooting, after the user fixes the "
            "phone's other faults of no service), a line suspended after its contract ended "
            "(line_management, with the SIM card locked too or not), a line over its data "
            "limit with the most data already refuelled (plan_change).",
            (),
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
