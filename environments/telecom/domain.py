"""τ²-bench telecom: line, billing and plan services plus on-device troubleshooting.

Telecom is the one domain where the user has tools too (the simulated phone): tasks set the
phone up through initialisation actions, gold actions may be the user's, and tasks are judged
mostly by assertions on the phone's state instead of a database hash.
"""

from __future__ import annotations

import functools

from pydantic import BaseModel
from tau2.data_model.tasks import Task
from tau2.domains.telecom import environment as tau2_telecom
from tau2.domains.telecom.data_model import TelecomDB
from tau2.domains.telecom.tools import TelecomTools
from tau2.domains.telecom.user_data_model import TelecomUserDB
from tau2.domains.telecom.user_tools import TelecomUserTools
from tau2.domains.telecom.utils import TELECOM_DB_PATH, TELECOM_USER_DB_PATH
from tau2.environment.environment import Environment

from evosyn.environments.base import DomainKnowledge, Tau2Domain

_DEVICE_FIXES = (
    "set_network_mode_preference",
    "toggle_airplane_mode",
    "reseat_sim_card",
    "toggle_data",
    "toggle_roaming",
    "toggle_data_saver_mode",
    "set_apn_settings",
    "reset_apn_settings",
    "toggle_wifi",
    "toggle_wifi_calling",
    "connect_vpn",
    "disconnect_vpn",
    "grant_app_permission",
    "reboot_device",
)

KNOWLEDGE = DomainKnowledge(
    family_by_write={
        "suspend_line": "line_management",
        "resume_line": "line_management",
        "send_payment_request": "billing_issue",
        "make_payment": "billing_issue",
        "refuel_data": "plan_change",
        "enable_roaming": "service_troubleshooting",
        "disable_roaming": "service_troubleshooting",
        **{name: "service_troubleshooting" for name in _DEVICE_FIXES},
    },
    # Account-side writes (line status, bills, data plan) say more than device toggles, which
    # accompany nearly every telecom conversation.
    family_priority=[
        "line_management",
        "billing_issue",
        "plan_change",
        "service_troubleshooting",
    ],
    # Telecom conversations without writes are diagnoses that end in advice or a hand-off.
    default_family="service_troubleshooting",
    entity_keys=frozenset({"customer_id", "line_id", "bill_id", "phone_number", "id"}),
    # suspend_line_for_overdue_bill takes the new bill's id from the task (the database's own
    # bills have four digits).
    generated_id=r"\bB\d{5,}\b",
)


def stock_environment(solo_mode: bool = False) -> Environment:
    """τ²-bench's own environment constructor for telecom (its registry's), fresh databases."""
    env: Environment = tau2_telecom.get_environment_manual_policy(solo_mode=solo_mode)
    return env


def _load_dbs() -> tuple[BaseModel, BaseModel | None]:
    return TelecomDB.load(str(TELECOM_DB_PATH)), TelecomUserDB.load(str(TELECOM_USER_DB_PATH))


@functools.cache
def _manual_policy() -> str:
    """τ²-bench's telecom policy with the manual tech-support guide, read from its files once."""
    policy: str = tau2_telecom.get_environment(policy_type="manual").get_policy()
    return policy


def _make_env(db: TelecomDB, user_db: TelecomUserDB | None) -> Environment:
    """τ²-bench's manual-policy telecom environment (its registry's "telecom") on ``db``.

    Built as ``tau2_telecom.get_environment(db, user_db, policy_type="manual")`` builds it,
    but with the policy read once: that function reads both policy files from disk for every
    environment, and synthesis builds three per task.
    """
    if user_db is None:
        loaded = TelecomUserDB.load(str(TELECOM_USER_DB_PATH))
        assert isinstance(loaded, TelecomUserDB)
        user_db = loaded
    return tau2_telecom.TelecomEnvironment(
        domain_name="telecom",
        policy=_manual_policy(),
        tools=TelecomTools(db),
        user_tools=TelecomUserTools(user_db),
    )


def _load_tasks() -> list[Task]:
    tasks: list[Task] = tau2_telecom.get_tasks(None)
    return tasks


def _load_splits() -> dict[str, list[str]]:
    splits: dict[str, list[str]] = tau2_telecom.get_tasks_split() or {}
    return splits


def make_domain() -> Tau2Domain:
    """The telecom domain."""
    return Tau2Domain("telecom", KNOWLEDGE, _load_dbs, _make_env, _load_tasks, _load_splits)
