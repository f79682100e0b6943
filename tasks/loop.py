"""Prefect tasks of one round: each role over a batch, its output published to the lake.

Every task first looks for its output in the lake (deterministic batch keys), so a retried or
resumed run reuses finished work instead of redoing or duplicating it.
"""

from __future__ import annotations

from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from evosyn.agents.designer.programmatic import ProgrammaticDesigner
from evosyn.agents.feedback import compute_feedback
from evosyn.agents.learner.diagnostic import official_diagnostic, split_verified
from evosyn.agents.planner import PlanningError
from evosyn.agents.roles import roles_for
from evosyn.agents.synthesis import SynthesisBatch, synthesize
from evosyn.config import CampaignConfig
from evosyn.records import (
    Blueprint,
    Direction,
    EvalResult,
    Feedback,
    GenerationPlan,
    Probe,
    ReflectorDecision,
    Rejection,
    SynthesisSpace,
    SynthTask,
    Training,
    Trajectory,
    ValueFeedback,
    Verification,
)
from evosyn.storage import Lake, LakeError


def transient(_task: Any, _run: Any, state: Any) -> bool:
    """Retry only failures that can pass on a second try (storage and network hiccups)."""
    try:
        state.result()
    except (LakeError, ConnectionError, TimeoutError):
        return True
    except Exception:
        return False
    return False


role_task = task(
    retries=2, retry_delay_seconds=1, retry_condition_fn=transient, cache_policy=NO_CACHE
)


def lake_of(cfg: CampaignConfig) -> Lake:
    """The lake a config points at."""
    return Lake(cfg.lake.root, cfg.lake.s3_endpoint, cfg.lake.cache_dir)


@role_task
def reflect(
    cfg: CampaignConfig, space: SynthesisSpace, feedback: Feedback, round: int
) -> SynthesisSpace:
    """The Reflector's decision after ``round - 1`` and the space ``round`` runs in."""
    roles = roles_for(cfg)
    lake = lake_of(cfg)
    stored = lake.read(ReflectorDecision, space.campaign_id, round - 1)
    if stored:
        spaces = lake.read(SynthesisSpace, space.campaign_id)
        return next(s for s in spaces if s.version == stored[0].next_space_version)
    if roles.reflector is None:
        return space
    decision, nxt = roles.reflector.reflect(space, feedback, round - 1)
    if nxt.version != space.version:
        lake.write([nxt.model_copy(update={"round": round})], batch=f"v{nxt.version}")
        nxt = nxt.model_copy(update={"round": round})
    lake.write([decision], batch="decision")
    return nxt


@role_task
def design(
    cfg: CampaignConfig, space: SynthesisSpace, feedback: Feedback | None, round: int
) -> GenerationPlan:
    """The round's generation plan (cold start without feedback)."""
    roles = roles_for(cfg)
    lake = lake_of(cfg)
    budget = cfg.campaign.budget_per_round
    stored = lake.read(Direction, space.campaign_id, round)
    if stored:
        return GenerationPlan(
            campaign_id=space.campaign_id, round=round, total_budget=budget, directions=stored
        )
    designer = roles.designer or ProgrammaticDesigner()
    # Without a Designer the Planner samples the space alone: cold start every round.
    plan = designer.design(
        space, feedback if roles.designer else None, space.campaign_id, round, budget
    )
    lake.write(plan.directions, batch="plan")
    return plan


@role_task
def plan_blueprints(
    cfg: CampaignConfig, space: SynthesisSpace, plan: GenerationPlan
) -> list[Blueprint]:
    """Blueprints for every direction of the plan."""
    roles = roles_for(cfg)
    lake = lake_of(cfg)
    stored = lake.read(Blueprint, plan.campaign_id, plan.round)
    if stored:
        return stored
    blueprints: list[Blueprint] = []
    unplanned: list[Rejection] = []
    for d in plan.directions:
        try:
            blueprints += roles.planner.plan(space, d, seed=cfg.campaign.seed + plan.round)
        except PlanningError as exc:
            # The direction's whole budget is accounted for, under the ids it would have had.
            unplanned += [
                Rejection(
                    campaign_id=d.campaign_id,
                    round=d.round,
                    stage="plan",
                    blueprint_id=f"{d.direction_id}-b{i:04d}",
                    reason=str(exc),
                )
                for i in range(d.budget)
            ]
    if blueprints:
        lake.write(blueprints, batch="blueprints")
    if unplanned:
        lake.write(unplanned, batch="plan")
    return blueprints


