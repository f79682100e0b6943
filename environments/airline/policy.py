"""The airline agent policy as executable predicates over τ²-bench's airline records.

Each rule of ``policy.md`` that decides whether a request may be fulfilled is a function here,
returning its verdict with a one-line reason. They read the database records (users,
reservations, flights) and never change them; the Generator uses them to pick entities that
make a blueprint true, and tests use them to check what it picked. :func:`violation` is the
Verifier's check: the rule an assistant write breaks on the live database, if any.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Sized
from datetime import datetime, timedelta

from tau2.domains.airline.data_model import FlightDB, PaymentMethod, Reservation, User

from evosyn.environments.base import lookup, objects
from evosyn.environments.kit.phrasing import count

#: The policy's "current time" (EST, naive like the database's timestamps).
NOW = datetime(2024, 5, 15, 15, 0, 0)
#: Hours after booking during which any reservation may be cancelled.
FREE_CANCEL_HOURS = 24
#: Most passengers one reservation may carry.
MAX_PASSENGERS = 5
#: Price of one checked bag beyond the free allowance, in dollars.
BAG_FEE = 50
#: Price of travel insurance per passenger, in dollars.
INSURANCE_FEE = 30
#: Certificate per passenger for a cancelled flight, in dollars.
CANCELLED_FLIGHT_COMPENSATION = 100
#: Certificate per passenger for a delayed flight (after a change or cancellation).
DELAYED_FLIGHT_COMPENSATION = 50
#: Cancellation reasons travel insurance covers.
INSURED_REASONS = frozenset({"health", "weather"})
#: Cancellation reasons the policy names (plus free-form "other").
CANCEL_REASONS = ("change_of_plan", "airline_cancelled", "health", "weather", "other")
#: Most payment methods of each kind one booking may combine.
PAYMENT_LIMITS = {"certificate": 1, "credit_card": 1, "gift_card": 3}
#: Free checked bags per passenger, by membership and cabin.
FREE_BAGS: dict[str, dict[str, int]] = {
    "regular": {"basic_economy": 0, "economy": 1, "business": 2},
    "silver": {"basic_economy": 1, "economy": 2, "business": 3},
    "gold": {"basic_economy": 2, "economy": 3, "business": 4},
}
#: Why insurance cannot be added to a booked trip (it is bought with the booking only).
INSURANCE_LATER = "travel insurance cannot be added after the initial booking"
#: Why a membership level cannot be changed (no tool changes it).
MEMBERSHIP_FIXED = "membership levels cannot be changed by the agent"
#: Flight-date statuses meaning the plane has taken off (the segment counts as flown).
FLOWN_STATUSES = frozenset({"flying", "landed"})

#: How the amounts of the write tools must add up (τ²-bench's tools refuse any other), for
#: the prompts of roles that write gold tool calls.
PAYMENT_RULES = (
    "book_reservation: the total is, for every flight, the price of the reservation's cabin on "
    "that flight's date times the number of passengers, plus "
    f"{INSURANCE_FEE} per passenger with insurance, plus {BAG_FEE} per non-free bag; the "
    "payment_methods amounts must sum to exactly that total, each method must be the user's, "
    "and a gift card or certificate must hold at least its amount.",
    "Every flight booked or changed to needs, on that date, at least as many available seats "
    "in the cabin as the reservation has passengers, and the status 'available'.",
    "update_reservation_flights: the payment method is charged (or refunded) the new flights' "
    "prices in the cabin minus the old flights' prices, times the number of passengers; a gift "
    "card must cover a charge.",
    f"update_reservation_baggages: {BAG_FEE} per non-free bag added, charged to payment_id.",
    "Take every price and seat count from the flight records shown (the flight's dates), "
    "never from memory.",
)

Verdict = tuple[bool, str]


def parse_time(text: str) -> datetime:
    """A database timestamp (``YYYY-MM-DDTHH:MM:SS``) as a naive datetime."""
    return datetime.fromisoformat(text)


def segment_status(db: FlightDB, flight_number: str, date: str) -> str | None:
    """Status of one flight on one date (``available``, ``landed``...); None if unknown."""
    flight = db.flights.get(flight_number)
    if flight is None or date not in flight.dates:
        return None
    status: str = flight.dates[date].status
    return status


def segment_statuses(db: FlightDB, reservation: Reservation) -> list[str | None]:
    """Status of each flight segment of ``reservation``, in order."""
    return [segment_status(db, f.flight_number, f.date) for f in reservation.flights]


def has_flown(db: FlightDB, reservation: Reservation) -> bool:
    """Whether any segment of the reservation has taken off."""
    return any(s in FLOWN_STATUSES for s in segment_statuses(db, reservation))


def all_bookable(db: FlightDB, reservation: Reservation) -> bool:
    """Whether every segment is still open for sale (status ``available``)."""
    return all(s == "available" for s in segment_statuses(db, reservation))


def airline_cancelled(db: FlightDB, reservation: Reservation) -> bool:
    """Whether the airline cancelled some segment of the reservation."""
    return any(s == "cancelled" for s in segment_statuses(db, reservation))


def delayed(db: FlightDB, reservation: Reservation) -> bool:
    """Whether some segment of the reservation is delayed."""
    return any(s == "delayed" for s in segment_statuses(db, reservation))


def booked_recently(reservation: Reservation, now: datetime = NOW) -> bool:
    """Whether the reservation was made within the free-cancellation window."""
    created = parse_time(reservation.created_at)
    return now - timedelta(hours=FREE_CANCEL_HOURS) <= created <= now


def may_cancel(db: FlightDB, reservation: Reservation, reason: str, now: datetime = NOW) -> Verdict:
    """Whether the agent may cancel ``reservation`` for ``reason``.

    Args:
        db: The airline database (flights are read for segment statuses).
        reservation: The reservation to cancel.
        reason: One of :data:`CANCEL_REASONS`.
        now: The policy's current time.

    Returns:
        The verdict and why.
    """
    if reservation.status == "cancelled":
        return False, "the reservation is already cancelled"
    if has_flown(db, reservation):
        return False, "part of the trip has already been flown (only a human agent can help)"
    if booked_recently(reservation, now):
        return True, "it was booked within the last 24 hours"
    if airline_cancelled(db, reservation):
        return True, "the airline cancelled one of its flights"
    if reservation.cabin == "business":
        return True, "it is a business-class reservation"
    if reservation.insurance == "yes" and reason in INSURED_REASONS:
        return True, f"it has travel insurance and the reason ({reason}) is covered"
    if reservation.insurance == "yes":
        return False, (
            f"it was booked more than 24 hours ago, is not business class, no flight was "
            f"cancelled by the airline, and the insurance does not cover {reason.replace('_', ' ')}"
        )
    return False, (
        "it was booked more than 24 hours ago, is not business class, has no travel insurance "
        "and no flight was cancelled by the airline"
    )


def may_change_flights(db: FlightDB, reservation: Reservation) -> Verdict:
    """Whether the flights of ``reservation`` may be changed (same origin, destination, type)."""
    if reservation.status == "cancelled":
        return False, "the reservation is cancelled"
    if reservation.cabin == "basic_economy":
        return False, "basic economy flights cannot be modified"
    if has_flown(db, reservation):
        return False, "part of the trip has already been flown"
    return True, "the reservation is not basic economy and nothing has been flown"


def may_change_route(
    reservation: Reservation, origin: str, destination: str, flight_type: str
) -> Verdict:
    """Whether a change keeps the origin, destination and trip type, as changes must."""
    if (origin, destination, flight_type) != (
        reservation.origin,
        reservation.destination,
        reservation.flight_type,
    ):
        return False, "a change may not alter the origin, destination or trip type"
    return True, "origin, destination and trip type are unchanged"


def may_change_cabin(db: FlightDB, reservation: Reservation) -> Verdict:
    """Whether the cabin of ``reservation`` may be changed (for every segment at once)."""
    if reservation.status == "cancelled":
        return False, "the reservation is cancelled"
    if has_flown(db, reservation):
        return False, "the cabin cannot change once a flight of the reservation has been flown"
    if not all_bookable(db, reservation):
        return False, "some flight of the reservation is no longer open for sale"
    return True, "no flight of the reservation has been flown"


def free_bags_per_passenger(membership: str, cabin: str) -> int:
    """Free checked bags per passenger for the booking user's membership and the cabin."""
    return FREE_BAGS[membership][cabin]


