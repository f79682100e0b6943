"""The mock domain's τ²-bench loaders and the knowledge EvoSyn adds to them.

τ²-bench ships mock (one user, a to-do list, create and update tools) with a ``base`` split
only; its tasks are split here into a diagnostic and a test half by position, so the domain
meets the same contract as the others.
"""

from __future__ import annotations

from pydantic import BaseModel
from tau2.data_model.tasks import Task
from tau2.domains.mock import environment as tau2_mock
from tau2.domains.mock.data_model import MockDB
from tau2.domains.mock.utils import MOCK_DB_PATH
from tau2.environment.environment import Environment

from evosyn.environments.base import DIAGNOSTIC_SPLIT, TEST_SPLIT, DomainKnowledge, Tau2Domain

KNOWLEDGE = DomainKnowledge(
    family_by_write={
        "create_task": "task_creation",
        "update_task_status": "task_status_update",
    },
    family_priority=["task_status_update", "task_creation"],
    # A conversation without writes is a refused deletion: a status request the tools lack.
    default_family="task_status_update",
    # A task's title names it as much as its id does (a created task has no id in the gold).
    entity_keys=frozenset({"user_id", "task_id", "title"}),
)


def stock_environment(solo_mode: bool = False) -> Environment:
    """τ²-bench's own environment constructor for mock (its registry's), fresh databases."""
    env: Environment = tau2_mock.get_environment(solo_mode=solo_mode)
    return env


def _load_dbs() -> tuple[BaseModel, BaseModel | None]:
    return MockDB.load(str(MOCK_DB_PATH)), None


def _make_env(db: MockDB, _user_db: BaseModel | None) -> Environment:
    env: Environment = tau2_mock.get_environment(db=db)
    return env


def _load_tasks() -> list[Task]:
    tasks: list[Task] = tau2_mock.get_tasks(None)
    return tasks


def _load_splits() -> dict[str, list[str]]:
    base: list[str] = tau2_mock.get_tasks_split()["base"]
    return {"base": base, DIAGNOSTIC_SPLIT: base[1::2], TEST_SPLIT: base[0::2]}


def make_domain() -> Tau2Domain:
    """The mock domain."""
    return Tau2Domain("mock", KNOWLEDGE, _load_dbs, _make_env, _load_tasks, _load_splits)
