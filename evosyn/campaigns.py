"""Campaigns at a glance: what ``evosyn campaign list`` and ``campaign show`` print.

Everything here is read back from the lake's records; nothing asks Prefect, so it answers the
same for a campaign that finished, one that was interrupted and one copied from elsewhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from evosyn.records import (
    Campaign,
    Record,
    ReflectorDecision,
    Rejection,
    RoundSummary,
    Verification,
)

PATIENCE = 2
"""The paper's stop rule: this many consecutive rounds without a space update end a campaign."""

Status = Literal["finished", "converged", "incomplete", "synthesized", "started"]


class CampaignOverview(Record):
    """One campaign in a line: identity, progress and totals."""

    campaign_id: str = Field(description="Campaign id.")
    name: str = Field(description="Campaign name from its config.")
    domain: str = Field(description="τ²-bench domain.")
    seed: int = Field(description="Campaign seed.")
    learner: str = Field(description="Learner kind from its config (simulated, icl, sft, ...).")
    rounds_planned: int = Field(ge=0, description="Rounds the config asks for (0: static synth).")
    rounds_done: int = Field(ge=0, description="Rounds with a summary in the lake.")
    status: Status = Field(
        description="finished: every planned round ran; converged: the stop rule ended it "
        "early; incomplete: interrupted or still running; synthesized: a static `evosyn "
        "synth` dataset; started: nothing beyond the campaign row yet."
    )
    n_verified: int = Field(ge=0, description="Verified trajectories, all rounds.")
    n_rejected: int = Field(ge=0, description="Rejected requests, all rounds.")
    n_failed: int = Field(
        ge=0, description="Requests that failed with an error, all rounds (a resume retries them)."
    )
    created_at: datetime = Field(description="When the campaign row was written.")
    last_activity: datetime | None = Field(description="When its last round finished, if any.")


def converged(summaries: Sequence[RoundSummary], patience: int | None = PATIENCE) -> bool:
    """Whether the stop rule ends the campaign after these rounds (in round order).

    ``patience`` is ``campaign.patience``; None switches the rule off.
    """
    if patience is None:
        return False
    unchanged = 0
    previous: int | None = None
    for s in summaries:
        unchanged = unchanged + 1 if s.space_version == previous and s.round > 1 else 0
        previous = s.space_version
    return unchanged >= patience


def _planned(campaign: Campaign) -> int:
    if not _is_campaign_run(campaign):
        return 0
    rounds: Any = campaign.config.get("campaign", {}).get("rounds", 0)
    return int(rounds)


def _is_campaign_run(campaign: Campaign) -> bool:
    # `evosyn synth` names its campaigns "synth" and writes no round summaries.
    return campaign.name != "synth"


def overview(
    campaign: Campaign,
    summaries: Sequence[RoundSummary],
    n_verified: int | None = None,
    n_rejected: int | None = None,
) -> CampaignOverview:
    """The overview of ``campaign`` from its round summaries (in round order).

    A static synthesis has no round summaries: its counts are passed in.
    """
    planned = _planned(campaign)
    done = len(summaries)
    status: Status
    if planned == 0:
        status = "synthesized" if n_verified is not None else "started"
    elif done >= planned:
        status = "finished"
    elif converged(summaries, campaign.config.get("campaign", {}).get("patience", PATIENCE)):
        status = "converged"
    elif done == 0 and n_verified is None:
        status = "started"
    else:
        status = "incomplete"
    finished = [s.finished_at for s in summaries if s.finished_at is not None]
    learner: Any = campaign.config.get("agents", {}).get("learner", {}).get("kind", "-")
    return CampaignOverview(
        campaign_id=campaign.campaign_id,
        name=campaign.name,
        domain=campaign.domain,
        seed=campaign.seed,
        learner=str(learner) if planned else "-",
        rounds_planned=planned,
        rounds_done=done,
        status=status,
        n_verified=sum(s.n_verified for s in summaries) if summaries else n_verified or 0,
        n_rejected=sum(s.n_rejected for s in summaries) if summaries else n_rejected or 0,
        n_failed=sum(s.n_failed for s in summaries),
        created_at=campaign.created_at,
        last_activity=max(finished) if finished else None,
    )


def overviews(lake: Any) -> list[CampaignOverview]:
    """Every campaign in ``lake`` (a :class:`~evosyn.storage.Lake`), oldest first."""
    by_campaign: dict[str, list[RoundSummary]] = {}
    for s in lake.read(RoundSummary):
        by_campaign.setdefault(s.campaign_id, []).append(s)
    out = [
        overview_of(lake, c, sorted(by_campaign.get(c.campaign_id, []), key=lambda s: s.round))
        for c in lake.read(Campaign)
    ]
    return sorted(out, key=lambda o: (o.created_at, o.campaign_id))


def overview_of(
    lake: Any, campaign: Campaign, summaries: Sequence[RoundSummary]
) -> CampaignOverview:
    """The overview of ``campaign`` in ``lake`` with its round summaries (in round order)."""
    n_verified: int | None = None
    n_rejected: int | None = None
    # Only a static synthesis, or a campaign stopped inside its first round, lacks summaries.
    if not summaries:
        verified = [v for v in lake.read(Verification, campaign.campaign_id) if v.passed]
        if verified or not _is_campaign_run(campaign):
            n_verified = len(verified)
            n_rejected = len(lake.read(Rejection, campaign.campaign_id))
    return overview(campaign, summaries, n_verified, n_rejected)


def decisions(lake: Any, campaign_id: str) -> list[ReflectorDecision]:
    """The Reflector's decisions of a campaign, in round order."""
    return sorted(lake.read(ReflectorDecision, campaign_id), key=lambda d: d.round)