def free_bags(membership: str, cabin: str, passengers: int) -> int:
    """Free checked bags of a whole reservation."""
    return free_bags_per_passenger(membership, cabin) * passengers


def nonfree_bags(total: int, membership: str, cabin: str, passengers: int) -> int:
    """Bags beyond the free allowance, each charged :data:`BAG_FEE`."""
    return max(0, total - free_bags(membership, cabin, passengers))


def baggage_consistent(reservation: Reservation, membership: str) -> bool:
    """Whether the reservation's paid-bag count follows the allowance rule."""
    expected = nonfree_bags(
        reservation.total_baggages, membership, reservation.cabin, len(reservation.passengers)
    )
    return bool(reservation.nonfree_baggages == expected)


def may_change_bags(reservation: Reservation, new_total: int) -> Verdict:
    """Whether checked bags may go from the reservation's count to ``new_total``."""
    if reservation.status == "cancelled":
        return False, "the reservation is cancelled"
    if new_total < reservation.total_baggages:
        return False, "checked bags can be added but not removed"
    return True, "bags are only added"


def may_add_insurance(reservation: Reservation) -> Verdict:
    """Travel insurance can only be bought with the booking, never added later."""
    if reservation.insurance == "yes":
        return False, "the reservation already has travel insurance"
    return False, INSURANCE_LATER


