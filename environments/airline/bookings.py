"""Booking tasks: new one-way, round and one-stop trips, how they are paid, refused ones."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tau2.domains.airline.data_model import CabinClass, FlightDateStatusAvailable, User

from evosyn.environments.airline import policy
from evosyn.environments.airline.grounding import (
    CABINS,
    _at_most,
    _calculate,
    _direct,
    _listed,
    _method_text,
)
from evosyn.environments.airline.request import _SPLIT_SOURCES, _Draft, _Request
from evosyn.environments.kit import phrasing
from evosyn.environments.kit.grounding import PROPOSAL_CHALLENGES, Step, money
from evosyn.environments.kit.screen import GeneratorRejection

if TYPE_CHECKING:
    from evosyn.environments.airline.generator import AirlineGenerator


#: Days a new trip may leave on (flights still for sale).
_TRAVEL_DATES = tuple(f"2024-05-{d}" for d in range(16, 31))
#: Kinds of new trip a booking may be, seeded (a one-way direct flight twice as often); the
#: values of ``trip_shape``.
_TRIPS = ("one_way", "one_way", "round_trip", "connection")


@dataclass
class _Wallet:
    """What a caller's saved payment methods still hold while a task books several trips."""

    user: User
    balances: dict[str, float]
    certificate_used: bool = False

    @classmethod
    def of(cls, user: User) -> _Wallet:
        """The caller's saved methods as the database holds them."""
        return cls(
            user, {k: float(getattr(m, "amount", 0.0)) for k, m in user.payment_methods.items()}
        )

    def source(self, key: str) -> str:
        """The kind of the saved method ``key`` (credit_card, gift_card, certificate)."""
        return str(self.user.payment_methods[key].source)

    def spend(self, payments: list[dict[str, Any]]) -> None:
        """Take ``payments`` off the balances (a certificate is used up whole)."""
        for payment in payments:
            key = payment["payment_id"]
            self.balances[key] = self.balances.get(key, 0.0) - payment["amount"]
            if self.source(key) == "certificate":
                self.certificate_used = True


@dataclass
class _Booking:
    """A new reservation a task books: its arguments, its price and how the caller asks."""

    args: dict[str, Any]
    total: int
    #: The total's expression: fares times passengers, insurance, paid bags.
    cost: str
    #: The searches that list its flights, in order.
    searches: list[Step]
    #: What the caller asks for, in the scenario's words.
    line: str
    #: What the price answers ("the price of the round trip from JFK to ORD").
    topic: str


def _leg(
    gen: AirlineGenerator,
    request: _Request,
    route: tuple[str, str],
    date: str,
    cabin: CabinClass,
    seats: int,
    used: set[tuple[str, str]],
) -> tuple[str, int, int] | None:
    """The direct flight a booking takes on one leg: (number, price, flights listed).

    The cheapest one with seats, if it is the only cheapest, and if what the search lists
    fits the requested choice ("one": a single flight; None, "many": any); None otherwise.
    """
    origin, destination = route
    options = [
        o for o in _direct(gen, origin, destination, date, cabin, seats) if (o[1], date) not in used
    ]
    listed = _listed(gen, origin, destination, date)
    if not options or (request.choice == "one" and listed != 1):
        return None
    cheapest = min(o[2] for o in options)
    if sum(1 for o in options if o[2] == cheapest) > 1:
        return None
    number = next(o[1] for o in options if o[2] == cheapest)
    return number, cheapest, listed


def _onestop(
    gen: AirlineGenerator, origin: str, destination: str, date: str
) -> list[tuple[tuple[str, str], tuple[str, str]]]:
    """The pairs ``search_onestop_flight`` lists, as ((number, date), (number, date)).

    As τ²-bench pairs them: a flight for sale from ``origin`` on ``date``, then one for sale
    from its destination to ``destination`` leaving after it lands (the next day if it lands
    after midnight).
    """
    pairs = []
    for outbound in gen._departing.get(origin, ()):
        day = outbound.dates.get(date)
        if day is None or day.status != "available":
            continue
        landing = outbound.scheduled_arrival_time_est
        date2 = f"2024-05-{int(date[-2:]) + 1}" if "+1" in landing else date
        for second in gen._departing.get(outbound.destination, ()):
            later = second.dates.get(date2)
            if (
                second.destination == destination
                and later is not None
                and later.status == "available"
                and second.scheduled_departure_time_est >= landing
            ):
                pairs.append(((outbound.flight_number, date), (second.flight_number, date2)))
    return pairs


