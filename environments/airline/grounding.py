"""What the airline task builders share: picking callers and reservations, words, sums, searches."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

from tau2.domains.airline.data_model import CabinClass, PaymentMethod, Reservation, User

from evosyn.environments.airline import policy
from evosyn.environments.airline.request import _Draft, _Request
from evosyn.environments.kit.grounding import Step, payment_text
from evosyn.environments.kit.screen import GeneratorRejection

if TYPE_CHECKING:
    from evosyn.environments.airline.generator import AirlineGenerator


#: Fitting users tried for one that also matches the focus (a soft preference).
PREFERENCE_SCAN = 60
#: Cabins, in the order a change or a booking tries them.
CABINS: tuple[CabinClass, ...] = ("economy", "business", "basic_economy")


def _money(amount: float) -> str:
    # τ²-bench strips commas from replies before matching, so no thousands separators.
    return str(int(amount)) if float(amount).is_integer() else f"{amount:.2f}"


def _method_text(user: User, method: PaymentMethod) -> str:
    return payment_text(method, list(user.payment_methods.values()))


def _trip_text(reservation: Reservation) -> str:
    # The segments' route, since some round trips store the same origin and destination.
    flights = reservation.flights
    route = "-".join([flights[0].origin] + [f.destination for f in flights])
    kind = "round trip" if reservation.flight_type == "round_trip" else "one-way trip"
    return f"the {kind} {route} departing {flights[0].date}"


def _upcoming(gen: AirlineGenerator, reservation: Reservation) -> bool:
    """Whether a reservation is still active and none of it has been flown."""
    return reservation.status != "cancelled" and not policy.has_flown(gen.db, reservation)


def _prefers(focus: Sequence[str], reservation: Reservation, gen: AirlineGenerator) -> bool:
    """Whether the reservation shows the rule the blueprint focuses on (soft preference)."""
    if "time_window_constraint" in focus:
        return policy.booked_recently(reservation)
    if "fare_rule_constraint" in focus:
        return bool(reservation.cabin == "business")
    if "refund_eligibility" in focus:
        return bool(reservation.insurance == "yes")
    if "compensation_eligibility" in focus:
        return policy.airline_cancelled(gen.db, reservation)
    return True


def _pick(
    gen: AirlineGenerator, request: _Request, fits: Callable[[User, Reservation], bool], count: int
) -> tuple[User, list[Reservation]]:
    """The first user (seeded) with ``count`` fitting reservations, focus-matching first.

    The focus is a soft preference: after the first fitting user, at most
    :data:`PREFERENCE_SCAN` more are tried for one whose reservations show the focus.
    """
    preferred = None
    for scanned, (user, chosen) in enumerate(gen._users_with(request, fits, count)):
        if all(_prefers(request.focus, r, gen) for r in chosen):
            return user, chosen
        if preferred is None:
            preferred = (user, chosen)
        if scanned >= PREFERENCE_SCAN:
            break
    if preferred is None:
        raise GeneratorRejection(
            f"no user has {count} reservation(s) fitting {request.family}/{request.outcome}"
        )
    return preferred


def _calculate(draft: _Draft, expression: str, what: str) -> None:
    """The agent's ``calculate`` call for the value the task turns on."""
    draft.steps.append(Step("calculate", {"expression": expression}, info=what))


def _at_most(cost: float, rng: random.Random) -> int:
    """A round dollar budget the cost fits under (for a conditional request)."""
    return int((max(cost, 0) // 50 + 1 + rng.randint(0, 2)) * 50)


def _at_least(amount: float, rng: random.Random) -> int:
    """A round dollar floor the amount reaches (for a conditional request)."""
    floor = int(amount // 50 * 50) - 50 * rng.randint(0, 1)
    return floor if floor >= 1 else max(1, int(amount))


def _terms(amounts: Sequence[float]) -> str:
    return " + ".join(_money(a) for a in amounts)


_Plan = TypeVar("_Plan")


def _pick_paying(
    gen: AirlineGenerator,
    request: _Request,
    fits: Callable[[User, Reservation], bool],
    plan: Callable[[User, Reservation], _Plan | None],
    charge: Callable[[list[tuple[Reservation, _Plan]]], int],
    accept: Callable[[list[tuple[Reservation, _Plan]]], bool] = lambda ready: True,
) -> tuple[User, list[tuple[Reservation, _Plan]], PaymentMethod] | None:
    """The first user (seeded) whose fitting reservations all have a plan and a card to pay.

    Returns:
        The user, each chosen reservation with its plan, and the payment method; None if no
        user qualifies.
    """
    for user, chosen in gen._users_with(request, fits, request.writes):
        plans = [plan(user, r) for r in chosen]
        ready = [(r, p) for r, p in zip(chosen, plans, strict=True) if p is not None]
        if len(ready) < len(chosen) or not accept(ready):
            continue
        method = gen._payment(user, charge(ready), request.rng, update=True)
        if method is not None:
            return user, ready, method
    return None


def _listed(gen: AirlineGenerator, origin: str, destination: str, date: str) -> int:
    """How many flights ``search_direct_flight`` lists (it ignores cabins and seats)."""
    return sum(
        1
        for flight in gen.db.flights.values()
        if flight.origin == origin
        and flight.destination == destination
        and date in flight.dates
        and flight.dates[date].status == "available"
    )


def _direct(
    gen: AirlineGenerator,
    origin: str,
    destination: str,
    date: str,
    cabin: CabinClass,
    seats: int,
) -> list[tuple[str, str, int]]:
    """Bookable direct flights as (departure, number, price in ``cabin``)."""
    out = []
    for number in sorted(gen.db.flights):
        flight = gen.db.flights[number]
        if flight.origin != origin or flight.destination != destination:
            continue
        day = flight.dates.get(date)
        if day is None or day.status != "available" or day.available_seats[cabin] < seats:
            continue
        out.append((flight.scheduled_departure_time_est, number, int(day.prices[cabin])))
    return out
