"""Telecom billing: payment requests for overdue bills, paid now or later, or refused."""

from __future__ import annotations

from typing import TYPE_CHECKING

from evosyn.environments.kit.grammar import say
from evosyn.environments.kit.grounding import Step, money
from evosyn.environments.kit.screen import GeneratorRejection
from evosyn.environments.telecom import policy
from evosyn.environments.telecom.drafts import _assert, _Draft, _init, _refused, _Request
from evosyn.environments.telecom.wording import (
    BILL_KNOWN,
    CONTRACT_ENDED_TOO,
    LINE_LATER,
    PAY_LATER,
    PAY_NOW,
    PAY_REASONS,
    SUSPENDED_FOR_BILL,
)

if TYPE_CHECKING:
    from evosyn.environments.telecom.generator import TelecomGenerator


def _bill_check(draft: _Draft, request: _Request, bill_id: str) -> None:
    owner = draft.customer
    # Where no computation is asked for, a caller without the bill id has the agent find
    # it among their bills (which makes the write a pick from a list).
    unasked = request.controls["computation"] is None
    lacks_id = "missing_information" in request.challenges and unasked
    if request.computation == "constrained_opt" or lacks_id:
        # The agent finds the bill among the customer's: the caller does not know its id.
        draft.steps.append(Step("get_bills_for_customer", {"customer_id": owner.customer_id}))
    else:
        draft.known.append(say(request.rng, BILL_KNOWN, bill_id=bill_id))
        draft.steps.append(Step("get_details_by_id", {"id": bill_id}))


def _payment(draft: _Draft, request: _Request, bill_id: str, pay: bool) -> None:
    owner = draft.customer
    _bill_check(draft, request, bill_id)
    draft.steps.append(
        Step("send_payment_request", {"customer_id": owner.customer_id, "bill_id": bill_id})
    )
    if not pay:
        draft.instructions.append(say(request.rng, PAY_LATER))
        draft.note = f"a payment request for bill {bill_id} was sent to your phone"
        return
    draft.instructions.append(say(request.rng, PAY_NOW))
    draft.steps.append(Step("check_payment_request", {}, "user"))
    draft.steps.append(Step("make_payment", {}, "user"))
    draft.steps.append(Step("get_details_by_id", {"id": bill_id}))
    draft.assertions.append(_assert("assistant", "assert_no_overdue_bill", overdue_bill_id=bill_id))


def _pay(gen: TelecomGenerator, request: _Request) -> _Draft:
    option = request.option
    pool = gen._payables[(option.fixes, option.checks) != (0, 0)]
    if request.computation == "constrained_opt":
        # The bill list offers a choice: two bills or more, a new one counted.
        pool = [p for p in pool if len(p[0].bill_ids) + (p[2] is None) >= 2]
    if not pool:
        raise GeneratorRejection("no customer in the database has an overdue bill")
    owner, record, bill, suspended, paid_first, ended = gen._pick(request, pool)
    pay = option.form.name == "pay"
    draft = _Draft(
        owner,
        record,
        reason=say(request.rng, PAY_REASONS),
        purpose="Overdue bill payment through a payment request.",
    )
    if suspended is not None:
        number = suspended.phone_number
        mine = suspended.line_id == record.line_id
        draft.known.append(say(request.rng, SUSPENDED_FOR_BILL[mine], number=number))
        if ended:
            draft.known.append(say(request.rng, CONTRACT_ENDED_TOO))
        draft.instructions.append(say(request.rng, LINE_LATER))
    if bill is not None:
        bill_id, due = bill.bill_id, bill.total_due
        if suspended is not None:
            draft.init.append(
                _init(
                    "assistant",
                    "suspend_line",
                    customer_id=owner.customer_id,
                    line_id=suspended.line_id,
                    reason="overdue bill",
                )
            )
    else:
        assert suspended is not None
        if paid_first:
            draft.clear_overdue(policy.overdue_bills(gen.db, owner))
        if policy.status_of(suspended) == "Suspended":
            draft.init.append(
                _init(
                    "assistant",
                    "resume_line",
                    customer_id=owner.customer_id,
                    line_id=suspended.line_id,
                )
            )
        bill_id = _new_bill_id(gen, request)
        draft.init.append(
            _init(
                "assistant",
                "suspend_line_for_overdue_bill",
                customer_id=owner.customer_id,
                line_id=suspended.line_id,
                new_bill_id=bill_id,
                contract_ended=ended,
            )
        )
        due = policy.plan(gen.db, suspended.plan_id).price_per_month
    _payment(draft, request, bill_id, pay)
    draft.communicate.append(money(due, "the amount due on the overdue bill"))
    if pay:
        draft.note = f"bill {bill_id} is now paid"
    # A phone on the suspended line has no service, and paying does not lift it.
    draft.data_works = suspended is None or suspended.line_id != record.line_id
    return draft


def _new_bill_id(gen: TelecomGenerator, request: _Request) -> str:
    taken = {b.bill_id for b in gen.db.bills}
    while True:
        bill_id = f"B{request.rng.randint(2_000_000, 9_999_999)}"
        if bill_id not in taken:
            return bill_id


def _refuse_payment(gen: TelecomGenerator, request: _Request) -> _Draft:
    """A payment request for a bill that is not overdue: refused."""
    pool = []
    for owner, record in gen._lines:
        for bill_id in owner.bill_ids:
            bill = policy.bill(gen.db, bill_id)
            if bill is not None and policy.status_of(bill) in (
                "Issued",
                "Paid",
                "Disputed",
            ):
                pool.append((owner, record, bill))
    owner, record, bill = gen._pick(request, pool)
    draft = _Draft(
        owner,
        record,
        reason=f"You want to pay bill {bill.bill_id} now through a payment request.",
        purpose="Payment request for a bill that is not overdue: refused.",
    )
    draft.known.append(f"The bill you are calling about is {bill.bill_id}.")
    draft.steps.append(Step("get_details_by_id", {"id": bill.bill_id}))
    why = policy.payment_request_allowed(gen.db, owner, bill)[1]
    refused = Step(
        "send_payment_request", {"customer_id": owner.customer_id, "bill_id": bill.bill_id}
    )
    return _refused(draft, why, "send a payment request", refused)
