"""Builders of the mixed shapes: several kinds of write, or a transfer to a human agent."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from tau2.domains.airline.data_model import Reservation, User

from evosyn.environments.airline import policy
from evosyn.environments.airline.bookings import _book_steps, _plan_booking, _Wallet
from evosyn.environments.airline.cancellations import _cancel_reason, _cancel_step
from evosyn.environments.airline.changes import _change_plan, _moves
from evosyn.environments.airline.grounding import (
    _calculate,
    _method_text,
    _pick,
    _trip_text,
    _upcoming,
)
from evosyn.environments.airline.request import _Draft, _Request
from evosyn.environments.kit import phrasing
from evosyn.environments.kit.grounding import Step, money
from evosyn.environments.kit.screen import GeneratorRejection
from evosyn.records import Answer

if TYPE_CHECKING:
    from evosyn.environments.airline.generator import AirlineGenerator


def _swaps(user: User, r: Reservation) -> list[dict[str, str]]:
    """Travellers the caller may put on ``r`` in place of a passenger: not on it already."""
    on = {(p.first_name, p.last_name) for p in r.passengers}
    people = [user.name.model_dump() | {"dob": user.dob}]
    people += [p.model_dump() for p in user.saved_passengers]
    out: list[dict[str, str]] = []
    for person in people:
        key = (person["first_name"], person["last_name"])
        if key not in on and key not in {(p["first_name"], p["last_name"]) for p in out}:
            out.append(person)
    return out


def _modify(
    gen: AirlineGenerator, request: _Request, *, change: bool, swap: bool, bags: bool
) -> _Draft:
    """Changes to one reservation: its flights or cabin, a passenger, more bags (in that order).

    One saved card or gift card pays for the fare difference and the bag fee alike.
    """
    rng = request.rng
    prefer_dates = request.choice == "many" or rng.random() < 0.5

    def fits(user: User, r: Reservation) -> bool:
        if not _upcoming(gen, r) or (swap and not _swaps(user, r)):
            return False
        if change and not policy.may_change_cabin(gen.db, r)[0]:
            return False
        return not bags or policy.baggage_consistent(r, user.membership)

    for user, (r,) in gen._users_with(request, fits, 1):
        plan = _change_plan(gen, request, r, prefer_dates) if change else None
        if change and (plan is None or (request.choice == "many" and not _moves(r, plan))):
            continue
        cabin = plan[0] if plan else r.cabin
        diff = plan[2] if plan else 0
        added = total = nonfree = fee = 0
        if bags:
            added = rng.randint(1, 3)
            total = r.total_baggages + added
            nonfree = policy.nonfree_bags(total, user.membership, cabin, len(r.passengers))
            if nonfree < r.nonfree_baggages:
                continue  # the new cabin's allowance would turn paid bags free
            fee = policy.BAG_FEE * (nonfree - r.nonfree_baggages)
        if request.calc and (diff < 0 or not diff + fee):
            continue  # a total to add up needs charges
        method = None
        if change or bags:
            method = gen._payment(user, max(diff, 0) + fee, rng, update=True)
            if method is None:
                continue
        doing = [plan[3]] if plan else []
        if bags:
            doing.append(f"add {phrasing.count(added, 'more checked bag', 'more checked bags')}")
        sentences = [f"For {_trip_text(r)}, you want to {' and '.join(doing)}."] if doing else []
        instructions = []
        if swap:
            new = rng.choice(_swaps(user, r))
            index = rng.randrange(len(r.passengers))
            old = r.passengers[index]
            name = f"{new['first_name']} {new['last_name']}"
            who = f"{name} (born {new['dob']})"
            if (new["first_name"], new["last_name"]) == (user.name.first_name, user.name.last_name):
                who = f"you ({name}, born {new['dob']})"
            lead = (
                "On that trip," if doing else f"You want to change a passenger on {_trip_text(r)}:"
            )
            sentences.append(f"{lead} {who} will fly instead of {old.first_name} {old.last_name}.")
            instructions.append("Keep the other passengers as they are.")
        if method is not None:
            instructions.append(f"Use {_method_text(user, method)} for any charge or refund.")
        instructions.append("You do not want any other change.")
        draft = gen._base_draft(
            user,
            reason=" ".join(sentences),
            purpose="Modify one reservation as the policy allows: "
            + ", ".join(
                w for w, on in (("flights", change), ("passenger", swap), ("bags", bags)) if on
            )
            + ".",
            instructions=instructions,
        )
        gen._read_reservation(draft, r)
        if plan and _moves(r, plan):
            draft.steps.append(
                Step(
                    "search_direct_flight",
                    {"origin": r.origin, "destination": r.destination, "date": plan[1][0]["date"]},
                )
            )
        fee_term = f"{policy.BAG_FEE} * {nonfree - r.nonfree_baggages}"
        if request.calc == "aggregate":
            terms = [
                t for t, on in ((plan[4] if plan else "", bool(diff)), (fee_term, bool(fee))) if on
            ]
            _calculate(draft, " + ".join(terms), "total charge of the changes")
            draft.communicate.append(money(diff + fee, "the total charge of the changes"))
        if plan and method is not None:
            draft.steps.append(
                Step(
                    "update_reservation_flights",
                    {
                        "reservation_id": r.reservation_id,
                        "cabin": cabin,
                        "flights": plan[1],
                        "payment_id": method.id,
                    },
                    info=f"{plan[3]}; price difference ${diff}.",
                )
            )
            if diff:
                what = "fare difference you pay" if diff > 0 else "fare difference refunded"
                draft.communicate.append(
                    money(diff, f"the {what} for reservation {r.reservation_id}")
                )
        if swap:
            people = [p.model_dump() for p in r.passengers]
            people[index] = new
            draft.steps.append(
                Step(
                    "update_reservation_passengers",
                    {"reservation_id": r.reservation_id, "passengers": people},
                    info=f"{name} in place of {old.first_name} {old.last_name}.",
                )
            )
        if bags and method is not None:
            draft.steps.append(
                Step(
                    "update_reservation_baggages",
                    {
                        "reservation_id": r.reservation_id,
                        "total_baggages": total,
                        "nonfree_baggages": nonfree,
                        "payment_id": method.id,
                    },
                    info=f"{phrasing.count(added, 'bag', 'bags')} added; {nonfree} of {total} "
                    f"beyond the free allowance; fee ${fee}.",
                )
            )
            if fee:
                draft.communicate.append(
                    money(fee, f"the bag fee for reservation {r.reservation_id}")
                )
        gen._side_question(draft, request)
        return draft
    raise GeneratorRejection(f"no user has a reservation open for the {request.shape} changes")


def _change_and_bags(gen: AirlineGenerator, request: _Request) -> _Draft:
    return _modify(gen, request, change=True, swap=False, bags=True)


def _passenger_swap(gen: AirlineGenerator, request: _Request) -> _Draft:
    return _modify(gen, request, change=False, swap=True, bags=False)


def _change_passenger_bags(gen: AirlineGenerator, request: _Request) -> _Draft:
    return _modify(gen, request, change=True, swap=True, bags=True)


def _cancellable(gen: AirlineGenerator, user: User) -> list[Reservation]:
    """The caller's reservations the policy lets the agent cancel for some reason."""
    return [r for r in gen._reservations(user) if _cancel_reason(gen, r, (), random.Random(0))]