def compensation(
    db: FlightDB, user: User, reservation: Reservation, changed_or_cancelled: bool = False
) -> tuple[int, str]:
    """The certificate the agent may offer for a disrupted ``reservation`` (0 if none).

    Args:
        db: The airline database.
        user: The reservation's user.
        reservation: The reservation the user complains about.
        changed_or_cancelled: Whether the reservation is being changed or cancelled (a
            delay is compensated only then).

    Returns:
        The certificate amount in dollars and why.
    """
    eligible = (
        user.membership in ("silver", "gold")
        or reservation.insurance == "yes"
        or reservation.cabin == "business"
    )
    if not eligible:
        return 0, "regular members without insurance in (basic) economy are not compensated"
    passengers = len(reservation.passengers)
    if airline_cancelled(db, reservation):
        amount = CANCELLED_FLIGHT_COMPENSATION * passengers
        return amount, f"a flight was cancelled: ${CANCELLED_FLIGHT_COMPENSATION} per passenger"
    if delayed(db, reservation):
        if not changed_or_cancelled:
            return 0, "a delay is compensated only after changing or cancelling the reservation"
        amount = DELAYED_FLIGHT_COMPENSATION * passengers
        return amount, f"a flight was delayed: ${DELAYED_FLIGHT_COMPENSATION} per passenger"
    return 0, "no flight of the reservation was cancelled or delayed"


def passengers_allowed(count: int) -> Verdict:
    """Whether one reservation may carry ``count`` passengers."""
    if count > MAX_PASSENGERS:
        return False, f"a reservation can have at most {MAX_PASSENGERS} passengers"
    if count < 1:
        return False, "a reservation needs at least one passenger"
    return True, "within the passenger limit"


def payment_mix_allowed(sources: Sequence[str]) -> Verdict:
    """Whether a booking may combine payment methods of these kinds."""
    for kind, limit in PAYMENT_LIMITS.items():
        used = sum(1 for s in sources if s == kind)
        if used > limit:
            name = kind.replace("_", " ")
            return False, f"a reservation can use at most {count(limit, name, name + 's')}"
    return True, "within the payment-method limits"


def payment_covers(method: PaymentMethod, amount: int) -> bool:
    """Whether a saved payment method can pay ``amount`` (cards always; balances must cover)."""
    if method.source == "credit_card":
        return True
    return bool(method.amount >= amount)


def update_payment_allowed(method: PaymentMethod, amount: int) -> Verdict:
    """Whether ``method`` may pay (or receive) ``amount`` for a change to a reservation."""
    if method.source == "certificate":
        return False, "a travel certificate cannot pay for a change"
    if method.source == "gift_card" and method.amount < amount:
        return False, "the gift card balance is too low"
    return True, "a card from the user's profile"


def booking_price(
    prices: Mapping[str, int] | Sequence[int], passengers: int, insurance: bool, nonfree: int
) -> int:
    """Total price of a booking: fares per passenger, insurance and paid bags."""
    fares = sum(prices.values()) if isinstance(prices, Mapping) else sum(prices)
    return int(
        fares * passengers + (INSURANCE_FEE * passengers if insurance else 0) + BAG_FEE * nonfree
    )


# ---------------------------------------------------------------- the verifier's check


def _flights_changed(reservation: Reservation, flights: Sequence[Mapping[str, object]]) -> bool:
    old = [(f.flight_number, f.date) for f in reservation.flights]
    return old != [(f.get("flight_number"), f.get("date")) for f in flights]


