"""Telecom data refuels: a line over its data limit refuelled, refused or escalated."""

from __future__ import annotations

from typing import TYPE_CHECKING

from evosyn.environments.kit.grammar import say
from evosyn.environments.kit.grounding import Step, money
from evosyn.environments.telecom import policy
from evosyn.environments.telecom.drafts import (
    _assert,
    _Draft,
    _escalated,
    _init,
    _refused,
    _Request,
)
from evosyn.environments.telecom.troubleshooting import _roaming
from evosyn.environments.telecom.wording import SYMPTOM_REASONS

if TYPE_CHECKING:
    from evosyn.environments.telecom.generator import TelecomGenerator


#: Extra for the ``aggregate`` refuel: the user asks for their overage plus this.
REFUEL_MARGIN = 0.5
#: Refuel amounts (GB) a caller may want, or the agent first propose.
REFUEL_AMOUNTS = (1.0, 1.5, 2.0)


def _gb(value: float) -> str:
    return f"{value:g}"


def _refuel(gen: TelecomGenerator, request: _Request) -> _Draft:
    owner, record = gen._pick(request, gen._active)
    draft = _Draft(
        owner,
        record,
        reason="Your mobile data stopped working.",
        purpose="Troubleshooting: a line over its data limit gets the data refuelled.",
        troubleshooting=True,
    )
    # The line's record names its phone number: the number the caller gave names the line.
    draft.steps.append(Step("get_details_by_id", {"id": record.line_id}))
    _add_refuel(gen, draft, request)
    return draft


def _roaming_refuel(gen: TelecomGenerator, request: _Request) -> _Draft:
    """Abroad with roaming off on the line and the data limit reached: both fixed.

    τ²-bench's most common composition (data_usage_exceeded with
    user_abroad_roaming_disabled_*): the agent enables roaming, then refuels the data.
    """
    draft = _roaming(gen, request, own=True)
    draft.purpose = (
        "Troubleshooting abroad: roaming is enabled on the line and, over its data limit, "
        "the line gets data refuelled."
    )
    roaming_note = draft.note
    _add_refuel(gen, draft, request)
    draft.note = f"{roaming_note}; {draft.note}"
    return draft


def _add_refuel(gen: TelecomGenerator, draft: _Draft, request: _Request) -> None:
    """The line starts over its data limit; the agent reads the usage and refuels data.

    The amount is the caller's (``aggregate``: their overage plus a margin, a rule the
    agent works out; with ``preference_change``, left open to the agent's proposal).
    """
    rng, record = request.rng, draft.line
    limit = policy.plan(gen.db, record.plan_id).data_limit_gb
    price = policy.plan(gen.db, record.plan_id).data_refueling_price_per_gb
    if request.computation == "aggregate":
        # Overages whose amount (overage + margin) is no number the caller or a record says.
        overs = [o / 10 for o in range(1, 15)]
        overs = [o for o in overs if round(o + REFUEL_MARGIN, 1) % 0.5 > 1e-9]
        over = rng.choice(overs)
        amount = round(over + REFUEL_MARGIN, 1)
        ask = (
            "you want just enough data added to cover what you are over your limit by, "
            f"plus {_gb(REFUEL_MARGIN)} GB more. You do not know how much you are over by."
        )
    else:
        amount = rng.choice(REFUEL_AMOUNTS)
        over = rng.choice([o / 10 for o in range(1, int(amount * 10))])
        ask = f"you want to add {_gb(amount)} GB of data to your line."
    # Left open, the amount is the agent's to propose and the user's to settle afterwards.
    left_open = "preference_change" in request.challenges
    if left_open:
        ask = "you want some extra data added to your line."
    used = round(limit + over, 1)
    draft.instructions.append(f"If the agent finds you are over your data limit, {ask}")
    if left_open:
        draft.instructions.append(f"You want {_gb(amount)} GB of data added.")
    draft.over_limit(used)
    # A rule for the amount is the caller's answer when the agent offers data.
    cue = f"You want {ask[len('you want ') :]}" if request.computation == "aggregate" else None
    draft.steps.append(Step("refuel_data", {**draft.account, "gb_amount": amount}, cue=cue))
    charge = round(amount * price, 2)
    draft.communicate.append(money(charge, "the charge for the extra data"))
    draft.note = f"{_gb(amount)} GB were added for ${charge:.2f}"
    draft.expect_refuel(amount)
    draft.data_works = True


def _refuse_refuel(gen: TelecomGenerator, request: _Request) -> _Draft:
    """A refuel beyond the cap: refused."""
    rng = request.rng
    owner, record = gen._pick(request, gen._active)
    limit = policy.plan(gen.db, record.plan_id).data_limit_gb
    amount = rng.choice([2.5, 3.0, 4.0, 5.0])
    draft = _Draft(
        owner,
        record,
        reason=f"Your mobile data stopped working. You want {_gb(amount)} GB of data "
        "added to your line, and you will not accept less.",
        purpose="Refuel beyond the 2 GB cap: refused.",
    )
    used = round(limit + rng.choice([0.3, 0.6, 1.2]), 1)
    draft.over_limit(used)
    why = policy.refuel_allowed(record, amount)[1]
    draft.expect_refuel(0.0)
    refused = Step("refuel_data", {**draft.account, "gb_amount": amount})
    return _refused(draft, why, "refuel the data", refused)


def _refuel_spent(gen: TelecomGenerator, request: _Request) -> _Draft:
    """No mobile data on a line over its limit that already had the most data refuelled."""
    rng = request.rng
    # The earlier refuel is charged on a draft bill: a new one would get a random id.
    pool = [
        (c, x)
        for c, x in gen._active
        if not x.data_refueling_gb
        and any(
            (b := policy.bill(gen.db, i)) is not None and policy.status_of(b) == "Draft"
            for i in c.bill_ids
        )
    ]
    owner, record = gen._pick(request, pool)
    limit = policy.plan(gen.db, record.plan_id).data_limit_gb
    draft = _Draft(
        owner,
        record,
        reason=say(rng, SYMPTOM_REASONS["mobile_data"]),
        purpose="Troubleshooting a line over its limit with no refuel left: escalated.",
        troubleshooting=True,
    )
    draft.init.append(
        _init("assistant", "refuel_data", **draft.account, gb_amount=policy.MAX_REFUEL_GB)
    )
    draft.over_limit(round(limit + policy.MAX_REFUEL_GB + rng.choice([0.3, 0.6, 1.1]), 1))
    draft.instructions.append(
        f"You would add up to {_gb(policy.MAX_REFUEL_GB)} GB of data if needed, but you do "
        "not want to change your plan."
    )
    draft.assertions.append(_assert("user", "assert_mobile_data_status", expected_status=False))
    # Data comes back only with more data: the refuel the policy forbids.
    draft.refused.append(Step("refuel_data", draft.account))
    return _escalated(
        draft,
        f"the line {record.phone_number} is over its data limit, and at most "
        f"{_gb(policy.MAX_REFUEL_GB)} GB of data can be refuelled on a line: it already had "
        f"{_gb(policy.MAX_REFUEL_GB)} GB this month",
        "mobile data off, data limit reached with the refuel maximum used",
    )
