"""The campaign flow as a deployment entrypoint: config by path or inline, plus overrides.

Parameters arrive as the UI's form sends them: the deployment's default ``config_path`` comes
along with a pasted ``config``, and a cleared field is an empty string. A config that cannot be
used ends the run Failed with one line as its state message, not a traceback.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from prefect import flow
from prefect.client.schemas.objects import State
from prefect.runtime import flow_run
from prefect.states import Failed

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
    seed: int | None = None,
) -> CampaignConfig:
    """The campaign config of a deployment's parameters; ConfigError in one line.

    A pasted ``config`` wins over ``config_path`` (the form keeps the deployment's default path
    beside it); an empty path is none; with neither, the defaults. ``seed`` sets
    ``campaign.seed`` unless ``overrides`` pin it.
    """
    extra = list(overrides or [])
    if any(not isinstance(item, str) for item in extra):
        raise ConfigError(f"config error: overrides must be key.path=value strings, got {extra!r}")
    pinned = any(item.partition("=")[0].strip() == "campaign.seed" for item in extra)
    if seed is not None and not pinned:
        extra.append(f"campaign.seed={seed}")
    if campaign_id:
        extra.append(f"campaign.id={campaign_id}")
    path = Path(config_path) if config_path and config_path.strip() and not config else None
    if path is not None and path.is_dir():
        raise ConfigError(f"config error: config_path {config_path!r} is a folder, not a file")
    return load_config(path, extra, data=(config or None) if path is None else None)


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


def schedule_seed(start: datetime) -> int:
    """A campaign seed from a scheduled start: its UTC minute as YYYYMMDDHHMM."""
    return int(start.astimezone(UTC).strftime("%Y%m%d%H%M"))


def _seed(seed_per_run: bool) -> int | None:
    return schedule_seed(_started()) if seed_per_run else None


def _campaign_run_name() -> str:
    params = flow_run.parameters
    try:
        cfg = deployment_config(
            params.get("config_path"),
            params.get("config"),
            params.get("overrides"),
            params.get("campaign_id"),
        )
    except ConfigError:
        # The run itself fails with the reason; a name that raised would crash it instead.
        return f"{params.get('campaign_id') or 'campaign'}-config-error"
    return cfg.campaign.resolved_id(_started())


@flow(name="evosyn-campaign-deployment", flow_run_name=_campaign_run_name)
def campaign_deployment(
    config_path: str | None = None,
    config: dict[str, Any] | None = None,
    overrides: list[str] | None = None,
    campaign_id: str | None = None,
    seed_per_run: bool = False,
    reconfigure: bool = False,
) -> list[RoundSummary] | State:
    """Run a campaign from the Prefect UI or a schedule; the flow run is named by its id.

    Args:
        config_path: A campaign YAML file on the worker (relative to the project root); empty
            or beside a pasted ``config``: not used.
        config: The campaign config inline; it wins over ``config_path``.
        overrides: ``key.path=value`` overrides, as with ``--set``.
        campaign_id: Campaign id; default: the config's, else NAME-YYYYMMDD-HHMMSS of the
            run's scheduled start (a new campaign per scheduled run; a retry resumes it).
        seed_per_run: Seed the campaign from the run's scheduled start (YYYYMMDDHHMM, stored
            in its campaign row) instead of ``campaign.seed``, unless ``overrides`` set it:
            a schedule then runs a different campaign each time, and a retry the same one.
        reconfigure: Resume a stored campaign with this config although it differs from the
            one it stored (otherwise the run fails naming the difference).
    """
    try:
        cfg = deployment_config(config_path, config, overrides, campaign_id, _seed(seed_per_run))
        # The body runs in this flow run: its rounds are this run's subflows.
        return campaign_flow.fn(cfg, cfg.campaign.resolved_id(_started()), reconfigure)
    except ConfigError as exc:
        return Failed(message=str(exc))


@flow(name="evosyn-round-deployment", flow_run_name="{campaign_id}-through-round-{round}")
def round_deployment(
    campaign_id: str,
    round: int,
    config_path: str | None = None,
    config: dict[str, Any] | None = None,
    overrides: list[str] | None = None,
) -> RoundSummary | State:
    """Run round ``round`` of a campaign from the Prefect UI.

    A round starts from the space and feedback the rounds before it left, so those are resumed
    from the lake first (and run where they are missing); their stored work is not redone.
    """
    try:
        cfg = deployment_config(
            config_path, config, [*(overrides or []), f"campaign.rounds={round}"], campaign_id
        )
        # The campaign may be stored with more rounds than this run goes to.
        summaries = campaign_flow.fn(cfg, campaign_id, free=("campaign.rounds",))
    except ConfigError as exc:
        return Failed(message=str(exc))
    if summaries[-1].round != round:
        raise RuntimeError(
            f"{campaign_id} stopped after round {summaries[-1].round}: two rounds left the space "
            "unchanged"
        )
    return summaries[-1]
