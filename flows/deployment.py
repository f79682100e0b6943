"""The campaign flow as a deployment entrypoint: config by path or inline, plus overrides."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow

from evosyn.config import load_config
from evosyn.flows.campaign import campaign_flow
from evosyn.records import RoundSummary


@flow(name="evosyn-campaign-deployment")
def campaign_deployment(
    config_path: str | None = None,
    config: dict[str, Any] | None = None,
    overrides: list[str] | None = None,
    campaign_id: str | None = None,
) -> list[RoundSummary]:
    """Run a campaign from the Prefect UI or a schedule.

    Args:
        config_path: A campaign YAML file on the worker (relative to the project root).
        config: The campaign config inline (used when no path is given).
        overrides: ``key.path=value`` overrides, as with ``--set``.
        campaign_id: Campaign id; default: the config's, else NAME-YYYYMMDD-HHMMSS (a new
            campaign per scheduled run).
    """
    extra = list(overrides or []) + ([f"campaign.id={campaign_id}"] if campaign_id else [])
    path = Path(config_path) if config_path is not None else None
    cfg = load_config(path, extra, data=config if path is None else None)
    return campaign_flow(cfg, cfg.campaign.resolved_id())