def _connection(
    gen: AirlineGenerator,
    request: _Request,
    route: tuple[str, str],
    date: str,
    cabin: CabinClass,
    seats: int,
    used: set[tuple[str, str]],
) -> tuple[list[tuple[str, str]], list[int], int] | None:
    """The one-stop connection a booking takes: its legs, their prices, the pairs listed.

    The cheapest pair with seats on both legs, if it is the only cheapest; for choice "one"
    the search must list that one pair alone. None where nothing fits.
    """
    pairs = _onestop(gen, *route, date)
    if not pairs or (request.choice == "one" and len(pairs) != 1):
        return None
    priced: list[tuple[int, list[tuple[str, str]], list[int]]] = []
    for pair in pairs:
        prices = []
        for number, day in pair:
            status = gen.db.flights[number].dates[day]
            if (
                not isinstance(status, FlightDateStatusAvailable)
                or status.available_seats[cabin] < seats
                or (number, day) in used
            ):
                break
            prices.append(int(status.prices[cabin]))
        else:
            priced.append((sum(prices), list(pair), prices))
    if not priced:
        return None
    cheapest = min(p[0] for p in priced)
    if sum(1 for p in priced if p[0] == cheapest) > 1:
        return None
    _, legs, fares = next(p for p in priced if p[0] == cheapest)
    return legs, fares, len(pairs)


def _payments(
    gen: AirlineGenerator, request: _Request, wallet: _Wallet, total: int
) -> tuple[list[dict[str, Any]], str] | None:
    """How a booking of ``total`` is paid, and the caller's words for it; None if it cannot be.

    One method (a card, or a gift card or certificate that covers it), or a gift card or
    certificate for all it holds and a credit card for the rest: the policy allows one
    certificate, one credit card and three gift cards per reservation. A split is never
    offered where a proposal challenge must vary the one method a booking charges. A requested
    ``payment_split`` is the only way offered.
    """
    rng, user = request.rng, wallet.user
    methods = sorted(user.payment_methods)
    single = [
        k
        for k in methods
        if wallet.source(k) == "credit_card"
        or (wallet.source(k) == "gift_card" and wallet.balances[k] >= total)
        or (
            wallet.source(k) == "certificate"
            and not wallet.certificate_used
            and wallet.balances[k] >= total
            and "payment_or_credit_constraint" in request.focus
        )
    ]
    splits = []
    if not set(PROPOSAL_CHALLENGES) & set(request.challenges):
        cards = [k for k in methods if wallet.source(k) == "credit_card"]
        partial = [
            k
            for k in methods
            if wallet.source(k) in ("gift_card", "certificate")
            and 0 < wallet.balances[k] < total
            and float(wallet.balances[k]).is_integer()
            and not (wallet.source(k) == "certificate" and wallet.certificate_used)
        ]
        splits = [(p, c) for p in partial for c in cards]
    if request.pay is not None:
        source = _SPLIT_SOURCES.get(request.pay)
        splits = [(p, c) for p, c in splits if wallet.source(p) == source]
        single = single if source is None else []
    if splits and (not single or rng.random() < 0.5):
        part, card = rng.choice(splits)
        held = int(wallet.balances[part])
        payments = [
            {"payment_id": part, "amount": held},
            {"payment_id": card, "amount": total - held},
        ]
        words = (
            f"Pay with {_method_text(user, user.payment_methods[part])} for all it holds "
            f"(${held}) and with {_method_text(user, user.payment_methods[card])} for the rest."
        )
    elif single:
        payer = rng.choice(single)
        payments = [{"payment_id": payer, "amount": total}]
        words = f"Pay with {_method_text(user, user.payment_methods[payer])}."
    else:
        return None
    wallet.spend(payments)
    return payments, words


