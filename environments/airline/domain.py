"""The airline domain's τ²-bench loaders and the knowledge EvoSyn adds to them."""

from __future__ import annotations

from pydantic import BaseModel
from tau2.data_model.tasks import Task
from tau2.domains.airline import environment as tau2_airline
from tau2.domains.airline.data_model import FlightDB
from tau2.domains.airline.utils import AIRLINE_DB_PATH
from tau2.environment.environment import Environment

from evosyn.environments.base import DomainKnowledge, Tau2Domain

KNOWLEDGE = DomainKnowledge(
    family_by_write={
        "book_reservation": "flight_booking",
        "update_reservation_flights": "flight_change",
        "update_reservation_passengers": "flight_change",
        "cancel_reservation": "flight_cancellation",
        "update_reservation_baggages": "seat_or_baggage_service",
        "send_certificate": "refund_or_compensation",
    },
    # A cancellation with a certificate is a cancellation; a booking after a cancellation is
    # still a booking request: the most specific write names the request.
    family_priority=[
        "flight_change",
        "flight_booking",
        "flight_cancellation",
        "seat_or_baggage_service",
        "refund_or_compensation",
    ],
    # Read-only airline conversations are status / membership inquiries.
    default_family="loyalty_or_membership_service",
    entity_keys=frozenset({"user_id", "reservation_id", "flight_number", "payment_id"}),
    # The seed ontology's tool_use_pattern values are airline's (search, then book; ...).
    tool_use_patterns=True,
)


def stock_environment(solo_mode: bool = False) -> Environment:
    """τ²-bench's own environment constructor for airline (its registry's), fresh databases."""
    env: Environment = tau2_airline.get_environment(solo_mode=solo_mode)
    return env


def _load_dbs() -> tuple[BaseModel, BaseModel | None]:
    return FlightDB.load(str(AIRLINE_DB_PATH)), None


def _make_env(db: FlightDB, _user_db: BaseModel | None) -> Environment:
    env: Environment = tau2_airline.get_environment(db=db)
    return env


def _load_tasks() -> list[Task]:
    tasks: list[Task] = tau2_airline.get_tasks(None)
    return tasks


def _load_splits() -> dict[str, list[str]]:
    splits: dict[str, list[str]] = tau2_airline.get_tasks_split()
    return splits


def make_domain() -> Tau2Domain:
    """The airline domain."""
    return Tau2Domain("airline", KNOWLEDGE, _load_dbs, _make_env, _load_tasks, _load_splits)
