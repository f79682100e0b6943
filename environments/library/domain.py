"""The library domain as EvoSyn's :class:`~evosyn.environments.base.Tau2Domain`.

The loaders are those of :mod:`.environment` (τ²-bench's shape); the knowledge maps each write
tool to the seed ontology's ``task_family``.
"""

from __future__ import annotations

from pydantic import BaseModel
from tau2.data_model.tasks import Task
from tau2.environment.environment import Environment

from evosyn.environments.base import DomainKnowledge, Tau2Domain
from evosyn.environments.library import environment
from evosyn.environments.library.data import load_db
from evosyn.environments.library.data_model import LibraryDB

KNOWLEDGE = DomainKnowledge(
    family_by_write={
        "renew_loan": "loan_renewal",
        "place_hold": "hold_management",
        "cancel_hold": "hold_management",
        "change_pickup_branch": "hold_management",
        "pay_fine": "fine_payment",
        "waive_fine": "fine_waiver",
        "report_lost_item": "lost_item_report",
    },
    # Paying fines to unblock a renewal is a renewal request; a loss reported and paid, a loss.
    family_priority=[
        "lost_item_report",
        "loan_renewal",
        "hold_management",
        "fine_waiver",
        "fine_payment",
    ],
    # A conversation without writes is an inquiry (or a refused request, as in airline).
    default_family="account_inquiry",
    entity_keys=frozenset(
        {"patron_id", "email", "loan_id", "hold_id", "fine_id", "book_id", "payment_method_id"}
    ),
)


def stock_environment(solo_mode: bool = False) -> Environment:
    """The library's environment constructor (what τ²-bench's registry would hold)."""
    return environment.get_environment(solo_mode=solo_mode)


def _load_dbs() -> tuple[BaseModel, BaseModel | None]:
    return load_db(), None


def _make_env(db: LibraryDB, _user_db: BaseModel | None) -> Environment:
    return environment.get_environment(db=db)


def _load_tasks() -> list[Task]:
    return environment.get_tasks()


def make_domain() -> Tau2Domain:
    """The library domain."""
    return Tau2Domain(
        "library", KNOWLEDGE, _load_dbs, _make_env, _load_tasks, environment.get_tasks_split
    )