def _route_violation(
    db: FlightDB, reservation: Reservation, flights: Sequence[Mapping[str, object]]
) -> str | None:
    """Why new flights alter the reservation's origin, destination or trip type, or None."""
    found = [lookup(db.flights, f.get("flight_number")) for f in flights]
    legs = [leg for leg in found if leg is not None]
    if not legs or len(legs) < len(found):
        return None  # the tool itself rejects unknown flights
    start, end = legs[0].origin, legs[-1].destination
    if reservation.flight_type == "round_trip":
        ok = start == reservation.origin and end == reservation.origin
        ok = ok and any(leg.destination == reservation.destination for leg in legs)
    else:
        ok = start == reservation.origin and end == reservation.destination
    if ok:
        return None
    return (
        "change flights: a change may not alter the origin, destination or trip type "
        f"(reservation {reservation.reservation_id} is a "
        f"{reservation.flight_type.replace('_', ' ')} {reservation.origin}-"
        f"{reservation.destination})"
    )


def _payment_violation(db: FlightDB, user_id: str, payment_id: object, action: str) -> str | None:
    user = db.users.get(user_id)
    if user is None or payment_id is None:
        return None
    method = lookup(user.payment_methods, payment_id)
    if method is None:
        return f"payment: {payment_id} is not in the user's profile ({action})"
    if method.source == "certificate":
        return f"payment: a travel certificate cannot pay for a change ({action} with {payment_id})"
    return None


def _cancel_violation(db: FlightDB, reservation: Reservation) -> str | None:
    rid = reservation.reservation_id
    if has_flown(db, reservation):
        return f"cancel: part of reservation {rid} has been flown; only a human agent can help"
    if (
        booked_recently(reservation)
        or airline_cancelled(db, reservation)
        or reservation.cabin == "business"
        or reservation.insurance == "yes"  # the reason decides, and it is not in the call
    ):
        return None
    return (
        f"cancel: reservation {rid} cannot be cancelled: "
        + may_cancel(db, reservation, "change_of_plan")[1]
    )


def _baggage_violation(
    db: FlightDB, reservation: Reservation, arguments: Mapping[str, object]
) -> str | None:
    rid = reservation.reservation_id
    total = arguments.get("total_baggages")
    if isinstance(total, int) and total < reservation.total_baggages:
        return (
            f"baggage: checked bags can be added but not removed (reservation {rid} has "
            f"{reservation.total_baggages}, and the change would leave {total})"
        )
    return _payment_violation(db, reservation.user_id, arguments.get("payment_id"), "bags")


def _flights_violation(
    db: FlightDB, reservation: Reservation, arguments: Mapping[str, object]
) -> str | None:
    rid = reservation.reservation_id
    flights = objects(arguments.get("flights"))
    changed = _flights_changed(reservation, flights)
    if changed and reservation.cabin == "basic_economy":
        return f"change flights: basic economy flights cannot be modified (reservation {rid})"
    if changed:
        route = _route_violation(db, reservation, flights)
        if route is not None:
            return route
    if arguments.get("cabin") != reservation.cabin and has_flown(db, reservation):
        return (
            f"change cabin: the cabin cannot change once a flight has been flown "
            f"(reservation {rid})"
        )
    return _payment_violation(db, reservation.user_id, arguments.get("payment_id"), "flights")


def _booking_violation(db: FlightDB, arguments: Mapping[str, object]) -> str | None:
    passengers = arguments.get("passengers")
    if passengers is not None:  # a request that names no party yet is judged on the rest
        if not isinstance(passengers, Sized):
            return None  # the tool itself rejects such a call
        ok, why = passengers_allowed(len(passengers))
        if not ok:
            return f"book: {why}"
    user = lookup(db.users, arguments.get("user_id"))
    if user is None:
        return None
    sources = []
    for payment in objects(arguments.get("payment_methods")):
        method = lookup(user.payment_methods, payment.get("payment_id"))
        if method is None:
            return f"book: payment {payment.get('payment_id')} is not in the user's profile"
        sources.append(method.source)
    ok, why = payment_mix_allowed(sources)
    return None if ok else f"book: {why}"


