"""Cancellation and compensation tasks, fulfilled or refused as the policy decides."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tau2.domains.airline.data_model import Reservation, User

from evosyn.environments.airline import policy
from evosyn.environments.airline.grounding import (
    _at_least,
    _calculate,
    _pick,
    _terms,
    _trip_text,
    _upcoming,
)
from evosyn.environments.airline.request import _Draft, _Request
from evosyn.environments.kit.grounding import Step, money

if TYPE_CHECKING:
    from evosyn.environments.airline.generator import AirlineGenerator


def _cancel_reason(
    gen: AirlineGenerator, reservation: Reservation, focus: Sequence[str], rng: random.Random
) -> str | None:
    """A reason that makes the cancellation allowed, preferring the focus's rule."""
    reasons = ["change_of_plan", "health", "weather", "other"]
    if policy.airline_cancelled(gen.db, reservation):
        reasons.insert(0, "airline_cancelled")
    allowed = [r for r in reasons if policy.may_cancel(gen.db, reservation, r)[0]]
    if not allowed:
        return None
    if "refund_eligibility" in focus:
        covered = [r for r in allowed if r in policy.INSURED_REASONS]
        if covered:
            return rng.choice(covered)
    return rng.choice(allowed)


def _refunds(reservations: Sequence[Reservation]) -> list[float]:
    return [float(p.amount) for r in reservations for p in r.payment_history]


def _cancel_total(chosen: Sequence[Reservation]) -> tuple[str, str, float]:
    """What a cancellation's total is of, its expression and its value.

    The refund when it adds up several payments, else what the tickets cost (fares times
    passengers).
    """
    refunds = _refunds(chosen)
    if len(refunds) >= 2:
        return "how much will be refunded", _terms(refunds), sum(refunds)
    (r,) = chosen
    fares = [float(f.price) for f in r.flights]
    expression = f"({_terms(fares)}) * {len(r.passengers)}"
    return "what the cancelled tickets cost", expression, sum(fares) * len(r.passengers)


def _cancel_fulfill(gen: AirlineGenerator, request: _Request) -> _Draft:
    computation = request.calc

    def fits(user: User, r: Reservation) -> bool:
        if _cancel_reason(gen, r, (), random.Random(0)) is None:
            return False
        # A total needs two amounts to add up: two payments, or fares of a party or trip.
        if computation == "aggregate" and request.writes == 1:
            return len(r.payment_history) >= 2 or len(r.flights) * len(r.passengers) >= 2
        return computation != "conditional" or sum(_refunds([r])) >= 1

    user, chosen = _pick(gen, request, fits, request.writes)
    trips = "; ".join(_trip_text(r) for r in chosen)
    reasons = [_cancel_reason(gen, r, request.focus, request.rng) or "other" for r in chosen]
    refunds = _refunds(chosen)
    ask = f"You want to cancel {trips}."
    extra: list[str] = []
    if computation == "conditional":
        floor = _at_least(sum(refunds), request.rng)
        ask = (
            f"You want to cancel {trips}, but only if at least ${floor} would be refunded in "
            "total; otherwise you keep everything."
        )
    elif computation == "aggregate":
        total_of, expression, total = _cancel_total(chosen)
        extra = [f"You want to know {total_of} in total."]
    draft = gen._base_draft(
        user,
        reason=ask,
        purpose=f"Cancel {len(chosen)} reservation(s) the policy allows cancelling.",
        instructions=[
            f"For {_trip_text(r)} your reason is: {reason.replace('_', ' ')}."
            for r, reason in zip(chosen, reasons, strict=True)
        ]
        + ["You accept that refunds go back to the original payment methods."]
        + extra,
    )
    for r in chosen:
        gen._read_reservation(draft, r)
    if computation == "conditional":
        _calculate(draft, f"{_terms(refunds)} - {floor}", "refund total above the caller's floor")
    elif computation == "aggregate":
        _calculate(draft, expression, total_of)
        draft.communicate.append(money(total, "the total refund"))
    for r, reason in zip(chosen, reasons, strict=True):
        draft.steps.append(_cancel_step(gen, r, reason))
    gen._side_question(draft, request)
    return draft


def _cancel_step(gen: AirlineGenerator, r: Reservation, reason: str) -> Step:
    """The cancellation of ``r`` for ``reason``; the caller states the reason when asked."""
    why = policy.may_cancel(gen.db, r, reason)[1]
    return Step(
        "cancel_reservation",
        {"reservation_id": r.reservation_id},
        info=f"reason: {reason.replace('_', ' ')}. Allowed because {why}.",
        cue=f"The reason is {reason.replace('_', ' ')}.",
    )