@role_task
def synthesize_batch(
    cfg: CampaignConfig, blueprints: list[Blueprint], batch: str
) -> SynthesisBatch:
    """Generate, roll out and verify one chunk of blueprints; publish all four tables."""
    roles = roles_for(cfg)
    lake = lake_of(cfg)
    cid, rnd = blueprints[0].campaign_id, blueprints[0].round
    ids = {b.blueprint_id for b in blueprints}
    stored = SynthesisBatch(
        tasks=[t for t in lake.read(SynthTask, cid, rnd) if t.blueprint_id in ids],
        rejections=[r for r in lake.read(Rejection, cid, rnd) if r.blueprint_id in ids],
    )
    task_ids = {t.task_id for t in stored.tasks}
    stored.trajectories = [t for t in lake.read(Trajectory, cid, rnd) if t.task_id in task_ids]
    stored.verifications = [v for v in lake.read(Verification, cid, rnd) if v.task_id in task_ids]
    # Done when every blueprint ended in a passed verdict or a rejection (written last).
    passed_tasks = {v.task_id for v in stored.verified}
    ended = {r.blueprint_id for r in stored.rejections} | {
        t.blueprint_id for t in stored.tasks if t.task_id in passed_tasks
    }
    if ended == ids:
        return stored
    out = synthesize(
        blueprints,
        roles.generator,
        roles.teacher,
        roles.verifier,
        seed=cfg.campaign.seed + rnd,
        contamination=getattr(roles.generator, "contamination_reason", None),
    )
    for records in (out.tasks, out.trajectories, out.verifications, out.rejections):
        if records:
            lake.write(records, batch=batch)
    return out


@role_task
def train_and_evaluate(
    cfg: CampaignConfig, campaign_id: str, round: int
) -> tuple[Training, list[EvalResult]]:
    """Train on D_<=r minus held-out tasks, evaluate on the diagnostic set."""
    roles = roles_for(cfg)
    lake = lake_of(cfg)
    trained = lake.read(Training, campaign_id, round)
    evaluated = lake.read(EvalResult, campaign_id, round)
    if trained and evaluated:
        return trained[0], evaluated
    verified = [v for v in lake.read(Verification, campaign_id) if v.round <= round]
    train, held = split_verified(verified)
    training = roles.learner.train(train, campaign_id, round, f"{campaign_id}-r{round}-train")
    lake.write([training], batch="train")
    items = [*official_diagnostic(cfg.campaign.domain), *held]
    results = roles.learner.evaluate(training, items)
    lake.write(results, batch="diagnostic")
    return training, results


@role_task
def feedback_of(
    cfg: CampaignConfig,
    space: SynthesisSpace,
    evaluations: list[EvalResult],
    previous: Feedback | None,
    round: int,
) -> Feedback:
    """Per-value coverage and success, and probes, after ``round``."""
    lake = lake_of(cfg)
    cid = space.campaign_id
    verified = [v for v in lake.read(Verification, cid) if v.round <= round]
    requested = {t.task_id: t.requested for t in lake.read(SynthTask, cid) if t.round <= round}
    stored = lake.read(ValueFeedback, cid, round)
    if stored:
        return Feedback(
            campaign_id=cid, round=round, values=stored, probes=lake.read(Probe, cid, round)
        )
    fb = compute_feedback(
        space, evaluations, verified, requested, cid, round, previous, seed=cfg.campaign.seed
    )
    lake.write(fb.values, batch="values")
    if fb.probes:
        lake.write(fb.probes, batch="probes")
    return fb
