"""One round of the loop as a Prefect flow: reflect, design, plan, synthesize, train, feedback."""

from __future__ import annotations

from typing import TypeVar, cast

from prefect import flow
from prefect.utilities.annotations import opaque

from evosyn.agents.roles import on_model
from evosyn.agents.synthesis import SynthesisBatch
from evosyn.config import CampaignConfig
from evosyn.flows.artifacts import publish_round_artifacts
from evosyn.flows.dispatch import dispatched, evaluate_on_pool, train_on_pool
from evosyn.records import Feedback, RoundSummary, SynthesisSpace, SynthTask, utcnow
from evosyn.tasks.learning import (
    evaluate_learner,
    feedback_of,
    fixed_set,
    planted_slice,
    success_of,
    train_learner,
    user_faults_of,
)
from evosyn.tasks.loop import (
    decision_of,
    design,
    generate_tasks,
    is_failure,
    lake_of,
    plan_blueprints,
    reflect,
    report_stage,
    synthesize_batch,
)

T = TypeVar("T")


def whole(value: T) -> T:
    """``value`` marked ``opaque``: Prefect passes it on without walking every field of it."""
    return cast(T, opaque(value))


def _as_is(value: T) -> T:
    return value


# Tasks per rollout task: coarse enough that Prefect's per-task cost stays small.
CHUNK = 50
# With a model behind the Generator or the teacher, a task costs seconds of model calls
# made one after another, so small chunks keep the gateways' concurrency busy instead. A
# chunk on a model also runs its conversations at once (``roll_out_each``, up to the
# process's bound per model), so the round's conversations are all in flight together
# whatever the chunk size; small chunks keep what a resume redoes small. The size fixes the
# chunk windows (below): changing it moves stored rows to other chunks of a resumed round.
LLM_CHUNK = 4


def chunk_size(cfg: CampaignConfig) -> int:
    """Tasks per rollout task for ``cfg``'s teacher."""
    return LLM_CHUNK if {"generator", "teacher"} & on_model(cfg) else CHUNK


@flow(name="evosyn-round", flow_run_name="{space.campaign_id}-round-{round}")
def round_flow(
    cfg: CampaignConfig,
    space: SynthesisSpace,
    feedback: Feedback | None,
    round: int,
) -> tuple[SynthesisSpace, Feedback, RoundSummary]:
    """Run ``round`` from the space and feedback the previous round left."""
    started = utcnow()
    # Arguments are whole records: walking every field of them cost Prefect tens of ms per
    # task on a 50-blueprint chunk, and none of them holds a future.
    if feedback is not None:
        space = reflect(whole(cfg), whole(space), whole(feedback), round)
    plan = design(whole(cfg), whole(space), whole(feedback), round)
    blueprints = plan_blueprints(whole(cfg), whole(space), whole(plan))
    # The Generator runs over the whole round in one step, so no kept task repeats another.
    generated = generate_tasks(whole(cfg), whole(blueprints)) if blueprints else SynthesisBatch()
    # A chunk is the tasks of a window of blueprints, not of tasks: a task whose generation
    # failed and is retried on a resume lands in its own window, and moves no other task to
    # another chunk (whose stored rows would then be overwritten).
    size = chunk_size(cfg)
    window = {b.blueprint_id: i // size for i, b in enumerate(blueprints)}
    chunks: dict[int, list[SynthTask]] = {}
    for task in generated.tasks:
        chunks.setdefault(window[task.blueprint_id], []).append(task)
    # Chunks fan out on the round's task runner (threads or Ray); results keep chunk order.
    # prefect-ray 0.6 hands annotated arguments to Ray workers still wrapped.
    shipped = whole if cfg.campaign.task_runner == "thread" else _as_is
    futures = [
        synthesize_batch.with_options(task_run_name=f"synthesize-r{round}-{i:03d}").submit(
            shipped(cfg), shipped(chunk), f"chunk-{i:03d}"
        )
        for i, chunk in sorted(chunks.items())
    ]
    batches = [generated, *(f.result() for f in futures)]
    # Requests that raised (after their retries) are not stored: a resume retries them.
    n_failed = sum(is_failure(r) for b in batches for r in b.rejections)
    # Training always uses the accumulated verified data D_<=r (held-out tasks excluded).
    if dispatched(cfg):
        # A GPU learner trains and evaluates on its own pool, as child runs of this round.
        train_on_pool(cfg, space.campaign_id, round)
        report_stage("train", round)
        evaluations = evaluate_on_pool(cfg, space.campaign_id, round)
        report_stage("evaluate", round)
    else:
        train_learner(whole(cfg), space.campaign_id, round)
        evaluations = evaluate_learner(whole(cfg), space.campaign_id, round)
    new_feedback = feedback_of(whole(cfg), whole(space), whole(evaluations), whole(feedback), round)
    fixed_success, fixed_n = success_of(fixed_set(evaluations))
    diagnostic_success, diagnostic_n = success_of(evaluations)
    planted_success, planted_n = success_of(planted_slice(cfg, evaluations))
    summary = RoundSummary(
        campaign_id=space.campaign_id,
        round=round,
        space_version=space.version,
        budget=plan.total_budget,
        n_blueprints=len(blueprints),
        n_tasks=len(generated.tasks),
        n_verified=sum(len(b.verified) for b in batches),
        n_rejected=sum(not is_failure(r) for b in batches for r in b.rejections),
        n_failed=n_failed,
        n_repaired=sum(1 for b in batches for v in b.verified if v.repair_attempts > 0),
        n_user_faults=user_faults_of(cfg, space.campaign_id, round, evaluations),
        fixed_success=fixed_success,
        fixed_n=fixed_n,
        diagnostic_success=diagnostic_success,
        diagnostic_n=diagnostic_n,
        planted_success=planted_success,
        planted_n=planted_n,
        decision=decision_of(cfg, space.campaign_id, round),
        status="failed" if n_failed else "succeeded",
        started_at=started,
        finished_at=utcnow(),
    )
    lake_of(cfg).write([summary], batch="summary")
    publish_round_artifacts(cfg, summary)
    return space, new_feedback, summary
