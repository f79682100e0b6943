"""The telecom policy model: τ²-bench telecom's written rules as executable predicates.

Written from the domain's main policy (``main_policy.md``; the current date is 2025-02-25):
the agent identifies the customer first; it may send a payment request only for an overdue
bill, and a customer can have only one bill awaiting payment; a suspension may be lifted only
once every overdue bill is paid and never when the line's contract has ended; a line is
suspended only for an overdue bill or an ended contract; at most 2 GB of data can be
refuelled on a line; roaming is enabled at no cost for a traveller; devices, plans and
profiles the tools cannot change are handed to a human agent.

The Generator decides outcomes with these predicates; the replay verifier calls
:func:`violation` on the live database just before each assistant write.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping

from tau2.domains.telecom.data_model import Bill, Customer, Line, Plan, TelecomDB

#: τ²-bench telecom's "today" (``tau2.domains.telecom.utils.get_today``).
TODAY = datetime.date(2025, 2, 25)
#: The most data that may be refuelled on one line, in GB.
MAX_REFUEL_GB = 2.0
#: Tools that identify the customer.
IDENTIFY_TOOLS = frozenset({"get_customer_by_phone", "get_customer_by_id", "get_customer_by_name"})
#: What the agent can do; anything else is out of scope (and is transferred).
IN_SCOPE = (
    "technical support for the caller's phone",
    "overdue bill payment",
    "lifting a line suspension",
    "data refuelling and data roaming",
)


def status_of(record: Line | Bill) -> str:
    """A line's or bill's status as τ²-bench writes it (``Active``, ``Overdue``...)."""
    return str(getattr(record.status, "value", record.status))


def customer(db: TelecomDB, customer_id: str) -> Customer | None:
    """The customer record with ``customer_id``, or None."""
    return next((c for c in db.customers if c.customer_id == customer_id), None)


def line(db: TelecomDB, line_id: str) -> Line | None:
    """The line record with ``line_id``, or None."""
    return next((x for x in db.lines if x.line_id == line_id), None)


def bill(db: TelecomDB, bill_id: str) -> Bill | None:
    """The bill record with ``bill_id``, or None."""
    return next((b for b in db.bills if b.bill_id == bill_id), None)


def plan(db: TelecomDB, plan_id: str) -> Plan:
    """The plan record with ``plan_id`` (every line names one); KeyError if there is none."""
    found = next((p for p in db.plans if p.plan_id == plan_id), None)
    if found is None:
        raise KeyError(f"no plan {plan_id!r}")
    return found


def overdue_bills(db: TelecomDB, owner: Customer) -> list[Bill]:
    """The customer's bills in status Overdue."""
    bills = [bill(db, b) for b in owner.bill_ids]
    return [b for b in bills if b is not None and status_of(b) == "Overdue"]


def contract_ended(record: Line) -> bool:
    """Whether the line's contract end date is in the past."""
    end = record.contract_end_date
    return end is not None and end < TODAY


def refuel_allowed(record: Line, gb_amount: float) -> tuple[bool, str]:
    """Whether ``gb_amount`` GB may be refuelled on the line, and why not."""
    total = round(float(record.data_refueling_gb) + float(gb_amount), 6)
    if gb_amount <= 0:
        return False, "a refuel amount must be positive"
    if total > MAX_REFUEL_GB:
        return False, (
            f"at most {MAX_REFUEL_GB:g} GB of data can be refuelled on a line, and "
            f"{gb_amount:g} GB would bring the line {record.phone_number} to {total:g} GB"
        )
    return True, ""


def refuel_left(record: Line) -> tuple[bool, str]:
    """Whether any data may still be refuelled on the line, and why not."""
    had = float(record.data_refueling_gb)
    if had < MAX_REFUEL_GB:
        return True, ""
    return False, (
        f"at most {MAX_REFUEL_GB:g} GB of data can be refuelled on a line, and the line "
        f"{record.phone_number} has already had {had:g} GB refuelled"
    )


