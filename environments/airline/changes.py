"""Flight and cabin change tasks, fulfilled or refused as the policy decides."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tau2.domains.airline.data_model import CabinClass, FlightDateStatusAvailable, Reservation, User

from evosyn.environments.airline import policy
from evosyn.environments.airline.grounding import (
    CABINS,
    _at_most,
    _calculate,
    _direct,
    _listed,
    _method_text,
    _money,
    _pick,
    _pick_paying,
    _terms,
    _trip_text,
)
from evosyn.environments.airline.request import _Draft, _Request
from evosyn.environments.kit.grounding import Step, money
from evosyn.environments.kit.screen import GeneratorRejection

if TYPE_CHECKING:
    from evosyn.environments.airline.generator import AirlineGenerator


#: Dates whose flights are still for sale in the airline DB.
BOOKABLE_FROM = "2024-05-16"


def _cabin_plan(gen: AirlineGenerator, r: Reservation, cabin: CabinClass) -> tuple[int, str] | None:
    """Price difference of moving ``r`` to ``cabin`` and its expression (None if no seats)."""
    if cabin == r.cabin or not policy.may_change_cabin(gen.db, r)[0]:
        return None
    passengers = len(r.passengers)
    new: list[int] = []
    for flight in r.flights:
        day = gen.db.flights[flight.flight_number].dates[flight.date]
        # may_change_cabin found every flight of ``r`` still for sale.
        if (
            not isinstance(day, FlightDateStatusAvailable)
            or day.available_seats[cabin] < passengers
        ):
            return None
        new.append(int(day.prices[cabin]))
    old = [f.price for f in r.flights]
    expression = f"({_terms(new)} - ({_terms(old)})) * {passengers}"
    return int((sum(new) - sum(old)) * passengers), expression


def _date_change(
    gen: AirlineGenerator, r: Reservation, options_wanted: str | None = None
) -> tuple[list[dict[str, str]], int, str, str] | None:
    """A same-route move of a one-way direct reservation to another day (earliest flight).

    Args:
        gen: The Generator (for the database).
        r: The reservation to move.
        options_wanted: ``"one"`` for a day with a single direct flight (nothing to choose),
            ``"many"`` for a day with several (the earliest is chosen), None for either.

    Returns:
        New flights, price difference, new date and the difference's expression; None if no
        day fits.
    """
    if r.flight_type != "one_way" or len(r.flights) != 1:
        return None
    if not policy.may_change_flights(gen.db, r)[0] or not policy.all_bookable(gen.db, r):
        return None
    old = r.flights[0]
    passengers = len(r.passengers)
    day = int(old.date[-2:])
    for shift in (1, 2, -1, 3, -2):
        date = f"2024-05-{day + shift:02d}"
        if not BOOKABLE_FROM <= date <= "2024-05-30":
            continue
        options = _direct(gen, r.origin, r.destination, date, r.cabin, passengers)
        listed = _listed(gen, r.origin, r.destination, date)
        if not options or (options_wanted == "one" and listed != 1):
            continue
        if options_wanted == "many" and listed < 2:
            continue
        departure, number, price = min(options)
        if sum(1 for o in options if o[0] == departure) > 1:
            continue
        return (
            [{"flight_number": number, "date": date}],
            int((price - old.price) * passengers),
            date,
            f"({price} - {_money(old.price)}) * {passengers}",
        )
    return None


_ChangePlan = tuple[str, list[dict[str, str]], int, str, str]
"""A change of a reservation: new cabin, new flights, price difference, what it does in
words, and the difference's expression."""


def _change_plan(
    gen: AirlineGenerator, request: _Request, r: Reservation, prefer_dates: bool
) -> _ChangePlan | None:
    """A move of ``r`` to another day (preferred, or needed for a choice) or a cabin change."""
    if prefer_dates or request.choice == "many":
        move = _date_change(gen, r, request.choice)
        if move is not None:
            what = f"move it to the earliest direct flight on {move[2]}"
            return (r.cabin, move[0], move[1], what, move[3])
    order = list(CABINS)
    request.rng.shuffle(order)
    for cabin in order:
        cabin_plan = _cabin_plan(gen, r, cabin)
        if cabin_plan is not None:
            flights = [{"flight_number": f.flight_number, "date": f.date} for f in r.flights]
            what = f"change the cabin to {cabin.replace('_', ' ')}"
            return (cabin, flights, cabin_plan[0], what, cabin_plan[1])
    return None


def _moves(r: Reservation, plan: _ChangePlan) -> bool:
    """Whether ``plan`` moves ``r`` to other flights (a search lists them)."""
    return plan[1][0]["date"] != r.flights[0].date


