"""The airline policy predicates, on hand-made records and on the real database."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from evosyn.environments.airline import policy
from evosyn.environments.registry import get_domain


def flight(number: str, date: str, price: int = 100) -> Any:
    return SimpleNamespace(flight_number=number, date=date, price=price)


def reservation(**overrides: Any) -> Any:
    values: dict[str, Any] = {
        "reservation_id": "R1",
        "status": None,
        "cabin": "economy",
        "insurance": "no",
        "created_at": "2024-05-10T10:00:00",
        "flights": [flight("F1", "2024-05-20")],
        "passengers": [object(), object()],
        "total_baggages": 2,
        "nonfree_baggages": 0,
        "origin": "JFK",
        "destination": "LAX",
        "flight_type": "one_way",
    }
    values.update(overrides)
    return SimpleNamespace(**values)


def database(statuses: dict[tuple[str, str], str]) -> Any:
    flights: dict[str, Any] = {}
    for (number, date), status in statuses.items():
        flights.setdefault(number, SimpleNamespace(dates={}))
        flights[number].dates[date] = SimpleNamespace(status=status)
    return SimpleNamespace(flights=flights)


OPEN = database({("F1", "2024-05-20"): "available"})


def test_cancellation_rules() -> None:
    plain = reservation()
    assert not policy.may_cancel(OPEN, plain, "change_of_plan")[0]
    assert policy.may_cancel(OPEN, reservation(created_at="2024-05-14T16:00:00"), "other")[0]
    assert not policy.may_cancel(OPEN, reservation(created_at="2024-05-14T14:59:59"), "other")[0]
    assert policy.may_cancel(OPEN, reservation(cabin="business"), "change_of_plan")[0]
    insured = reservation(insurance="yes")
    assert policy.may_cancel(OPEN, insured, "health")[0]
    assert policy.may_cancel(OPEN, insured, "weather")[0]
    assert not policy.may_cancel(OPEN, insured, "change_of_plan")[0]
    cancelled = database({("F1", "2024-05-20"): "cancelled"})
    assert policy.may_cancel(cancelled, plain, "airline_cancelled")[0]
    flown = database({("F1", "2024-05-20"): "landed"})
    verdict, why = policy.may_cancel(flown, reservation(cabin="business"), "other")
    assert not verdict and "flown" in why
    assert not policy.may_cancel(OPEN, reservation(status="cancelled"), "other")[0]


def test_change_rules() -> None:
    assert not policy.may_change_flights(OPEN, reservation(cabin="basic_economy"))[0]
    assert policy.may_change_flights(OPEN, reservation())[0]
    assert policy.may_change_cabin(OPEN, reservation(cabin="basic_economy"))[0]
    flown = database({("F1", "2024-05-20"): "flying"})
    assert not policy.may_change_cabin(flown, reservation())[0]
    assert not policy.may_change_route(reservation(), "JFK", "SFO", "one_way")[0]
    assert policy.may_change_route(reservation(), "JFK", "LAX", "one_way")[0]


@pytest.mark.parametrize(
    ("membership", "cabin", "free"),
    [
        ("regular", "basic_economy", 0),
        ("regular", "business", 2),
        ("silver", "economy", 2),
        ("gold", "basic_economy", 2),
        ("gold", "business", 4),
    ],
)
def test_bag_allowance(membership: str, cabin: str, free: int) -> None:
    assert policy.free_bags_per_passenger(membership, cabin) == free
    assert policy.nonfree_bags(free * 3 + 2, membership, cabin, 3) == 2
    assert policy.nonfree_bags(0, membership, cabin, 3) == 0


def test_bags_and_insurance_changes() -> None:
    assert not policy.may_change_bags(reservation(total_baggages=2), 1)[0]
    assert policy.may_change_bags(reservation(total_baggages=2), 3)[0]
    assert not policy.may_add_insurance(reservation())[0]


def test_compensation() -> None:
    cancelled = database({("F1", "2024-05-20"): "cancelled"})
    delayed = database({("F1", "2024-05-20"): "delayed"})
    regular = SimpleNamespace(membership="regular")
    silver = SimpleNamespace(membership="silver")
    assert policy.compensation(cancelled, silver, reservation())[0] == 200
    assert policy.compensation(cancelled, regular, reservation())[0] == 0
    assert policy.compensation(cancelled, regular, reservation(insurance="yes"))[0] == 200
    assert policy.compensation(cancelled, regular, reservation(cabin="business"))[0] == 200
    assert policy.compensation(delayed, silver, reservation())[0] == 0
    assert policy.compensation(delayed, silver, reservation(), changed_or_cancelled=True)[0] == 100
    assert policy.compensation(OPEN, silver, reservation())[0] == 0


def test_booking_limits() -> None:
    assert policy.passengers_allowed(5)[0]
    assert not policy.passengers_allowed(6)[0]
    assert policy.payment_mix_allowed(["certificate", "credit_card", "gift_card", "gift_card"])[0]
    assert not policy.payment_mix_allowed(["certificate", "certificate"])[0]
    assert not policy.payment_mix_allowed(["credit_card", "credit_card"])[0]
    assert not policy.payment_mix_allowed(["gift_card"] * 4)[0]
    assert policy.booking_price([100, 50], 2, insurance=True, nonfree=1) == 300 + 60 + 50


def test_real_database_has_both_verdicts() -> None:
    db = get_domain("airline").blank_state().env.tools.db
    verdicts = {policy.may_cancel(db, r, "change_of_plan")[0] for r in db.reservations.values()}
    assert verdicts == {True, False}
    assert any(policy.has_flown(db, r) for r in db.reservations.values())
    assert policy.NOW.isoformat() == "2024-05-15T15:00:00"


# ------------------------------------------------------------------ the verifier's check


def world(statuses: dict[tuple[str, str], str] | None = None, **records: Any) -> Any:
    """A database with one user (two cards and a certificate) and the given reservations."""
    db = database(statuses or {("F1", "2024-05-20"): "available"})
    methods = {
        "credit_card_1": SimpleNamespace(source="credit_card", id="credit_card_1"),
        "gift_card_1": SimpleNamespace(source="gift_card", id="gift_card_1", amount=500),
        "certificate_1": SimpleNamespace(source="certificate", id="certificate_1", amount=100),
        "certificate_2": SimpleNamespace(source="certificate", id="certificate_2", amount=100),
    }
    db.users = {
        "u1": SimpleNamespace(
            user_id="u1", membership="regular", payment_methods=methods, reservations=["R1"]
        )
    }
    db.reservations = {"R1": reservation(user_id="u1", **records)}
    for number, route in {"F1": ("JFK", "LAX"), "F2": ("JFK", "LAX"), "F3": ("JFK", "SEA")}.items():
        db.flights.setdefault(number, SimpleNamespace(dates={}))
        db.flights[number].origin, db.flights[number].destination = route
    return db


def test_violation_names_the_rule_a_write_breaks() -> None:
    assert policy.violation(world(), "get_user_details", {"user_id": "u1"}) is None
    assert policy.violation(world(), "no_such_tool", {}) is None
    assert policy.violation(world(), "cancel_reservation", {"reservation_id": "R9"}) is None

    cancel = {"reservation_id": "R1"}
    why = policy.violation(world(), "cancel_reservation", cancel)
    assert why and why.startswith("cancel:") and "no travel insurance" in why
    assert policy.violation(world(cabin="business"), "cancel_reservation", cancel) is None
    # The reason decides for insured bookings and is not in the call: left to the dialogue.
    assert policy.violation(world(insurance="yes"), "cancel_reservation", cancel) is None
    flown = world({("F1", "2024-05-20"): "landed"}, cabin="business")
    assert "flown" in (policy.violation(flown, "cancel_reservation", cancel) or "")

    bags = {"reservation_id": "R1", "total_baggages": 1, "nonfree_baggages": 0}
    assert "not removed" in (policy.violation(world(), "update_reservation_baggages", bags) or "")
    more = bags | {"total_baggages": 3, "payment_id": "certificate_1"}
    assert "certificate" in (policy.violation(world(), "update_reservation_baggages", more) or "")
    paid = more | {"payment_id": "gift_card_1"}
    assert policy.violation(world(), "update_reservation_baggages", paid) is None

    moved = {
        "reservation_id": "R1",
        "cabin": "economy",
        "flights": [{"flight_number": "F2", "date": "2024-05-20"}],
        "payment_id": "credit_card_1",
    }
    assert policy.violation(world(), "update_reservation_flights", moved) is None
    basic = world(cabin="basic_economy")
    assert "basic economy" in (policy.violation(basic, "update_reservation_flights", moved) or "")
    elsewhere = moved | {"flights": [{"flight_number": "F3", "date": "2024-05-20"}]}
    assert "destination" in (
        policy.violation(world(), "update_reservation_flights", elsewhere) or ""
    )
    # Basic economy may change cabin on the same flights.
    upgrade = moved | {
        "cabin": "business",
        "flights": [{"flight_number": "F1", "date": "2024-05-20"}],
    }
    assert policy.violation(basic, "update_reservation_flights", upgrade) is None

    people = {"reservation_id": "R1", "passengers": [{}, {}, {}]}
    assert "number of passengers" in (
        policy.violation(world(), "update_reservation_passengers", people) or ""
    )

    booking = {
        "user_id": "u1",
        "passengers": [{}] * 6,
        "payment_methods": [{"payment_id": "credit_card_1", "amount": 100}],
    }
    assert "at most 5" in (policy.violation(world(), "book_reservation", booking) or "")
    two_certificates = booking | {
        "passengers": [{}],
        "payment_methods": [{"payment_id": "certificate_1"}, {"payment_id": "certificate_2"}],
    }
    assert "certificate" in (policy.violation(world(), "book_reservation", two_certificates) or "")

    certificate = {"user_id": "u1", "amount": 100}
    assert "regular member" in (policy.violation(world(), "send_certificate", certificate) or "")
    assert policy.violation(world(insurance="yes"), "send_certificate", certificate) is None
