"""A stored campaign's config: what a resume runs, and what another config would change.

A campaign's ``campaigns`` row holds the validated config it started with. A resume runs that
config; a resume given a different one is refused unless asked for explicitly
(``--reconfigure``), since it would mix two campaigns' data under one id. Settings that say
where or how a campaign runs, not what it synthesizes, may differ freely (:data:`FREE`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from evosyn.config import CampaignConfig, ConfigError, without_other_kinds

FREE = (
    "lake",  # where the lake is (a moved or copied lake resumes)
    "campaign.id",  # the id the row is stored under
    "campaign.task_runner",  # threads or Ray: the same rows either way
    "llm.budget_usd",  # spend caps: a campaign stopped at a cap resumes with a larger one
    "llm.round_budget_usd",
    "agents.learner.dispatch",  # where the learner runs, and how long to wait for it
    "agents.learner.worker_wait_s",
    "agents.learner.run_timeout_s",
)
"""Key paths (and their sub-keys) a resume may change without ``--reconfigure``."""


def _flat(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out |= _flat(value, f"{path}.")
        else:
            out[path] = value
    return out


def _free(path: str, free: Iterable[str]) -> bool:
    return any(path == f or path.startswith(f"{f}.") for f in free)


def stored_config(data: Mapping[str, Any]) -> CampaignConfig:
    """The config a campaign's row stores, validated; ConfigError if it no longer loads.

    Settings of kinds it did not choose, which a campaign stored before each kind declared
    its own, are dropped (:func:`~evosyn.config.without_other_kinds`).
    """
    try:
        return CampaignConfig.model_validate(without_other_kinds(data))
    except ValueError as exc:
        first = str(exc).splitlines()[1:2] or [str(exc)]
        raise ConfigError(f"the stored config no longer loads ({first[0].strip()})") from None


def config_changes(
    stored: Mapping[str, Any], given: CampaignConfig, also_free: Iterable[str] = ()
) -> list[str]:
    """``key: stored -> given`` for each setting ``given`` changes (the :data:`FREE` ones aside).

    ``stored`` is validated first, so a key a later version added with a default compares
    equal to that default.
    """
    free = (*FREE, *also_free)
    before = _flat(stored_config(stored).model_dump(mode="json"))
    after = _flat(given.model_dump(mode="json"))
    return [
        f"{key}: {before.get(key)!r} -> {after.get(key)!r}"
        for key in sorted(before.keys() | after.keys())
        if not _free(key, free) and before.get(key) != after.get(key)
    ]


def changes_line(campaign_id: str, changes: list[str], what_to_do: str) -> str:
    """One line: what a resume with another config would change, then ``what_to_do``."""
    more = f" (and {len(changes) - 1} more)" if len(changes) > 1 else ""
    return (
        f"campaign {campaign_id!r} was started with another config: {changes[0]}{more}; "
        f"{what_to_do}"
    )
