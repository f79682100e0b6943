"""The mock policy as checks on assistant writes (tau2's ``policy.md`` for mock).

1. Each task must have a title. 2. A status is ``pending`` or ``completed``. 3. Only existing
users can create tasks. 4. Tasks are never deleted: the agent transfers to a human instead
(no tool deletes, so only the transfer shows it).
"""

from __future__ import annotations

from collections.abc import Mapping

from tau2.domains.mock.data_model import MockDB

STATUSES = ("pending", "completed")


def violation(db: MockDB, tool: str, arguments: Mapping[str, object]) -> str | None:
    """The policy rule an assistant write would break, checked just before it runs."""
    if tool == "create_task":
        if not str(arguments.get("title") or "").strip():
            return "task_title_required: a task needs a title"
        if arguments.get("user_id") not in db.users:
            return f"existing_user_only: no user {arguments.get('user_id')!r}"
    if tool == "update_task_status" and arguments.get("status") not in STATUSES:
        return f"allowed_status_values: {arguments.get('status')!r} is not one of {STATUSES}"
    return None
