"""The multi-round campaign as a Prefect flow: ``S_r -> D_r -> learner -> F_r -> S_{r+1}``."""

from __future__ import annotations

from prefect import flow

from evosyn.campaigns import converged
from evosyn.config import CampaignConfig
from evosyn.flows.artifacts import publish_campaign_artifact
from evosyn.flows.round import round_flow
from evosyn.flows.runners import task_runner_for
from evosyn.records import Campaign, Feedback, RoundSummary, SynthesisSpace
from evosyn.space import seed_space
from evosyn.tasks.loop import lake_of, roles_for


def start_campaign(cfg: CampaignConfig, campaign_id: str) -> SynthesisSpace:
    """The campaign's row and its seed space in the lake (once); returns its first space."""
    lake = lake_of(cfg)
    if not lake.read(Campaign, campaign_id):
        lake.write(
            [
                Campaign(
                    campaign_id=campaign_id,
                    round=0,
                    name=cfg.campaign.name,
                    domain=cfg.campaign.domain,
                    seed=cfg.campaign.seed,
                    config=cfg.model_dump(mode="json"),
                )
            ],
            batch="campaign",
        )
    spaces = lake.read(SynthesisSpace, campaign_id)
    space = spaces[0] if spaces else seed_space(cfg.campaign.domain, campaign_id)
    if not spaces:
        lake.write([space], batch=f"v{space.version}")
    return space


@flow(name="evosyn-campaign", flow_run_name="{campaign_id}")
def campaign_flow(cfg: CampaignConfig, campaign_id: str) -> list[RoundSummary]:
    """Run (or resume) the campaign's rounds; one summary per round.

    Resuming is running again with the same campaign id: every task reuses the outputs it finds
    in the lake, so finished work is neither redone nor duplicated.
    """
    if cfg.campaign.id != campaign_id:
        # The roles cache their model answers under the config's campaign id (a default id
        # is made from the clock): name the campaign that runs, so its resume finds them.
        cfg = cfg.model_copy(
            update={"campaign": cfg.campaign.model_copy(update={"id": campaign_id})}
        )
    # Fail on an unavailable role before any work starts.
    roles_for(cfg)
    space = start_campaign(cfg, campaign_id)
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
