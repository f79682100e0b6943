"""The multi-round campaign as a Prefect flow: ``S_r -> D_r -> learner -> F_r -> S_{r+1}``."""

from __future__ import annotations

from pathlib import Path

from prefect import flow

from evosyn.agents.designer.strategies import get_strategy, initial_space
from evosyn.agents.generator import realizable
from evosyn.campaigns import converged
from evosyn.config import CampaignConfig, ConfigError
from evosyn.environments.kit.grounding import REALIZABLE
from evosyn.environments.tau2_data import tau2_provenance
from evosyn.flows.artifacts import publish_campaign_artifact
from evosyn.flows.round import round_flow
from evosyn.flows.runners import task_runner_for
from evosyn.records import Campaign, Feedback, RoundSummary, SynthesisSpace
from evosyn.resume import changes_line, config_changes
from evosyn.space import seed_space
from evosyn.tasks.loop import lake_of, roles_for


def start_campaign(
    cfg: CampaignConfig,
    campaign_id: str,
    reconfigure: bool = False,
    free: tuple[str, ...] = (),
) -> SynthesisSpace:
    """The campaign's row and its seed space in the lake (once); returns its first space.

    A campaign already in the lake resumes only with the config it stored (``free`` names
    more settings that may differ): ConfigError naming the first difference, unless
    ``reconfigure``, which stores ``cfg`` as the campaign's config from now on.
    """
    lake = lake_of(cfg)
    row = Campaign(
        campaign_id=campaign_id,
        round=0,
        name=cfg.campaign.name,
        domain=cfg.campaign.domain,
        seed=cfg.campaign.seed,
        config=cfg.model_dump(mode="json"),
        tau2=tau2_provenance(cfg.campaign.domain),
    )
    stored = lake.read(Campaign, campaign_id)
    changes = config_changes(stored[0].config, cfg, free) if stored else []
    if changes and not reconfigure:
        raise ConfigError(
            changes_line(
                campaign_id,
                changes,
                "resume it with its stored config, or pass reconfigure (--reconfigure) to run "
                "it with this one",
            )
        )
    if not stored or changes:
        # Replacing the row (same batch key) keeps one row; it keeps the campaign's birth date.
        created = {"created_at": stored[0].created_at} if stored else {}
        lake.write([row.model_copy(update=created)], batch="campaign")
    spaces = lake.read(SynthesisSpace, campaign_id)
    if spaces:
        space = spaces[0]
    else:
        # A baseline that plans in the Generator's whole request space starts in it.
        honoured = realizable(cfg)
        space = initial_space(
            get_strategy(cfg.campaign.strategy),
            seed_space(cfg.campaign.domain, campaign_id),
            REALIZABLE if honoured is None else honoured,
        )
    if not spaces:
        lake.write([space], batch=f"v{space.version}")
    return space


def with_absolute_lake(cfg: CampaignConfig) -> CampaignConfig:
    """``cfg`` with a relative local ``lake.root`` resolved here, where the campaign starts.

    Every run the campaign starts (a round, a training on the `gpu` pool's machine) gets this
    one location, instead of resolving ``lake`` in its own working directory.
    """
    root = cfg.lake.root
    if "://" in root or Path(root).is_absolute():
        return cfg
    lake = cfg.lake.model_copy(update={"root": str(Path(root).resolve())})
    return cfg.model_copy(update={"lake": lake})


@flow(name="evosyn-campaign", flow_run_name="{campaign_id}")
def campaign_flow(
    cfg: CampaignConfig,
    campaign_id: str,
    reconfigure: bool = False,
    free: tuple[str, ...] = (),
) -> list[RoundSummary]:
    """Run (or resume) the campaign's rounds; one summary per round.

    Resuming is running again with the same campaign id: every task reuses the outputs it finds
    in the lake, so finished work is neither redone nor duplicated. A resume runs the stored
    config: another one is refused unless ``reconfigure`` (see :func:`start_campaign`).
    """
    cfg = with_absolute_lake(cfg)
    if cfg.campaign.id != campaign_id:
        # The roles cache their model answers under the config's campaign id (a default id
        # is made from the clock): name the campaign that runs, so its resume finds them.
        cfg = cfg.model_copy(
            update={"campaign": cfg.campaign.model_copy(update={"id": campaign_id})}
        )
    # Fail on an unavailable role before any work starts.
    roles_for(cfg)
    space = start_campaign(cfg, campaign_id, reconfigure, free)
    feedback: Feedback | None = None
    summaries: list[RoundSummary] = []
    for r in range(1, cfg.campaign.rounds + 1):
        runner = task_runner_for(cfg)
        space, feedback, summary = round_flow.with_options(task_runner=runner)(
            cfg, space, feedback, r
        )
        summaries.append(summary)
        publish_campaign_artifact(campaign_id, summaries)
        if converged(summaries, cfg.campaign.patience):
            break
    return summaries
