"""Names every layer checks (ids), apart from the records so that checking is cheap.

The config and the lake check these before anything imports the record models (and τ²-bench
with them): ``evosyn sql`` needs neither.
"""

from __future__ import annotations

import re

SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
"""A campaign id or file-name part: letters, digits, ``_ . -``, at most 128 characters."""


def global_id(campaign_id: str, local_id: str) -> str:
    """The id of a task, trajectory or sample that is unique across campaigns.

    Within a campaign the lake numbers its rows alike in every campaign (``r1-uniform-b0000-task``);
    exports, which leave the lake, qualify them as ``CAMPAIGN:LOCAL``. Both parts are
    deterministic, so a resumed campaign exports the same ids; a campaign id holds no ``:``
    (:data:`SAFE_ID`), so :func:`split_global_id` undoes it.
    """
    if not SAFE_ID.match(campaign_id):
        raise ValueError(f"campaign_id {campaign_id!r} is not a safe id")
    return f"{campaign_id}:{local_id}"


def split_global_id(uid: str) -> tuple[str, str]:
    """``(campaign_id, local_id)`` of an id made by :func:`global_id`; ValueError otherwise."""
    campaign_id, sep, local_id = uid.partition(":")
    if not sep or not SAFE_ID.match(campaign_id) or not local_id:
        raise ValueError(f"{uid!r} is not a campaign-qualified id (CAMPAIGN:LOCAL)")
    return campaign_id, local_id