def _cancel_and_change(gen: AirlineGenerator, request: _Request) -> _Draft:
    rng = request.rng
    prefer_dates = request.choice == "many" or rng.random() < 0.5
    for user in gen._shuffled_users(request):
        cancellable = _cancellable(gen, user)
        if not cancellable:
            continue
        gone = rng.choice(cancellable)
        changeable = [
            r
            for r in gen._reservations(user)
            if r is not gone and policy.may_change_cabin(gen.db, r)[0]
        ]
        rng.shuffle(changeable)
        for kept in changeable:
            plan = _change_plan(gen, request, kept, prefer_dates)
            if plan is None or (request.choice == "many" and not _moves(kept, plan)):
                continue
            if request.calc and plan[2] <= 0:
                continue
            method = gen._payment(user, max(plan[2], 0), rng, update=True)
            if method is None:
                continue
            reason = _cancel_reason(gen, gone, request.focus, rng) or "other"
            cabin, flights, diff, what, expression = plan
            draft = gen._base_draft(
                user,
                reason=f"You want to cancel {_trip_text(gone)}, and for {_trip_text(kept)} you "
                f"want to {what}.",
                purpose="Cancel one reservation and change another, as the policy allows.",
                instructions=[
                    f"Your reason for cancelling is: {reason.replace('_', ' ')}.",
                    "You accept that refunds go back to the original payment methods.",
                    f"Use {_method_text(user, method)} for any charge or refund of the change.",
                ],
            )
            gen._read_reservation(draft, gone)
            draft.steps.append(_cancel_step(gen, gone, reason))
            gen._read_reservation(draft, kept)
            if _moves(kept, plan):
                draft.steps.append(
                    Step(
                        "search_direct_flight",
                        {
                            "origin": kept.origin,
                            "destination": kept.destination,
                            "date": flights[0]["date"],
                        },
                    )
                )
            if request.calc == "aggregate":
                _calculate(draft, expression, "price difference of the change")
            draft.steps.append(
                Step(
                    "update_reservation_flights",
                    {
                        "reservation_id": kept.reservation_id,
                        "cabin": cabin,
                        "flights": flights,
                        "payment_id": method.id,
                    },
                    info=f"{what}; price difference ${diff}.",
                )
            )
            if diff:
                paid = "fare difference you pay" if diff > 0 else "fare difference refunded"
                draft.communicate.append(
                    money(diff, f"the {paid} for reservation {kept.reservation_id}")
                )
            gen._side_question(draft, request)
            return draft
    raise GeneratorRejection("no user has a reservation to cancel and another to change")