def payment_request_allowed(db: TelecomDB, owner: Customer, record: Bill) -> tuple[bool, str]:
    """Whether a payment request may be sent for the bill, and why not."""
    status = status_of(record)
    if status != "Overdue":
        return False, (
            f"bill {record.bill_id} is {status}, and payment requests are only for overdue bills"
        )
    for bill_id in owner.bill_ids:
        other = bill(db, bill_id)
        if other is not None and status_of(other) == "Awaiting Payment":
            return False, f"bill {bill_id} is already awaiting payment; only one may be at a time"
    return True, ""


def resume_allowed(db: TelecomDB, owner: Customer, record: Line) -> tuple[bool, str]:
    """Whether the suspension of the line may be lifted, and why not."""
    if contract_ended(record):
        return False, (
            f"the contract of the line {record.phone_number} ended on "
            f"{record.contract_end_date}, so its suspension cannot be lifted, "
            "even once the bills are paid"
        )
    unpaid = overdue_bills(db, owner)
    if unpaid:
        return False, (
            f"bill {unpaid[0].bill_id} is overdue; the suspension can be lifted only after every "
            "overdue bill is paid"
        )
    return True, ""


def suspend_allowed(db: TelecomDB, owner: Customer, record: Line) -> tuple[bool, str]:
    """Whether the line may be suspended, and why not."""
    if overdue_bills(db, owner) or contract_ended(record):
        return True, ""
    return False, (
        f"a line is suspended only for an overdue bill or an ended contract, and the line "
        f"{record.phone_number} has neither"
    )


def violation(db: TelecomDB, tool: str, arguments: Mapping[str, object]) -> str | None:
    """The policy rule an assistant write would break, checked just before it runs.

    Only rules the tool does not enforce itself are named (a call the tool rejects fails with
    its own error, which the verifier reports as a tool issue): the 2 GB refuel cap, payment
    requests only for overdue bills and one at a time, no lifted suspension while a bill is
    overdue or after the contract ended, and suspensions only for those reasons.

    Args:
        db: The live telecom database (``TelecomDB``), before the call executes.
        tool: Name of the tool the assistant calls.
        arguments: Its arguments.

    Returns:
        One line naming the broken rule and why, or None (also for unknown tools and for
        calls on unknown records).
    """
    owner = customer(db, str(arguments.get("customer_id")))
    if owner is None:
        return None
    ok, why = True, ""
    if tool == "send_payment_request":
        record = bill(db, str(arguments.get("bill_id")))
        if record is None or record.bill_id not in owner.bill_ids:
            return None
        ok, why = payment_request_allowed(db, owner, record)
    elif tool in ("refuel_data", "resume_line", "suspend_line"):
        target = line(db, str(arguments.get("line_id")))
        if target is None or target.line_id not in owner.line_ids:
            return None
        if tool == "refuel_data" and arguments.get("gb_amount") is None:
            ok, why = refuel_left(target)  # no amount named yet: is any refuel left?
        elif tool == "refuel_data":
            try:
                amount = float(arguments.get("gb_amount"))  # type: ignore[arg-type]
            except (TypeError, ValueError):
                return None
            ok, why = refuel_allowed(target, amount)
        elif tool == "resume_line":
            ok, why = resume_allowed(db, owner, target)
        else:
            ok, why = suspend_allowed(db, owner, target)
    return None if ok else f"{tool}: {why}"


def violation_in_context(
    db: TelecomDB, tool: str, arguments: Mapping[str, object], *, customer_id: str | None
) -> str | None:
    """:func:`violation`, and the rule that turns on whom the agent identified.

    Only the identified customer's own lines may be changed; a call on a line names no
    customer where the tool takes none, so the agent says whom it identified.

    Args:
        db: The live telecom database, before the call would run.
        tool: Name of the tool the assistant would call.
        arguments: Its arguments.
        customer_id: The customer the agent identified (None: nobody yet).
    """
    found = violation(db, tool, arguments)
    if found is not None or customer_id is None:
        return found
    owner = customer(db, customer_id)
    target = line(db, str(arguments.get("line_id")))
    if owner is None or target is None or target.line_id in owner.line_ids:
        return None
    return (
        f"{tool}: the line {target.phone_number} is not on your account, and only the lines "
        "of your own account can be changed"
    )