def _plan_booking(
    gen: AirlineGenerator,
    request: _Request,
    wallet: _Wallet,
    used: set[tuple[str, str]],
) -> _Booking | None:
    """A new trip the caller can book and pay for: one-way, round trip or with one stop.

    Seeded: the kind of trip, route, date, cabin, party, bags, insurance and payment; a trip
    whose searches do not fit the requested choice, or that no saved method can pay, is
    drawn again (twelve tries).
    """
    rng, user = request.rng, wallet.user
    routes = gen._routes
    kinds = [k for k in _TRIPS if not (k == "connection" and request.choice == "many")]
    if request.trip is not None:
        kinds = [k for k in kinds if k == request.trip]
    for _try in range(12):
        kind = rng.choice(kinds)
        origin, destination = rng.choice(routes)
        if kind == "connection":
            destination = rng.choice(sorted({d for _, d in routes} - {origin, destination}))
        date = rng.choice(_TRAVEL_DATES)
        cabin = rng.choice(CABINS)
        others = list(user.saved_passengers)
        rng.shuffle(others)
        people = [user.name.model_dump() | {"dob": user.dob}] + [
            p.model_dump() for p in others[: rng.randint(0, min(2, len(others)))]
        ]
        legs: list[tuple[str, str]] = []
        prices: list[int] = []
        listed: list[int] = []
        searches = []
        if kind == "connection":
            found = _connection(gen, request, (origin, destination), date, cabin, len(people), used)
            if found is None:
                continue
            legs, prices = found[0], found[1]
            listed = [found[2]]
            searches = [
                Step(
                    "search_onestop_flight",
                    {"origin": origin, "destination": destination, "date": date},
                )
            ]
        else:
            days = [(origin, destination, date)]
            if kind == "round_trip":
                back = int(date[-2:]) + rng.randint(2, 6)
                if back > 30:
                    continue
                days.append((destination, origin, f"2024-05-{back}"))
            for leg_from, leg_to, day in days:
                found_leg = _leg(gen, request, (leg_from, leg_to), day, cabin, len(people), used)
                if found_leg is None:
                    break
                legs.append((found_leg[0], day))
                prices.append(found_leg[1])
                listed.append(found_leg[2])
                searches.append(
                    Step(
                        "search_direct_flight",
                        {"origin": leg_from, "destination": leg_to, "date": day},
                    )
                )
            if len(legs) < len(days) or (request.choice == "many" and max(listed) < 2):
                continue
        insurance = rng.random() < 0.5
        bags = rng.randint(0, 2) * len(people)
        nonfree = policy.nonfree_bags(bags, user.membership, cabin, len(people))
        total = policy.booking_price(prices, len(people), insurance, nonfree)
        paid = _payments(gen, request, wallet, total)
        if paid is None:
            continue
        payments, pay_words = paid
        used.update(legs)
        fares = " + ".join(str(p) for p in prices)
        fare = f"({fares}) * {len(people)}" if len(prices) > 1 else f"{fares} * {len(people)}"
        extras = (f" + {policy.INSURANCE_FEE} * {len(people)}" if insurance else "") + (
            f" + {policy.BAG_FEE} * {nonfree}" if nonfree else ""
        )
        names = ", ".join(f"{p['first_name']} {p['last_name']} ({p['dob']})" for p in people)
        cabin_words = cabin.replace("_", " ")
        if kind == "connection":
            which = "the cheapest connection" if listed[0] > 1 else "the only connection"
            trip = f"a one-way {cabin_words} trip from {origin} to {destination} on {date} "
            line = f"Book {trip}with one stop: {which}."
            topic = f"the price of the one-stop trip from {origin} to {destination}"
        elif kind == "round_trip":
            which = "the cheapest direct flight" if max(listed) > 1 else "the direct flight"
            line = (
                f"Book a round trip in {cabin_words} from {origin} to {destination}, leaving on "
                f"{date} and returning on {legs[1][1]}: {which} each way."
            )
            topic = f"the price of the round trip from {origin} to {destination}"
        else:
            which = "the cheapest direct flight" if listed[0] > 1 else "the direct flight"
            line = (
                f"Book a one-way {cabin_words} trip from {origin} to {destination} on {date}: "
                f"{which}."
            )
            topic = f"the price of the booking on flight {legs[0][0]}"
        line += (
            f" Passengers: {names}. "
            f"{phrasing.count(bags, 'checked bag', 'checked bags')} in total. "
            f"Travel insurance: {'yes' if insurance else 'no'}. {pay_words}"
        )
        args = {
            "user_id": user.user_id,
            "origin": origin,
            "destination": destination,
            "flight_type": "round_trip" if kind == "round_trip" else "one_way",
            "cabin": cabin,
            "flights": [{"flight_number": n, "date": d} for n, d in legs],
            "passengers": people,
            "payment_methods": payments,
            "total_baggages": bags,
            "nonfree_baggages": nonfree,
            "insurance": "yes" if insurance else "no",
        }
        return _Booking(args, total, fare + extras, searches, line, topic)
    return None


