"""Telecom line suspensions: lifted directly, on two lines, after paying, or not."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tau2.domains.telecom.data_model import Bill, Customer, Line

from evosyn.environments.kit.grammar import say
from evosyn.environments.kit.grounding import Step, money
from evosyn.environments.telecom import policy
from evosyn.environments.telecom.billing import _new_bill_id, _payment
from evosyn.environments.telecom.drafts import (
    _assert,
    _Draft,
    _escalated,
    _init,
    _refused,
    _Request,
)
from evosyn.environments.telecom.troubleshooting import _abroad
from evosyn.environments.telecom.wording import (
    PAID_SINCE,
    PAID_SINCE_BOTH,
    RESUME_BOTH,
    RESUME_REASONS,
    SYMPTOM_REASONS,
    SYMPTOM_SOLVED,
)

if TYPE_CHECKING:
    from evosyn.environments.telecom.generator import TelecomGenerator


def _resume(gen: TelecomGenerator, request: _Request) -> _Draft:
    """A suspension lifted: alone, with a restart, or abroad with roaming enabled too.

    Without a restart the caller may call from another of their lines about this one.
    """
    reboot = request.option.form.reboot
    pool = [
        (owner, record, how, phone)
        for owner, record, how in gen._resumable
        for phone in ([None] if reboot else gen._phones(owner, record))
    ]
    owner, record, how, phone = gen._pick(request, pool)
    rng = request.rng
    draft = _Draft(
        owner,
        record,
        reason=say(rng, RESUME_REASONS[phone is not None], number=record.phone_number),
        purpose="Lift a line suspension the policy allows lifting.",
        phone=phone,
    )
    _suspend_first(draft, record, how)
    if how == "paid":
        draft.clear_overdue(policy.overdue_bills(gen.db, owner))
        draft.known.append(say(rng, PAID_SINCE))
    _lift(draft, reboot=reboot)
    if request.option.form.name == "resume_roaming":
        _abroad(draft, rng)
        draft.steps.append(Step("enable_roaming", draft.account))
        draft.note += "; roaming is enabled on it at no cost"
    return draft


def _suspend_first(draft: _Draft, record: Line, how: str) -> None:
    """Set ``record`` up suspended as ``how`` says (see :meth:`TelecomGenerator._resumable`)."""
    args = {"customer_id": draft.customer.customer_id, "line_id": record.line_id}
    if how == "hold":
        draft.init.append(_init("assistant", "suspend_line", **args, reason="hold"))
    elif how == "paid":
        draft.init.append(_init("assistant", "suspend_line", **args, reason="overdue bill"))


def _resume_lines(gen: TelecomGenerator, request: _Request) -> _Draft:
    """Two suspended lines of one account, both lifted (a family's lines, one call)."""
    rng = request.rng
    resumable = gen._resumable
    pool = []
    for owner, first, how in resumable:
        for other, second, how2 in resumable:
            if other.customer_id != owner.customer_id or second.line_id <= first.line_id:
                continue
            phones = gen._phones(owner, first, second.line_id)
            pool += [(owner, first, second, how, how2, phone) for phone in phones]
    owner, first, second, how, how2, phone = gen._pick(request, pool)
    numbers = {"first": first.phone_number, "second": second.phone_number}
    draft = _Draft(
        owner,
        first,
        reason=say(rng, RESUME_BOTH, **numbers),
        purpose="Lift the suspensions of two lines of one account, as the policy allows.",
        phone=phone,
    )
    for record, kind in ((first, how), (second, how2)):
        _suspend_first(draft, record, kind)
    if "paid" in (how, how2):
        draft.clear_overdue(policy.overdue_bills(gen.db, owner))
        draft.known.append(say(rng, PAID_SINCE_BOTH))
    for record in (first, second):
        args = {"customer_id": owner.customer_id, "line_id": record.line_id}
        draft.steps.append(Step("get_details_by_id", {"id": record.line_id}))
        draft.steps.append(Step("resume_line", args))
        draft.assertions.append(
            _assert("assistant", "assert_line_status", **args, expected_status="Active")
        )
    draft.note = f"the lines {first.phone_number} and {second.phone_number} are active again"
    return draft


def _lift(draft: _Draft, reboot: bool) -> None:
    record = draft.line
    draft.steps.append(Step("get_details_by_id", {"id": record.line_id}))
    draft.steps.append(Step("resume_line", draft.account))
    draft.expect_status("Active")
    draft.note = f"the line {record.phone_number} is active again"
    if reboot:
        # The restart comes with the phone's fixes (faults.Combo.steps), last.
        draft.troubleshooting = True
        draft.reason = "Your line was suspended and your phone has no service."
    elif draft.phone is None:
        draft.instructions.append("You will restart your phone yourself after the call.")


def _overdue_resume(gen: TelecomGenerator, request: _Request) -> _Draft:
    # A line suspended for a new overdue bill (τ²-bench's suspend_line_for_overdue_bill,
    # for customers who owe nothing yet), or for the one overdue bill its customer has.
    pool: list[tuple[Customer, Line, Bill | None]] = [(c, x, None) for c, x in gen._suspendable]
    for owner, record in gen._active:
        owed = policy.overdue_bills(gen.db, owner)
        if len(owed) == 1 and not policy.contract_ended(record):
            pool.append((owner, record, owed[0]))
    if request.computation == "constrained_opt":
        pool = [p for p in pool if p[0].bill_ids]  # with the overdue one: two or more
    owner, record, bill = gen._pick(request, pool)
    draft = _Draft(
        owner,
        record,
        reason="Your line was suspended because of an unpaid bill. You want to pay it and "
        "have the line working again.",
        purpose="Pay the overdue bill, then lift the suspension.",
    )
    if bill is None:
        bill_id = _new_bill_id(gen, request)
        draft.suspended(bill_id, ended=False)
        due = policy.plan(gen.db, record.plan_id).price_per_month
    else:
        bill_id = bill.bill_id
        draft.init.append(
            _init("assistant", "suspend_line", **draft.account, reason="overdue bill")
        )
        due = bill.total_due
    draft.instructions.append("You agree to pay any overdue bill.")
    _payment(draft, request, bill_id, pay=True)
    draft.communicate.append(money(due, "the amount due on the overdue bill"))
    _lift(draft, reboot=request.option.form.reboot)
    draft.reason = "Your phone has had no service since your line was suspended for an unpaid bill."
    return draft


def _refuse_line(gen: TelecomGenerator, request: _Request) -> _Draft:
    rng = request.rng
    kinds = ["contract", "unpaid", "suspend"]
    if "contract_or_fee_constraint" in request.focus or "time_window_constraint" in request.focus:
        kinds = ["contract"]
    elif "billing_or_payment_constraint" in request.focus:
        kinds = ["unpaid"]
    kind = rng.choice(kinds)
    owner, record = gen._pick(request, gen._suspendable)
    if kind == "suspend":
        draft = _Draft(
            owner,
            record,
            reason="You are going abroad for a few months and want your line suspended "
            "while you are away.",
            purpose="Suspension without a policy reason: refused.",
        )
        draft.steps.append(Step("get_details_by_id", {"id": record.line_id}))
        why = policy.suspend_allowed(gen.db, owner, record)[1]
        draft.expect_status("Active")
        refused = Step("suspend_line", {**draft.account, "reason": "travelling abroad"})
        return _refused(draft, why, "suspend the line", refused)
    ended = kind == "contract"
    bill_id = _new_bill_id(gen, request)
    draft = _Draft(
        owner,
        record,
        reason="Your line is suspended and you want the suspension lifted."
        + ("" if ended else " You do not want to pay anything during this call."),
        purpose="Lifting a suspension the policy forbids: refused.",
    )
    draft.suspended(bill_id, ended)
    draft.steps.append(Step("get_details_by_id", {"id": record.line_id}))
    if ended:
        end = _last_month_end()
        why = (
            f"the contract of the line {record.phone_number} ended on {end}, so its suspension "
            "cannot be lifted, even once the bills are paid"
        )
    else:
        why = (
            f"bill {bill_id} is overdue; the suspension can be lifted only after every "
            "overdue bill is paid"
        )
    draft.expect_status("Suspended")
    return _refused(draft, why, "lift the suspension", Step("resume_line", draft.account))


def _contract_ended(gen: TelecomGenerator, request: _Request) -> _Draft:
    """No service on a line suspended after its contract ended: it cannot be lifted.

    With the ``contract_ended_sim_locked`` form, the SIM card is locked with a PIN too.
    """
    owner, record = gen._pick(request, gen._suspendable)
    locked = request.option.form.name == "contract_ended_sim_locked"
    draft = _Draft(
        owner,
        record,
        reason=say(request.rng, SYMPTOM_REASONS["service"]),
        purpose="Troubleshooting a line suspended after its contract ended"
        + (" and a SIM card locked with a PIN" if locked else "")
        + ": escalated.",
        troubleshooting=True,
    )
    draft.suspended(_new_bill_id(gen, request), ended=True)
    if locked:
        draft.init.append(_init("user", "lock_sim_card", mode="pin"))
    draft.init.append(_init("user", "simulate_network_search"))
    draft.steps.append(Step("get_details_by_id", {"id": record.line_id}))
    if locked:
        draft.steps.append(Step("check_sim_status", {}, "user"))
        draft.instructions.append(
            "Do what the agent asks on your phone and say in your own words what it shows."
        )
    draft.instructions.append("You agree to pay any overdue bill.")
    draft.instructions.append(SYMPTOM_SOLVED["service"])
    draft.expect_status("Suspended")
    draft.assertions.append(_assert("user", "assert_service_status", expected_status="no_service"))
    why = (
        f"the contract of the line {record.phone_number} ended on {_last_month_end()}, so "
        "its suspension cannot be lifted"
    )
    if locked:
        why += ", and your SIM card is locked with a PIN, which only technical support can unlock"
    # Service comes back only with the suspension lifted: the write the policy forbids.
    draft.refused.append(Step("resume_line", draft.account))
    return _escalated(
        draft,
        why,
        "no service, line suspended after its contract ended"
        + (", SIM card locked with a PIN" if locked else ""),
    )


def _last_month_end() -> str:
    # suspend_line_for_overdue_bill ends the contract on the last day of the previous month.
    first = policy.TODAY.replace(day=1)
    return str(first.fromordinal(first.toordinal() - 1))


def _lift_suspension(gen: TelecomGenerator, request: _Request) -> _Draft:
    """Lift a suspension: directly, on two lines, or after paying the overdue bill."""
    if request.option.form.name.startswith("overdue"):
        return _overdue_resume(gen, request)
    if request.option.form.name == "resume_lines":
        return _resume_lines(gen, request)
    return _resume(gen, request)
