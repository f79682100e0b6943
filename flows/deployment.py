"""The campaign flow as a deployment entrypoint: config by path or inline, plus overrides."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from prefect import flow
from prefect.runtime import flow_run

from evosyn.config import CampaignConfig, ConfigError, load_config
from evosyn.flows.campaign import campaign_flow
from evosyn.records import RoundSummary
from evosyn.storage import LakeError
from evosyn.tasks.loop import lake_of


def deployment_config(
    config_path: str | None,
    config: dict[str, Any] | None,
    overrides: list[str] | None,
    campaign_id: str | None = None,
) -> CampaignConfig:
    """The campaign config of a deployment's parameters (a path wins over inline data)."""
    extra = list(overrides or []) + ([f"campaign.id={campaign_id}"] if campaign_id else [])
    path = Path(config_path) if config_path is not None else None
    return load_config(path, extra, data=config if path is None else None)


def check_round(cfg: CampaignConfig, campaign_id: str, round: int) -> None:
    """ConfigError unless ``round`` is one of the campaign's rounds and the lake knows it."""
    if not 1 <= round <= cfg.campaign.rounds:
        raise ConfigError(
            f"round {round} is not a round of {campaign_id}: its rounds are 1 to "
            f"{cfg.campaign.rounds} (campaign.rounds)"
        )
    try:
        lake_of(cfg).check_campaign(campaign_id)
    except LakeError as exc:
        raise ConfigError(str(exc)) from None


def _started() -> datetime:
    # The scheduled start of this flow run: the same on a retry, new for each scheduled run.
    start = flow_run.scheduled_start_time
    return datetime.fromisoformat(start.isoformat()) if start is not None else datetime.now(UTC)


def _campaign_run_name() -> str:
    params = flow_run.parameters
    cfg = deployment_config(
        params.get("config_path"),
        params.get("config"),
        params.get("overrides"),
        params.get("campaign_id"),
    )
    return cfg.campaign.resolved_id(_started())


@flow(name="evosyn-campaign-deployment", flow_run_name=_campaign_run_name)
def campaign_deployment(
    config_path: str | None = None,
    config: dict[str, Any] | None = None,
    overrides: list[str] | None = None,
    campaign_id: str | None = None,
) -> list[RoundSummary]:
    """Run a campaign from the Prefect UI or a schedule; the flow run is named by its id.

    Args:
        config_path: A campaign YAML file on the worker (relative to the project root).
        config: The campaign config inline (used when no path is given).
        overrides: ``key.path=value`` overrides, as with ``--set``.
        campaign_id: Campaign id; default: the config's, else NAME-YYYYMMDD-HHMMSS of the
            run's scheduled start (a new campaign per scheduled run; a retry resumes it).
    """
    cfg = deployment_config(config_path, config, overrides, campaign_id)
    # The body runs in this flow run: its rounds are this run's subflows, not a nested campaign.
    return campaign_flow.fn(cfg, cfg.campaign.resolved_id(_started()))


@flow(name="evosyn-round-deployment", flow_run_name="{campaign_id}-through-round-{round}")
def round_deployment(
    campaign_id: str,
    round: int,
    config_path: str | None = None,
    config: dict[str, Any] | None = None,
    overrides: list[str] | None = None,
) -> RoundSummary:
    """Run round ``round`` of a campaign from the Prefect UI.

    A round starts from the space and feedback the rounds before it left, so those are resumed
    from the lake first (and run where they are missing); their stored work is not redone.
    """
    cfg = deployment_config(
        config_path, config, [*(overrides or []), f"campaign.rounds={round}"], campaign_id
    )
    summaries = campaign_flow.fn(cfg, campaign_id)
    if summaries[-1].round != round:
        raise RuntimeError(
            f"{campaign_id} stopped after round {summaries[-1].round}: two rounds left the space "
            "unchanged"
        )
    return summaries[-1]
