"""What the learner's tasks read from the lake for it, and how its checkpoints are stored.

A learner neither reads nor writes the lake (``agents/learner/base.py``): the train task hands it
D_<=r as :class:`TrainingData` and uploads the checkpoint folder it returns; the evaluate task
hands it the :class:`EvalInputs` its ``reads`` names. ``evosyn export sft`` reads D_<=r here too.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tau2.data_model.tasks import Task

from evosyn.agents.learner.base import (
    DiagnosticItem,
    EvalInputs,
    Evaluation,
    Learner,
    Trained,
    TrainingData,
)
from evosyn.agents.learner.diagnostic import split_verified
from evosyn.environments import DIAGNOSTIC_SPLIT, get_domain
from evosyn.records import SynthTask, Training, Trajectory, Verification
from evosyn.storage import Lake
from evosyn.storage.backends import S3Backend


def train(
    lake: Lake,
    learner: Learner,
    campaign_id: str,
    round: int,
    training_id: str,
    checkpoint_prefix: str,
) -> Training:
    """``learner`` trained on D_<=round, its checkpoint uploaded; the record, not yet stored.

    The checkpoint goes to ``<checkpoint_prefix>/<campaign>/<training id>`` in the lake.
    """
    learner.preflight("train")
    examples = "examples" in learner.reads
    data = training_data(lake, campaign_id, up_to=round, examples=examples)
    if "previous" in learner.reads:
        previous = previous_training(lake, learner, campaign_id, round)
        if previous is not None and previous.checkpoint_uri is not None:
            local = local_checkpoint(lake, previous.checkpoint_uri)
            data = data.model_copy(update={"previous": previous, "previous_checkpoint": local})
    trained = learner.train(data, round, training_id)
    return upload_checkpoint(lake, trained, f"{checkpoint_prefix}/{campaign_id}/{training_id}")


def previous_training(
    lake: Lake, learner: Learner, campaign_id: str, round: int
) -> Training | None:
    """``learner``'s latest training of a round before ``round`` that answers it and has weights.

    A training of another learner or recipe, a failed one and one without a checkpoint are
    passed over; of one round's trainings that answer, the last stored.
    """
    earlier = [
        t
        for t in lake.read(Training, campaign_id)
        if t.round < round and t.checkpoint_uri is not None and learner.answers(t)
    ]
    return max(reversed(earlier), key=lambda t: t.round, default=None)


def evaluate(
    lake: Lake,
    learner: Learner,
    training: Training,
    items: Sequence[DiagnosticItem],
    domain_name: str,
    verifications: Sequence[Verification] | None = None,
) -> Evaluation:
    """``learner``'s evaluation of ``training`` on ``items``, given what it reads; not stored.

    ``verifications``: the campaign's Verification table if the caller has read it already.
    """
    learner.preflight("evaluate")
    inputs = eval_inputs(lake, learner, training, items, domain_name, verifications)
    return learner.evaluate(training, items, inputs)


def training_data(
    lake: Lake,
    campaign_id: str,
    up_to: int | None = None,
    only: int | None = None,
    examples: bool = True,
    verifications: Sequence[Verification] | None = None,
    synth_tasks: Sequence[SynthTask] | None = None,
) -> TrainingData:
    """D_<=up_to (or the single round ``only``): passed verifications minus held-out tasks.

    With ``examples`` the verified trajectories and tasks are read too. ``verifications`` and
    ``synth_tasks``: the campaign's tables if the caller has read them already.
    """
    verified = verifications if verifications is not None else lake.read(Verification, campaign_id)
    if only is not None:
        verified = [v for v in verified if v.round == only]
    elif up_to is not None:
        verified = [v for v in verified if v.round <= up_to]
    scope = f"round {only}" if only is not None else f"rounds <= {up_to}" if up_to else "any round"
    ordered = sorted(verified, key=lambda v: (v.round, v.trajectory_id))
    kept, held = split_verified(ordered)
    trajectories: dict[str, Trajectory] = {}
    tasks: dict[str, SynthTask] = {}
    if examples:
        wanted = {v.trajectory_id for v in kept}
        trajectories = {
            t.trajectory_id: t
            for t in lake.read(Trajectory, campaign_id)
            if t.trajectory_id in wanted
        }
        needed = {v.task_id for v in kept}
        if synth_tasks is None:
            synth_tasks = lake.read(SynthTask, campaign_id)
        tasks = {t.task_id: t for t in synth_tasks if t.task_id in needed}
    return TrainingData(
        campaign_id=campaign_id,
        scope=scope,
        verified=kept,
        held_out=len(held),
        trajectories=trajectories,
        tasks=tasks,
    )


def evaluated_tasks(
    lake: Lake,
    campaign_id: str,
    domain_name: str,
    items: Sequence[DiagnosticItem],
    synth_tasks: Sequence[SynthTask] | None = None,
) -> dict[str, Task]:
    """The τ²-bench task of every item: ``official:<id>`` from the domain, others from the lake.

    ``synth_tasks``: the campaign's SynthTask table if the caller has read it already.
    """
    domain = get_domain(domain_name)
    official = {f"official:{t.id}": t for t in domain.tasks(DIAGNOSTIC_SPLIT)}
    official |= {f"official:{t.id}": t for t in domain.tasks()}
    wanted = {i.task_id for i in items} - set(official)
    if synth_tasks is None:
        synth_tasks = lake.read(SynthTask, campaign_id)
    synth = {t.task_id: t.task for t in synth_tasks if t.task_id in wanted}
    missing = wanted - set(synth)
    if missing:
        raise LookupError(f"tasks not found in the domain or the lake: {sorted(missing)[:5]}")
    return {i.task_id: official.get(i.task_id) or synth[i.task_id] for i in items}


def eval_inputs(
    lake: Lake,
    learner: Learner,
    training: Training,
    items: Sequence[DiagnosticItem],
    domain_name: str,
    verifications: Sequence[Verification] | None = None,
) -> EvalInputs:
    """What ``learner`` reads to evaluate ``training`` on ``items`` (its ``reads``).

    Each table is read once (``verifications`` not at all if given), however many reads need it.
    """
    cid = training.campaign_id
    reads = learner.reads
    synth = lake.read(SynthTask, cid) if "tasks" in reads or "examples" in reads else None
    tasks = evaluated_tasks(lake, cid, domain_name, items, synth) if "tasks" in reads else {}
    data = None
    if "examples" in reads:
        data = training_data(
            lake, cid, up_to=training.round, verifications=verifications, synth_tasks=synth
        )
    checkpoint = None
    if "checkpoint" in reads and training.checkpoint_uri is not None:
        checkpoint = local_checkpoint(lake, training.checkpoint_uri)
    return EvalInputs(tasks=tasks, data=data, checkpoint=checkpoint)


def upload_checkpoint(lake: Lake, trained: Trained, prefix: str) -> Training:
    """The training record, its checkpoint folder (if any) uploaded to ``prefix`` in the lake."""
    if trained.checkpoint is None:
        return trained.training
    uri = upload_dir(lake, trained.checkpoint, prefix)
    return trained.training.model_copy(update={"checkpoint_uri": uri})


def _s3_key(backend: S3Backend, key: str) -> str:
    return f"{backend.prefix}/{key}" if backend.prefix else key


def upload_dir(lake: Lake, local: Path, prefix: str) -> str:
    """Copy every file under ``local`` to ``prefix`` in the lake; the URI of the copy."""
    backend = lake.backend
    for path in sorted(p for p in local.rglob("*") if p.is_file()):
        key = f"{prefix}/{path.relative_to(local).as_posix()}"
        if isinstance(backend, S3Backend):
            # Streamed multipart upload: weight shards can exceed one PUT's 5 GB.
            backend.client.upload_file(str(path), backend.bucket, _s3_key(backend, key))
        else:
            backend.put(key, path.read_bytes())
    return f"{lake.root.rstrip('/')}/{prefix}"


def local_checkpoint(lake: Lake, uri: str) -> Path:
    """A local folder holding the checkpoint at ``uri`` (downloaded from S3 when needed)."""
    root = lake.root.rstrip("/")
    if not uri.startswith(root + "/"):
        return Path(uri)
    prefix = uri[len(root) + 1 :]
    backend = lake.backend
    target = backend.local_root() / prefix
    if isinstance(backend, S3Backend):
        full = _s3_key(backend, prefix) + "/"
        pages = backend.client.get_paginator("list_objects_v2")
        for page in pages.paginate(Bucket=backend.bucket, Prefix=full):
            for obj in page.get("Contents", []):
                path = target / obj["Key"][len(full) :]
                if path.exists() and path.stat().st_size == obj["Size"]:
                    continue
                path.parent.mkdir(parents=True, exist_ok=True)
                backend.client.download_file(backend.bucket, obj["Key"], str(path))
    return target
