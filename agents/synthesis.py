"""One batch of synthesis: blueprint -> task -> trajectory -> verdict, every outcome recorded."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pydantic import BaseModel, ConfigDict, Field

from evosyn.agents.generator import Generator, GeneratorRejection
from evosyn.agents.learner.simulated import difficulty_of
from evosyn.agents.teacher import Teacher
from evosyn.agents.verifier import Verifier
from evosyn.environments.features import iter_tool_calls
from evosyn.records import Blueprint, Rejection, SynthTask, Trajectory, Verification

# Rollouts retried after a failed verdict (the paper's Repair budget).
MAX_REPAIRS = 2


class SynthesisBatch(BaseModel):
    """What a batch of blueprints produced; every blueprint ends in exactly one place."""

    model_config = ConfigDict(extra="forbid")

    tasks: list[SynthTask] = Field(default_factory=list, description="Generated tasks.")
    trajectories: list[Trajectory] = Field(default_factory=list, description="Final rollouts.")
    verifications: list[Verification] = Field(default_factory=list, description="Verdicts.")
    rejections: list[Rejection] = Field(default_factory=list, description="Stopped requests.")

    @property
    def verified(self) -> list[Verification]:
        """Verdicts that passed."""
        return [v for v in self.verifications if v.passed]


def synthesize(
    blueprints: Sequence[Blueprint],
    generator: Generator,
    teacher: Teacher,
    verifier: Verifier,
    seed: int,
    contamination: Callable[[SynthTask], str | None] | None = None,
    progress: Callable[[int], None] | None = None,
) -> SynthesisBatch:
    """Run the Generator, the Teacher and the Verifier over ``blueprints``."""
    batch = SynthesisBatch()
    for blueprint in blueprints:
        _one(batch, blueprint, generator, teacher, verifier, seed, contamination)
        if progress is not None:
            progress(1)
    return batch


def _one(
    batch: SynthesisBatch,
    blueprint: Blueprint,
    generator: Generator,
    teacher: Teacher,
    verifier: Verifier,
    seed: int,
    contamination: Callable[[SynthTask], str | None] | None,
) -> None:
    where = {"campaign_id": blueprint.campaign_id, "round": blueprint.round}
    try:
        task = generator.generate(blueprint, seed)
    except GeneratorRejection as exc:
        batch.rejections.append(
            Rejection(
                **where, blueprint_id=blueprint.blueprint_id, stage="generate", reason=str(exc)
            )
        )
        return
    reason = contamination(task) if contamination else None
    if reason is not None:
        batch.rejections.append(
            Rejection(
                **where, blueprint_id=blueprint.blueprint_id, stage="contamination", reason=reason
            )
        )
        return
    batch.tasks.append(task)
    verdict: Verification | None = None
    for attempt in range(MAX_REPAIRS + 1):
        try:
            trajectory = teacher.rollout(task, seed, attempt=attempt)
        except Exception as exc:  # a teacher bug must not lose the rest of the batch
            batch.rejections.append(
                Rejection(
                    **where,
                    blueprint_id=blueprint.blueprint_id,
                    stage="rollout",
                    reason=str(exc).splitlines()[0][:300] or type(exc).__name__,
                    error_class=type(exc).__name__,
                )
            )
            return
        verdict = verifier.verify(
            task.task,
            trajectory.messages,
            campaign_id=blueprint.campaign_id,
            round=blueprint.round,
            trajectory_id=trajectory.trajectory_id,
        )
        calls = sum(1 for _ in iter_tool_calls(trajectory.messages))
        realized = verdict.realized | {"difficulty_profile": difficulty_of(calls)}
        verdict = verdict.model_copy(update={"repair_attempts": attempt, "realized": realized})
        if verdict.passed:
            break
    assert verdict is not None
    batch.trajectories.append(trajectory)
    batch.verifications.append(verdict)
    if not verdict.passed:
        batch.rejections.append(
            Rejection(
                **where,
                blueprint_id=blueprint.blueprint_id,
                stage="verify",
                reason="; ".join(verdict.reasons)[:500] or "reward below 1",
            )
        )


class Controllability(BaseModel):
    """How often a requested factor value was the realized one, over verified samples."""

    model_config = ConfigDict(extra="forbid")

    factor: str = Field(description="Factor name.")
    matched: int = Field(ge=0, description="Verified samples whose realized value was requested.")
    total: int = Field(ge=0, description="Verified samples that requested a value.")

    @property
    def rate(self) -> float:
        """Share matched (1.0 when nothing was requested)."""
        return self.matched / self.total if self.total else 1.0


def controllability(
    blueprints: Sequence[Blueprint], batch: SynthesisBatch
) -> list[Controllability]:
    """Requested vs realized values, per factor the realized features re-derive.

    Only single-valued factors with a realized counterpart of the same name count (task family,
    difficulty, write and read counts, ...); values come from the verified trajectories, never
    from the plan.
    """
    by_blueprint = {b.blueprint_id: b for b in blueprints}
    task_blueprint = {t.task_id: t.blueprint_id for t in batch.tasks}
    counts: dict[str, list[int]] = {}
    for verdict in batch.verified:
        blueprint = by_blueprint.get(task_blueprint.get(verdict.task_id, ""))
        if blueprint is None:
            continue
        for factor, values in blueprint.selections.items():
            if len(values) != 1 or factor not in verdict.realized:
                continue
            tally = counts.setdefault(factor, [0, 0])
            tally[0] += verdict.realized[factor] == values[0]
            tally[1] += 1
    return [Controllability(factor=f, matched=m, total=t) for f, (m, t) in sorted(counts.items())]