def _change_fulfill(gen: AirlineGenerator, request: _Request) -> _Draft:
    computation = request.calc
    prefer_dates = "search_compare_then_book" in request.patterns or request.rng.random() < 0.5

    def plan_for(user: User, r: Reservation) -> _ChangePlan | None:
        return _change_plan(gen, request, r, prefer_dates)

    def fits(user: User, r: Reservation) -> bool:
        return policy.may_change_cabin(gen.db, r)[0]

    def accept(ready: list[tuple[Reservation, _ChangePlan]]) -> bool:
        # An optimisation needs one move to pick among several flights; the rest may differ.
        moved = any(p[1][0]["date"] != r.flights[0].date for r, p in ready)
        return request.choice != "many" or moved

    picked = _pick_paying(
        gen,
        request,
        fits,
        plan_for,
        charge=lambda ready: sum(max(p[2], 0) for _, p in ready),
        accept=accept,
    )
    if picked is None:
        raise GeneratorRejection(
            f"no user has {request.writes} reservation(s) whose flights or cabin can be changed"
        )
    user, ready, method = picked
    total = sum(p[2] for _, p in ready)
    difference = " + ".join(p[4] for _, p in ready)
    ask = "You want to " + "; and ".join(f"{p[3]} for {_trip_text(r)}" for r, p in ready) + "."
    if computation == "conditional":
        budget = _at_most(total, request.rng)
        ask = ask[:-1] + f", but only if the price difference is at most ${budget} in total."
    draft = gen._base_draft(
        user,
        reason=ask,
        purpose=f"Change {len(ready)} reservation(s) as the policy allows.",
        instructions=[
            f"Use {_method_text(user, method)} for any charge or refund.",
            "Keep everything else (passengers, bags) unchanged.",
        ],
    )
    for r, _ in ready:
        gen._read_reservation(draft, r)
    searches = [
        Step(
            "search_direct_flight",
            {"origin": r.origin, "destination": r.destination, "date": flights[0]["date"]},
        )
        for r, (_, flights, *_) in ready
        if flights[0]["date"] != r.flights[0].date
    ]
    if computation == "conditional":
        draft.steps += searches
        _calculate(draft, f"{budget} - ({difference})", "price difference under the budget")
    elif computation == "aggregate":
        draft.steps += searches
        _calculate(draft, difference, "total price difference")
    else:
        searches.reverse()
    for r, (cabin, flights, diff, what, _) in ready:
        if flights[0]["date"] != r.flights[0].date and computation not in (
            "aggregate",
            "conditional",
        ):
            draft.steps.append(searches.pop())
        draft.steps.append(
            Step(
                "update_reservation_flights",
                {
                    "reservation_id": r.reservation_id,
                    "cabin": cabin,
                    "flights": flights,
                    "payment_id": method.id,
                },
                info=f"{what}; price difference ${diff}.",
            )
        )
        if diff:
            what_diff = "fare difference you pay" if diff > 0 else "fare difference refunded"
            draft.communicate.append(
                money(diff, f"the {what_diff} for reservation {r.reservation_id}")
            )
    gen._side_question(draft, request)
    return draft


def _change_refuse(gen: AirlineGenerator, request: _Request) -> _Draft:
    flown_variant = "time_window_constraint" in request.focus or request.rng.random() < 0.4

    def fits(user: User, r: Reservation) -> bool:
        if r.status == "cancelled":
            return False
        if flown_variant:
            return policy.has_flown(gen.db, r)
        return r.cabin == "basic_economy" and not policy.has_flown(gen.db, r)

    user, (reservation,) = _pick(gen, request, fits, 1)
    change: dict[str, Any] = {"reservation_id": reservation.reservation_id}
    if flown_variant:
        target = "business" if reservation.cabin != "business" else "economy"
        ask = f"You want to upgrade {_trip_text(reservation)} to {target}."
        why = policy.may_change_cabin(gen.db, reservation)[1]
        change["cabin"] = target
    else:
        later = reservation.flights[0].date
        ask = f"You want to move {_trip_text(reservation)} to a flight one day later than {later}."
        why = policy.may_change_flights(gen.db, reservation)[1]
    draft = gen._base_draft(
        user,
        reason=ask,
        purpose="Flight or cabin change the policy forbids; the agent must refuse.",
        instructions=[
            "If the agent says it cannot be changed, accept it and ask for nothing else."
        ],
    )
    gen._read_reservation(draft, reservation)
    draft.note = why
    draft.refused.append(Step("update_reservation_flights", change))
    draft.nl_assertions.append(
        f"Agent does not modify reservation {reservation.reservation_id} because {why}."
    )
    gen._side_question(draft, request)
    return draft
