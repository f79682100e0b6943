"""The library policy's refusal rules as checks on assistant writes (``policy.md``).

The replay verifier asks :func:`violation` before each write of a trajectory runs, on the
database as it stands then: a write the policy forbids is a policy violation whatever the
task's gold says. Each reason starts with the rule's name, as the ontology's
``policy_or_constraint_focus`` values name them.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping

from evosyn.environments.library.data_model import LibraryDB, Patron
from evosyn.environments.library.tools import PROCESSING_FEE, TODAY

#: Unpaid fines that block an account, in dollars.
BLOCKING_TOTAL = 10.0
#: Renewals a loan may have had before it can be renewed no more.
MAX_RENEWALS = 2
#: Active holds a patron may have.
MAX_HOLDS = 5
#: The largest overdue fine the agent may waive, in dollars.
MAX_WAIVER = 5.0

#: How the amounts of the write tools add up, for the prompts of roles that write gold tool
#: calls (the tools compute every amount; a task must state the same one).
PAYMENT_RULES = (
    "pay_fine pays one unpaid fine in full, its amount as the fines table records it, with a "
    "payment_method_id from the patron's own payment_methods; paying two fines is two calls.",
    f"report_lost_item charges the title's replacement_cost plus ${PROCESSING_FEE:.2f} as one "
    "new unpaid lost_item fine; the agent states that total before the patron's yes.",
    "Take every amount, due date and renewal count from the records shown, never from memory.",
)


def unpaid_total(db: LibraryDB, patron: Patron) -> float:
    """What the patron owes in unpaid fines."""
    owed = sum(db.fines[f].amount for f in patron.fines if db.fines[f].status == "unpaid")
    return round(owed, 2)


def blocked(db: LibraryDB, patron: Patron) -> str | None:
    """Why the patron's account is blocked, or None."""
    owed = unpaid_total(db, patron)
    if owed >= BLOCKING_TOTAL:
        return f"blocked_account: {patron.patron_id} owes ${owed:.2f} in unpaid fines"
    if datetime.date.fromisoformat(patron.card_expiry) < TODAY:
        return f"blocked_account: {patron.patron_id}'s card expired on {patron.card_expiry}"
    return None


def _renewal(db: LibraryDB, loan_id: object) -> str | None:
    loan = db.loans.get(loan_id) if isinstance(loan_id, str) else None
    if loan is None or loan.patron_id not in db.patrons:
        return None  # the tool itself refuses an unknown loan
    reason = blocked(db, db.patrons[loan.patron_id])
    if reason:
        return reason
    if loan.renewals >= MAX_RENEWALS:
        return f"renewal_limit: {loan_id} was renewed {loan.renewals} times already"
    if datetime.date.fromisoformat(loan.due_date) < TODAY:
        return f"overdue_no_renewal: {loan_id} was due on {loan.due_date}"
    if any(h.book_id == loan.book_id and h.status == "waiting" for h in db.holds.values()):
        return f"hold_queue_priority: a hold waits for {loan.book_id}"
    return None


def _hold(db: LibraryDB, arguments: Mapping[str, object]) -> str | None:
    patron_id, book_id = arguments.get("patron_id"), arguments.get("book_id")
    branch = arguments.get("pickup_branch")
    patron = db.patrons.get(patron_id) if isinstance(patron_id, str) else None
    title = db.titles.get(book_id) if isinstance(book_id, str) else None
    if patron is None or title is None:
        return None
    reason = blocked(db, patron)
    if reason:
        return reason
    active = [db.holds[h] for h in patron.holds if db.holds[h].status in ("waiting", "ready")]
    if len(active) >= MAX_HOLDS:
        return f"hold_limit: {patron.patron_id} has {len(active)} active holds"
    borrowed = any(
        db.loans[loan].book_id == book_id and db.loans[loan].status == "active"
        for loan in patron.loans
    )
    if borrowed or any(h.book_id == book_id for h in active):
        return f"hold_limit: {patron.patron_id} already has {book_id} on loan or on hold"
    if any(
        db.copies[c].branch_id == branch and db.copies[c].status == "available"
        for c in title.copies
    ):
        return f"shelf_copy_available: a copy of {book_id} is on the shelf at {branch}"
    return None


def _waiver(db: LibraryDB, fine_id: object) -> str | None:
    fine = db.fines.get(fine_id) if isinstance(fine_id, str) else None
    if fine is None or fine.patron_id not in db.patrons:
        return None
    if fine.kind != "overdue":
        return f"waiver_eligibility: {fine_id} is a {fine.kind} fine"
    if fine.amount > MAX_WAIVER:
        return f"waiver_eligibility: {fine_id} is ${fine.amount:.2f}, over ${MAX_WAIVER:.2f}"
    patron = db.patrons[fine.patron_id]
    if any(db.fines[f].status == "waived" for f in patron.fines):
        return f"waiver_eligibility: {patron.patron_id} had a fine waived before"
    return None


def violation(db: LibraryDB, tool: str, arguments: Mapping[str, object]) -> str | None:
    """The policy rule an assistant write would break, checked just before it runs."""
    if tool == "renew_loan":
        return _renewal(db, arguments.get("loan_id"))
    if tool == "place_hold":
        return _hold(db, arguments)
    if tool == "waive_fine":
        return _waiver(db, arguments.get("fine_id"))
    return None
