"""The retail domain's τ²-bench loaders and the knowledge EvoSyn adds to them."""

from __future__ import annotations

from pydantic import BaseModel
from tau2.data_model.tasks import Task
from tau2.domains.retail import environment as tau2_retail
from tau2.domains.retail.data_model import RetailDB
from tau2.domains.retail.utils import RETAIL_DB_PATH
from tau2.environment.environment import Environment

from evosyn.environments.base import DomainKnowledge, Tau2Domain

KNOWLEDGE = DomainKnowledge(
    family_by_write={
        "cancel_pending_order": "order_cancellation",
        "modify_pending_order_items": "order_item_modification",
        "modify_pending_order_address": "order_logistics_modification",
        "modify_pending_order_payment": "order_logistics_modification",
        "return_delivered_order_items": "return_delivered_order",
        "exchange_delivered_order_items": "exchange_delivered_order",
        "modify_user_address": "profile_or_inquiry",
    },
    # Order-level writes name the request; a profile update rides along at most.
    family_priority=[
        "exchange_delivered_order",
        "return_delivered_order",
        "order_item_modification",
        "order_cancellation",
        "order_logistics_modification",
        "profile_or_inquiry",
    ],
    default_family="profile_or_inquiry",
    entity_keys=frozenset(
        {
            "user_id",
            "order_id",
            "item_ids",
            "new_item_ids",
            "product_id",
            "payment_method_id",
            "email",
        }
    ),
)


def stock_environment(solo_mode: bool = False) -> Environment:
    """τ²-bench's own environment constructor for retail (its registry's), fresh databases."""
    env: Environment = tau2_retail.get_environment(solo_mode=solo_mode)
    return env


def _load_dbs() -> tuple[BaseModel, BaseModel | None]:
    return RetailDB.load(str(RETAIL_DB_PATH)), None


def _make_env(db: RetailDB, _user_db: BaseModel | None) -> Environment:
    env: Environment = tau2_retail.get_environment(db=db)
    return env


def _load_tasks() -> list[Task]:
    tasks: list[Task] = tau2_retail.get_tasks(None)
    return tasks


def _load_splits() -> dict[str, list[str]]:
    splits: dict[str, list[str]] = tau2_retail.get_tasks_split()
    return splits


def make_domain() -> Tau2Domain:
    """The retail domain."""
    return Tau2Domain("retail", KNOWLEDGE, _load_dbs, _make_env, _load_tasks, _load_splits)