def _book_steps(
    draft: _Draft, bookings: Sequence[_Booking], calc: str | None, budget: int = 0
) -> None:
    """The searches, the calculation (if any) and the booking of each of ``bookings``.

    With a calculation every price is known before anything is booked: all searches first.
    """
    costs = " + ".join(b.cost for b in bookings)
    if calc in ("aggregate", "conditional"):
        draft.steps += [s for b in bookings for s in b.searches]
        if calc == "conditional":
            _calculate(draft, f"{budget} - ({costs})", "total price under the budget")
        else:
            _calculate(draft, costs, "total price of the bookings")
            draft.communicate.append(
                money(sum(b.total for b in bookings), "the total price of the bookings")
            )
    for booking in bookings:
        if calc not in ("aggregate", "conditional"):
            draft.steps += booking.searches
        numbers = " and ".join(f["flight_number"] for f in booking.args["flights"])
        draft.steps.append(
            Step(
                "book_reservation",
                booking.args,
                info=f"flights {numbers}; total ${booking.total}.",
            )
        )
        draft.communicate.append(money(booking.total, booking.topic))


def _booking_fulfill(gen: AirlineGenerator, request: _Request) -> _Draft:
    computation = request.calc
    for user in gen._shuffled_users(request):
        if not user.payment_methods:
            continue
        wallet = _Wallet.of(user)
        used: set[tuple[str, str]] = set()
        bookings: list[_Booking] = []
        for _ in range(request.writes):
            made = _plan_booking(gen, request, wallet, used)
            if made is None:
                break
            bookings.append(made)
        if len(bookings) < request.writes:
            continue
        lines = [b.line for b in bookings]
        grand = sum(b.total for b in bookings)
        if len(bookings) > 1:
            ask = f"You want to book {len(bookings)} new trips."
        elif bookings[0].args["flight_type"] == "round_trip":
            ask = "You want to book a new round trip."
        else:
            ask = "You want to book a new one-way trip."
        budget = 0
        if computation == "conditional":
            budget = _at_most(grand, request.rng)
            ask = ask[:-1] + f", but only if they cost at most ${budget} in total."
        elif computation == "aggregate":
            lines.append("You want to know what everything costs in total.")
        draft = gen._base_draft(
            user,
            reason=ask,
            purpose=f"Book {len(bookings)} reservation(s) after searching flights.",
            instructions=lines,
        )
        _book_steps(draft, bookings, computation, budget)
        gen._side_question(draft, request)
        return draft
    asked = "".join(
        f", {name}={value}"
        for name, value in (("trip_shape", request.trip), ("payment_split", request.pay))
        if value is not None
    )
    raise GeneratorRejection(f"no user can pay for {request.writes} booking(s){asked}")


def _booking_refuse(gen: AirlineGenerator, request: _Request) -> _Draft:
    rng = request.rng
    certificates = "payment_or_credit_constraint" in request.focus
    for user in gen._shuffled_users(request):
        certs = [
            k
            for k in sorted(user.payment_methods)
            if user.payment_methods[k].source == "certificate"
        ]
        if certificates and len(certs) < 2:
            continue
        origin, destination = rng.choice(
            sorted({(f.origin, f.destination) for f in gen.db.flights.values()})
        )
        date = f"2024-05-{rng.randint(16, 30)}"
        if certificates:
            ask = (
                f"You want to book a one-way economy trip from {origin} to {destination} on {date} "
                f"and pay with two of your travel certificates: "
                f"{_method_text(user, user.payment_methods[certs[0]])} and "
                f"{_method_text(user, user.payment_methods[certs[1]])}."
            )
            ok, why = policy.payment_mix_allowed(["certificate", "certificate"])
            rule = "use two travel certificates"
            asked: dict[str, Any] = {
                "payment_methods": [{"payment_id": k} for k in certs[:2]],
            }
        else:
            party = policy.MAX_PASSENGERS + rng.randint(1, 2)
            ask = (
                f"You want one reservation for {party} passengers on a one-way economy trip from "
                f"{origin} to {destination} on {date}."
            )
            ok, why = policy.passengers_allowed(party)
            rule = f"book {party} passengers in one reservation"
            asked = {}
        assert not ok
        draft = gen._base_draft(
            user,
            reason=ask,
            purpose="Booking request that breaks a booking rule; the agent must refuse.",
            instructions=[
                "You insist on exactly this; if it is not possible, you do not want any booking."
            ],
        )
        draft.note = why
        trip = {"origin": origin, "destination": destination, "flight_type": "one_way"}
        booking = {"user_id": user.user_id, **trip, "cabin": "economy", **asked}
        draft.refused.append(Step("book_reservation", booking))
        draft.nl_assertions.append(f"Agent does not {rule} because {why}.")
        gen._side_question(draft, request)
        return draft
    raise GeneratorRejection("no user has two travel certificates to combine")