def _cancel_and_book(gen: AirlineGenerator, request: _Request) -> _Draft:
    for user in gen._shuffled_users(request):
        cancellable = _cancellable(gen, user)
        if not cancellable or not user.payment_methods:
            continue
        gone = request.rng.choice(cancellable)
        booking = _plan_booking(gen, request, _Wallet.of(user), set())
        if booking is None:
            continue
        reason = _cancel_reason(gen, gone, request.focus, request.rng) or "other"
        trip = "round trip" if booking.args["flight_type"] == "round_trip" else "one-way trip"
        extra = (
            ["You want to know what the new trip costs in total."]
            if request.calc == "aggregate"
            else []
        )
        draft = gen._base_draft(
            user,
            reason=f"You want to cancel {_trip_text(gone)} and book a new {trip} instead.",
            purpose="Cancel a reservation the policy allows cancelling, then book a new trip.",
            instructions=[
                f"Your reason for cancelling is: {reason.replace('_', ' ')}.",
                "You accept that refunds go back to the original payment methods.",
                booking.line,
                *extra,
            ],
        )
        gen._read_reservation(draft, gone)
        draft.steps.append(_cancel_step(gen, gone, reason))
        _book_steps(draft, [booking], request.calc)
        gen._side_question(draft, request)
        return draft
    raise GeneratorRejection("no user has a reservation to cancel and a new trip to pay for")


def _delayed_cancel(gen: AirlineGenerator, request: _Request) -> _Draft:
    def fits(user: User, r: Reservation) -> bool:
        return (
            _upcoming(gen, r)
            and policy.delayed(gen.db, r)
            and not policy.airline_cancelled(gen.db, r)
            and _cancel_reason(gen, r, (), random.Random(0)) is not None
            and policy.compensation(gen.db, user, r, changed_or_cancelled=True)[0] > 0
        )

    user, (r,) = _pick(gen, request, fits, 1)
    reason = _cancel_reason(gen, r, request.focus, request.rng) or "other"
    late = next(
        f for f in r.flights if policy.segment_status(gen.db, f.flight_number, f.date) == "delayed"
    )
    amount, why = policy.compensation(gen.db, user, r, changed_or_cancelled=True)
    draft = gen._base_draft(
        user,
        reason=f"Your flight {late.flight_number} on {late.date} is delayed, so you want to "
        f"cancel {_trip_text(r)}, and you want compensation for the delay.",
        purpose="Cancel a reservation with a delayed flight, then compensate the delay.",
        instructions=[
            f"Your reason for cancelling is: {reason.replace('_', ' ')}.",
            "You accept that refunds go back to the original payment methods.",
            "A travel certificate is fine as compensation.",
        ],
    )
    gen._read_reservation(draft, r)
    # The policy: confirm the facts (the delay) before compensating.
    draft.steps.append(
        Step("get_flight_status", {"flight_number": late.flight_number, "date": late.date})
    )
    if request.calc == "aggregate":
        _calculate(
            draft,
            f"{policy.DELAYED_FLIGHT_COMPENSATION} * {len(r.passengers)}",
            "compensation: a certificate per passenger for the delay",
        )
    draft.steps.append(_cancel_step(gen, r, reason))
    draft.steps.append(
        Step(
            "send_certificate",
            {"user_id": user.user_id, "amount": amount},
            info=f"for the delay on reservation {r.reservation_id}: {why}.",
        )
    )
    draft.communicate.append(money(amount, "the certificate for the delay"))
    gen._side_question(draft, request)
    return draft