def _certificate_violation(db: FlightDB, arguments: Mapping[str, object]) -> str | None:
    user = lookup(db.users, arguments.get("user_id"))
    if user is None or user.membership in ("silver", "gold"):
        return None
    reservations = [db.reservations[r] for r in user.reservations if r in db.reservations]
    if any(r.insurance == "yes" or r.cabin == "business" for r in reservations):
        return None
    return (
        f"compensation: {user.user_id} is a regular member with no insured or business "
        "reservation, and such users are not compensated"
    )


def violation(db: FlightDB, tool: str, arguments: Mapping[str, object]) -> str | None:
    """The policy rule an assistant write would break, checked just before it runs.

    Only what the call and the database show is checked; rules that turn on what was said
    (the reason for a cancellation, the user's explicit confirmation) are left to the
    conversation. A cancellation of an insured reservation therefore passes, since the
    reason may be covered.

    Args:
        db: The live airline database (``FlightDB``), before the call executes.
        tool: Name of the tool the assistant calls.
        arguments: Its arguments.

    Returns:
        One line naming the broken rule and why, or None (also for unknown tools and for
        calls on unknown records, which the tool itself rejects).
    """
    if tool == "book_reservation":
        return _booking_violation(db, arguments)
    if tool == "send_certificate":
        return _certificate_violation(db, arguments)
    checks = {
        "cancel_reservation": lambda r: _cancel_violation(db, r),
        "update_reservation_baggages": lambda r: _baggage_violation(db, r, arguments),
        "update_reservation_flights": lambda r: _flights_violation(db, r, arguments),
        "update_reservation_passengers": lambda r: _passengers_violation(r, arguments),
    }
    check = checks.get(tool)
    reservation = lookup(db.reservations, arguments.get("reservation_id"))
    if check is None or reservation is None:
        return None
    return check(reservation)


def _passengers_violation(reservation: Reservation, arguments: Mapping[str, object]) -> str | None:
    passengers = arguments.get("passengers") or []
    if not isinstance(passengers, Sized):
        return None  # the tool itself rejects such a call
    count = len(passengers)
    if count != len(reservation.passengers):
        return (
            f"change passengers: the number of passengers cannot change (reservation "
            f"{reservation.reservation_id} has {len(reservation.passengers)}, the call gives "
            f"{count})"
        )
    return None


def violation_in_context(
    db: FlightDB,
    tool: str,
    arguments: Mapping[str, object],
    *,
    reason: str | None = None,
    party: int | None = None,
    about: Sequence[str] = (),
) -> str | None:
    """:func:`violation`, and the rules that turn on what the conversation settled.

    The call does not carry them; the agent knows them from the conversation: the reason the
    caller gave for a cancellation, the party size they asked to book for, the reservations a
    complaint is about.

    Args:
        db: The live airline database, before the call would run.
        tool: Name of the tool the assistant would call.
        arguments: Its arguments.
        reason: The cancellation reason the caller gave, one of :data:`CANCEL_REASONS`.
        party: How many passengers the caller asked to book, where the call names none.
        about: Ids of the reservations a compensation request is about.

    Returns:
        One line naming the broken rule and why, or None.
    """
    if tool == "send_certificate":
        # The reservations complained about decide first: the reason is then theirs.
        return _complaint_violation(db, arguments, about) or violation(db, tool, arguments)
    found = violation(db, tool, arguments)
    if found is not None:
        return found
    if tool == "cancel_reservation" and reason is not None:
        reservation = lookup(db.reservations, arguments.get("reservation_id"))
        if reservation is not None:
            ok, why = may_cancel(db, reservation, reason)
            if not ok:
                rid = reservation.reservation_id
                return f"cancel: reservation {rid} cannot be cancelled: {why}"
    if tool == "book_reservation" and party is not None and "passengers" not in arguments:
        ok, why = passengers_allowed(party)
        if not ok:
            return f"book: {why}"
    return None


def _complaint_violation(
    db: FlightDB, arguments: Mapping[str, object], about: Sequence[str]
) -> str | None:
    """Why no reservation of ``about`` earns the caller a certificate, or None.

    Eligibility is the reservation's (its cabin and insurance) and the member's; a delay
    counts as a change or cancellation would make it count, since the call does not say.
    """
    user = lookup(db.users, arguments.get("user_id"))
    reservations = [db.reservations[r] for r in about if r in db.reservations]
    if user is None or not reservations:
        return None
    verdicts = [compensation(db, user, r, changed_or_cancelled=True) for r in reservations]
    if any(amount > 0 for amount, _ in verdicts):
        return None
    return f"compensation: no compensation is possible: {verdicts[0][1]}"
