"""The library's rule sentences: what a plan over its synthesis space must respect, in words.

The domain registers no feasibility checks (no programmatic Generator grounds its blueprints),
so these sentences state no check's id: they are guidance the LLM Designer, Planner and
Generator read, written from the policy and the database.
"""

from __future__ import annotations

import functools

from evosyn.environments.feasibility import Rule


@functools.cache
def rules() -> tuple[Rule, ...]:
    """The sentences, in the order a prompt shows them."""
    return (
        Rule(
            "num_read is never 0: every task identifies the patron first, by library card "
            "number (get_patron_details) or by email (find_patron_by_email).",
            (),
        ),
        Rule(
            "task_family=account_inquiry writes nothing: num_write=0 and expected_outcome=fulfill.",
            (),
        ),
        Rule(
            "expected_outcome=refuse means a policy rule stops the patron's request and the gold "
            "makes no write for it; policy_or_constraint_focus names that rule (blocked_account, "
            "renewal_limit, overdue_no_renewal, hold_queue_priority, hold_limit, "
            "shelf_copy_available, ready_hold_immovable or waiver_eligibility).",
            (),
        ),
        Rule(
            "policy_or_constraint_focus=dispute_transfer and tool_use_pattern="
            "escalation_handoff go with task_family=fine_waiver and expected_outcome=refuse: the "
            "patron disputes a lost_item or damage fine and the agent transfers to a human.",
            (),
        ),
        Rule(
            "task_family=lost_item_report charges the title's replacement cost plus $5.00 as "
            "one new fine; the agent states that total before the patron's yes.",
            (),
        ),
        Rule(
            "On the unchanged database the next new hold is H7010 and the next new fine F9008; "
            "each further one takes the next number.",
            (),
        ),
    )