def _flown_flight(gen: AirlineGenerator, r: Reservation) -> str | None:
    """The first flight of ``r`` dated before today, if it has been flown (else None).

    The agent tells it from the reservation's dates alone, as the Teacher's agent does.
    """
    today = policy.NOW.date().isoformat()
    first = next((f for f in r.flights if f.date < today), None)
    if first is None:
        return None
    status = policy.segment_status(gen.db, first.flight_number, first.date)
    return first.flight_number if status in policy.FLOWN_STATUSES else None


def _partly_flown(gen: AirlineGenerator, r: Reservation) -> bool:
    """Whether part of ``r`` was flown before today (its dates show it) and part is ahead."""
    if r.status == "cancelled" or _flown_flight(gen, r) is None:
        return False
    return any(s not in policy.FLOWN_STATUSES for s in policy.segment_statuses(gen.db, r))


#: Why a partly flown trip goes to a human agent (the policy's words).
_FLOWN_WHY = "part of the trip has already been flown, and then only a human agent can help"


def _transfer(gen: AirlineGenerator, draft: _Draft, r: Reservation) -> None:
    """The hand-over of a partly flown trip's cancellation to a human agent.

    Before it the agent names the flight already flown (an expected answer, which also tells
    one such task from another: a transfer's summary is free text).
    """
    flown = _flown_flight(gen, r)
    draft.steps.append(
        Step(
            "transfer_to_human_agents",
            {
                "summary": f"User {draft.user.user_id} wants to cancel reservation "
                f"{r.reservation_id}, part of which has already been flown; the policy leaves "
                "that to a human agent."
            },
            info=f"reservation {r.reservation_id}: {_FLOWN_WHY}.",
        )
    )
    if flown is not None:
        draft.communicate.append(
            Answer(value=flown, topic=f"the flight of reservation {r.reservation_id} flown")
        )


def _cancel_and_transfer(gen: AirlineGenerator, request: _Request) -> _Draft:
    rng = request.rng
    for user in gen._shuffled_users(request):
        cancellable = _cancellable(gen, user)
        flown = [r for r in gen._reservations(user) if _partly_flown(gen, r)]
        if not cancellable or not flown:
            continue
        gone, stuck = rng.choice(cancellable), rng.choice(flown)
        reason = _cancel_reason(gen, gone, request.focus, rng) or "other"
        draft = gen._base_draft(
            user,
            reason=f"You want to cancel {_trip_text(gone)}, and what is left of "
            f"{_trip_text(stuck)}, part of which you have already flown.",
            purpose="Cancel one reservation; the other is partly flown, so the agent transfers.",
            instructions=[
                f"Your reason for cancelling is: {reason.replace('_', ' ')}.",
                "You accept that refunds go back to the original payment methods.",
                "If the agent cannot cancel a trip itself, you accept a transfer to a human agent.",
            ],
        )
        gen._read_reservation(draft, gone)
        gen._read_reservation(draft, stuck)
        draft.steps.append(_cancel_step(gen, gone, reason))
        _transfer(gen, draft, stuck)
        draft.nl_assertions.append(
            f"Agent cancels reservation {gone.reservation_id}, does not cancel reservation "
            f"{stuck.reservation_id} and transfers the user to a human agent because "
            f"{_FLOWN_WHY}."
        )
        gen._side_question(draft, request)
        return draft
    raise GeneratorRejection("no user has a trip to cancel and a partly flown one")


def _flown_transfer(gen: AirlineGenerator, request: _Request) -> _Draft:
    user, (r,) = _pick(gen, request, lambda user, r: _partly_flown(gen, r), 1)
    draft = gen._base_draft(
        user,
        reason=f"You have flown the first part of {_trip_text(r)}, and you want the rest of it "
        "cancelled and refunded.",
        purpose="Cancellation of a partly flown trip: the agent transfers it, as policy requires.",
        instructions=[
            "Your reason for cancelling is: change of plan.",
            "If the agent cannot cancel it, you accept a transfer to a human agent.",
        ],
    )
    gen._read_reservation(draft, r)
    _transfer(gen, draft, r)
    draft.note = _FLOWN_WHY
    draft.refused.append(Step("cancel_reservation", {"reservation_id": r.reservation_id}))
    draft.nl_assertions.append(
        f"Agent does not cancel reservation {r.reservation_id} and transfers the user to a human "
        f"agent because {_FLOWN_WHY}."
    )
    gen._side_question(draft, request)
    return draft