def _cancel_refuse(gen: AirlineGenerator, request: _Request) -> _Draft:
    reason = "health" if "refund_eligibility" in request.focus else "change_of_plan"

    def fits(user: User, r: Reservation) -> bool:
        if not _upcoming(gen, r):
            return False
        if "refund_eligibility" in request.focus and r.insurance == "yes":
            return not policy.may_cancel(gen.db, r, "change_of_plan")[0]
        return not policy.may_cancel(gen.db, r, reason)[0]

    user, (reservation,) = _pick(gen, request, fits, 1)
    stated = reason
    if reservation.insurance == "yes" and "refund_eligibility" in request.focus:
        stated = "change_of_plan"
    why = policy.may_cancel(gen.db, reservation, stated)[1]
    draft = gen._base_draft(
        user,
        reason=f"You want to cancel {_trip_text(reservation)} and get a full refund.",
        purpose="Cancellation request the policy forbids; the agent must refuse.",
        instructions=[
            f"Your reason for cancelling is: {stated.replace('_', ' ')} (do not invent another).",
            "If the agent says it cannot be cancelled, do not accept any other change.",
        ],
    )
    gen._read_reservation(draft, reservation)
    draft.note = f"reservation {reservation.reservation_id} cannot be cancelled: {why}"
    draft.refused.append(Step("cancel_reservation", {"reservation_id": reservation.reservation_id}))
    draft.nl_assertions.append(
        f"Agent does not cancel reservation {reservation.reservation_id} because {why}."
    )
    gen._side_question(draft, request)
    return draft


def _compensation_fulfill(gen: AirlineGenerator, request: _Request) -> _Draft:
    def fits(user: User, r: Reservation) -> bool:
        return policy.airline_cancelled(gen.db, r) and policy.compensation(gen.db, user, r)[0] > 0

    user, chosen = _pick(gen, request, fits, request.writes)
    draft = gen._base_draft(
        user,
        reason="The airline cancelled a flight of "
        + "; and of ".join(_trip_text(r) for r in chosen)
        + ", and you want compensation.",
        purpose=f"Compensate {len(chosen)} airline-cancelled reservation(s) with certificates.",
        instructions=[
            "You want compensation for each affected reservation; a travel certificate is fine.",
            "You do not want to cancel or change anything.",
        ],
    )
    for r in chosen:
        gen._read_reservation(draft, r)
        for flight in r.flights:
            if policy.segment_status(gen.db, flight.flight_number, flight.date) == "cancelled":
                draft.steps.append(
                    Step(
                        "get_flight_status",
                        {"flight_number": flight.flight_number, "date": flight.date},
                    )
                )
                break
    amounts = [policy.compensation(gen.db, user, r)[0] for r in chosen]
    if request.calc == "aggregate":
        _calculate(
            draft,
            " + ".join(
                f"{policy.CANCELLED_FLIGHT_COMPENSATION} * {len(r.passengers)}" for r in chosen
            ),
            "compensation: a certificate per passenger of each reservation",
        )
        draft.communicate.append(money(sum(amounts), "the total compensation"))
    for r in chosen:
        amount, why = policy.compensation(gen.db, user, r)
        draft.steps.append(
            Step(
                "send_certificate",
                {"user_id": user.user_id, "amount": amount},
                info=f"for reservation {r.reservation_id}: {why}.",
            )
        )
        draft.communicate.append(
            money(amount, f"the certificate for reservation {r.reservation_id}")
        )
    gen._side_question(draft, request)
    return draft


def _compensation_refuse(gen: AirlineGenerator, request: _Request) -> _Draft:
    def fits(user: User, r: Reservation) -> bool:
        return policy.airline_cancelled(gen.db, r) and policy.compensation(gen.db, user, r)[0] == 0

    user, (reservation,) = _pick(gen, request, fits, 1)
    why = policy.compensation(gen.db, user, reservation)[1]
    draft = gen._base_draft(
        user,
        reason=(
            f"The airline cancelled a flight of {_trip_text(reservation)}; you want compensation."
        ),
        purpose="Compensation request from an ineligible user; the agent must refuse.",
        instructions=["You do not want to cancel or change anything; you only want compensation."],
    )
    gen._read_reservation(draft, reservation)
    draft.note = f"no compensation is possible: {why}"
    draft.refused.append(Step("send_certificate", {"user_id": user.user_id}))
    draft.nl_assertions.append(f"Agent does not offer any compensation because {why}.")
    gen._side_question(draft, request)
    return draft
