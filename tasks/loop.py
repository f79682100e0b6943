"""Prefect tasks of one round: each role over a batch, its output published to the lake.

Every task first looks for its output in the lake (deterministic batch keys), so a retried or
resumed run reuses finished work instead of redoing or duplicating it. Task runs are named by
role and round (``reflect-r2``, ``design-r2``, ...) so a Prefect UI shows where a campaign is.

Roles are built by name from the config and the ablations are role implementations
(:func:`~evosyn.agents.roles.build_roles`): these tasks call the roles they are given and
never branch on a backend or an ablation. The learner's tasks (train, evaluate) and the
feedback are in :mod:`evosyn.tasks.learning`.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, ParamSpec, TypeVar

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.exceptions import MissingContextError
from prefect.tasks import Task

from evosyn.agents.designer.strategies import FailureSource
from evosyn.agents.gateway import Gateway
from evosyn.agents.gateway.errors import BudgetExceeded, ModelUnreachable
from evosyn.agents.generator import Generator, GeneratorRejection
from evosyn.agents.generator.base import Screen
from evosyn.agents.planner import PartialPlanningError, PlanningError
from evosyn.agents.roles import Roles, build_roles, on_model
from evosyn.agents.synthesis import SynthesisBatch, failed_request, generate, roll_out_each
from evosyn.agents.synthesis_pool import CampaignRoles, ProcessSynthesis, synthesis_workers
from evosyn.config import CampaignConfig
from evosyn.environments.dedup import SeenTasks
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
    Trajectory,
    Verification,
)
from evosyn.storage import Lake, LakeError
from evosyn.tasks.lake_step import Calls, Ran, Rows, lake_step


def transient(_task: Any, _run: Any, state: Any) -> bool:
    """Retry only failures that can pass on a second try (storage and network hiccups)."""
    try:
        state.result()
    except (LakeError, ConnectionError, TimeoutError):
        return True
    except Exception:
        return False
    return False


P = ParamSpec("P")
R = TypeVar("R")


def role_task(name: str, run_name: str) -> Callable[[Callable[P, R]], Task[P, R]]:
    """A role's Prefect task: retried on transient errors only, runs named ``run_name``."""
    return task(
        name=name,
        task_run_name=run_name,
        retries=2,
        retry_delay_seconds=1,
        retry_condition_fn=transient,
        cache_policy=NO_CACHE,
    )


def lake_of(cfg: CampaignConfig) -> Lake:
    """The lake a config points at."""
    return Lake(cfg.lake.root, cfg.lake.s3_endpoint, cfg.lake.cache_dir)


def roles_for(cfg: CampaignConfig) -> Roles:
    """The roles of ``cfg``, built once per campaign in a process (domains are reused).

    A strategy steered by the learner's failures (``r_zero``) reads them from the lake here.
    """
    return _roles_from_json(cfg.model_dump_json())


# A few configs, not every one: an experiment runs campaign after campaign in one process, and
# each campaign's roles (with what their Generator and learner cached) would otherwise live on.
@functools.lru_cache(maxsize=2)
def _roles_from_json(config_json: str) -> Roles:
    cfg = CampaignConfig.model_validate_json(config_json)
    return build_roles(cfg, failures=_evaluations(cfg))


def _evaluations(cfg: CampaignConfig) -> FailureSource:
    lake: list[Lake] = []  # opened on first read, then reused

    def read(campaign_id: str, round: int) -> list[EvalResult]:
        if not lake:
            lake.append(lake_of(cfg))
        return lake[0].read(EvalResult, campaign_id, round)

    return read


STAGES = ("reflect", "design", "plan", "synthesize", "train", "evaluate", "feedback")
"""The role stages of a round, in order; :func:`progress_to` reports them."""
ProgressSink = Callable[[str, int, int], None]
"""Called with (stage, round, units done): blueprints for ``synthesize``, one for the others."""
_sinks: list[ProgressSink] = []
_sinks_lock = threading.Lock()


@contextmanager
def progress_to(sink: ProgressSink) -> Iterator[None]:
    """Report the stages of every round run in this process to ``sink`` while inside."""
    with _sinks_lock:
        _sinks.append(sink)
    try:
        yield
    finally:
        with _sinks_lock:
            _sinks.remove(sink)


def _progress(stage: str, round: int, units: int = 1) -> None:
    # Tasks run on the round's thread pool: sinks must be thread-safe (rich's Progress is).
    for sink in list(_sinks):
        sink(stage, round, units)


def report_stage(stage: str, round: int) -> None:
    """Tell the progress sinks that ``stage`` of ``round`` is done (when it ran elsewhere).

    Elsewhere: on a pool, or in a task of :mod:`evosyn.tasks.learning`.
    """
    _progress(stage, round)


def run_logger() -> logging.Logger | logging.LoggerAdapter[logging.Logger]:
    """The run's logger inside Prefect; this module's when a body is called directly (tests)."""
    try:
        return get_run_logger()
    except MissingContextError:
        return logging.getLogger(__name__)


@role_task("reflect", "reflect-r{round}")
def reflect(
    cfg: CampaignConfig, space: SynthesisSpace, feedback: Feedback, round: int
) -> SynthesisSpace:
    """The Reflector's decision after ``round - 1`` and the space ``round`` runs in."""
    nxt = _reflect(cfg, space, feedback, round)
    _progress("reflect", round)
    return nxt


def _reflect(
    cfg: CampaignConfig, space: SynthesisSpace, feedback: Feedback, round: int
) -> SynthesisSpace:
    roles = roles_for(cfg)
    lake = lake_of(cfg)
    cid = space.campaign_id

    def stored() -> SynthesisSpace | None:
        decided = lake.read(ReflectorDecision, cid, round - 1)
        if not decided:
            return None
        spaces = lake.read(SynthesisSpace, cid)
        return next(s for s in spaces if s.version == decided[0].next_space_version)

    def run() -> Ran[SynthesisSpace]:
        if roles.reflector is None:  # the space is kept (roles.space_kept says why)
            return Ran(space, marker=())
        decision, nxt = roles.reflector.reflect(space, feedback, round - 1)
        revised: list[Rows] = []
        if nxt.version != space.version:
            nxt = nxt.model_copy(update={"round": round})
            revised.append(([nxt], f"v{nxt.version}"))
        if decision.probe is not None:
            # The probe of an invented factor joins the reviewed round's probes: the round
            # table, the report and the next Designer read its figures there.
            revised.append(([decision.probe], "reflect"))
        return Ran(nxt, marker=[([decision], "decision")], rows=revised)

    # The decision belongs to the round it reviews, and so do its model calls.
    return lake_step(lake, stored, run, Calls(roles.gateways, cid, round - 1, "reflect"))


def decision_of(cfg: CampaignConfig, campaign_id: str, round: int) -> str:
    """In words, the decision that shaped ``round``'s space (the Reflector's after round - 1)."""
    if round == 1:
        return "cold start (seed space)"
    lake = lake_of(cfg)
    stored = lake.read(ReflectorDecision, campaign_id, round - 1)
    if stored:
        decision = stored[0]
        added = decision.new_factor.name if decision.new_factor is not None else None
        probe = next((p for p in lake.read(Probe, campaign_id, round - 1) if p.name == added), None)
        if probe is None:
            return decision.in_words()
        # The figures the Reflector acted on: the same probe row the report shows.
        return f"{decision.in_words()}; CMI {probe.cmi:.3f} nats, p={probe.p_value:.3f}"
    return f"space kept ({roles_for(cfg).space_kept or 'no Reflector'})"


@role_task("design", "design-r{round}")
def design(
    cfg: CampaignConfig, space: SynthesisSpace, feedback: Feedback | None, round: int
) -> GenerationPlan:
    """The round's generation plan (cold start without feedback)."""
    warm_synthesis(cfg)  # the workers start while the round designs and plans
    plan = _design(cfg, space, feedback, round)
    _progress("design", round)
    return plan


def _design(
    cfg: CampaignConfig, space: SynthesisSpace, feedback: Feedback | None, round: int
) -> GenerationPlan:
    roles = roles_for(cfg)
    lake = lake_of(cfg)
    budget = cfg.campaign.budget_per_round
    cid = space.campaign_id

    def stored() -> GenerationPlan | None:
        directions = lake.read(Direction, cid, round)
        if not directions:
            return None
        return GenerationPlan(
            campaign_id=cid, round=round, total_budget=budget, directions=directions
        )

    def run() -> Ran[GenerationPlan]:
        seen = None if feedback is None else with_reflected_probes(lake, feedback)
        plan = roles.designer.design(space, seen, cid, round, budget)
        return Ran(plan, marker=[(plan.directions, "plan")])

    return lake_step(lake, stored, run, Calls(roles.gateways, cid, round, "design"))


def with_reflected_probes(lake: Lake, feedback: Feedback) -> Feedback:
    """``feedback`` with the probes the Reflector stored for its round since it was computed.

    A factor the Reflector invents is probed when it reflects, after the feedback was made;
    the next round's Designer is shown that probe, as it is in a resumed round, whose feedback
    is read back from the lake.
    """
    known = {p.name for p in feedback.probes}
    later = [
        p for p in lake.read(Probe, feedback.campaign_id, feedback.round) if p.name not in known
    ]
    return feedback.model_copy(update={"probes": [*feedback.probes, *later]}) if later else feedback


def round_seed(cfg: CampaignConfig, round: int) -> int:
    """The seed of ``round``'s plan, tasks and rollouts: the campaign's seed plus the round."""
    return cfg.campaign.seed + round


@role_task("plan", "plan-r{plan.round}")
def plan_blueprints(
    cfg: CampaignConfig, space: SynthesisSpace, plan: GenerationPlan, seed: int | None = None
) -> list[Blueprint]:
    """Blueprints for every direction of the plan, drawn with ``seed`` (default: the round's)."""
    blueprints = _plan(cfg, space, plan, round_seed(cfg, plan.round) if seed is None else seed)
    _progress("plan", plan.round)
    return blueprints


def _plan(
    cfg: CampaignConfig, space: SynthesisSpace, plan: GenerationPlan, seed: int
) -> list[Blueprint]:
    roles = roles_for(cfg)
    lake = lake_of(cfg)

    def planned(d: Direction) -> list[Blueprint] | PlanningError:
        try:
            return roles.planner.plan(space, d, seed=seed)
        except PlanningError as exc:
            return exc

    def stored() -> list[Blueprint] | None:
        return lake.read(Blueprint, plan.campaign_id, plan.round) or None

    def run() -> Ran[list[Blueprint]]:
        ran = _run_plan(plan, planned)
        if not ran.output:
            unplanned = [r for rows, _ in ran.rows for r in rows if isinstance(r, Rejection)]
            _stop_if_unreachable("planner", unplanned, roles)
        return ran

    calls = Calls(roles.gateways, plan.campaign_id, plan.round, "plan")
    return lake_step(lake, stored, run, calls)


#: How a role words a rejection whose model call failed for good (after the gateway's tries).
MODEL_CALL_FAILED = "model call failed: "


def _stop_if_unreachable(role: str, rejections: Sequence[Rejection], roles: Roles) -> None:
    """Raise ModelUnreachable when every one of ``rejections`` is a failed call of ``role``.

    A step that produced nothing because its model never answered would otherwise store an
    empty round and let the campaign go on to the next one, ending with exit 0.
    """
    reasons = [r.reason for r in rejections]
    if not reasons or not all(reason.startswith(MODEL_CALL_FAILED) for reason in reasons):
        return
    endpoint = next((g.endpoint for g in roles.gateways if g.role == role), "its endpoint")
    raise ModelUnreachable(role, endpoint, reasons[0].removeprefix(MODEL_CALL_FAILED))


def _run_plan(
    plan: GenerationPlan, planned: Callable[[Direction], list[Blueprint] | PlanningError]
) -> Ran[list[Blueprint]]:
    blueprints: list[Blueprint] = []
    unplanned: list[Rejection] = []
    # Directions are independent: an LLM Planner's calls for all of them overlap.
    with ThreadPoolExecutor(max(1, len(plan.directions)), thread_name_prefix="plan") as pool:
        outcomes = list(pool.map(planned, plan.directions))
    for d, outcome in zip(plan.directions, outcomes, strict=True):
        if isinstance(outcome, PartialPlanningError):
            # Keep the direction's valid blueprints; each invalid one is its own rejection.
            blueprints += outcome.blueprints
            unplanned += [
                Rejection(
                    campaign_id=d.campaign_id,
                    round=d.round,
                    stage="plan",
                    blueprint_id=blueprint_id,
                    reason=reason,
                )
                for blueprint_id, reason in outcome.rejected.items()
            ]
        elif isinstance(outcome, PlanningError):
            # The direction's whole budget is accounted for, under the ids it would have had.
            unplanned += [
                Rejection(
                    campaign_id=d.campaign_id,
                    round=d.round,
                    stage="plan",
                    blueprint_id=f"{d.direction_id}-b{i:04d}",
                    reason=str(outcome),
                )
                for i in range(d.budget)
            ]
        else:
            blueprints += outcome
    return Ran(blueprints, marker=[(blueprints, "blueprints")], rows=[(unplanned, "plan")])


#: Rejection stages of the Generator step; the rest are the rollouts'.
GENERATION_STAGES = frozenset({"generate", "contamination", "duplicate"})
#: Tries of a request (a blueprint's generation, a task's rollout and verdict) that raises.
REQUEST_TRIES = 2
#: Errors that are verdicts on a model's output, the same on a retry: rejections, not failures.
VERDICT_ERRORS = frozenset({"RolloutError"})


def is_failure(rejection: Rejection) -> bool:
    """Whether ``rejection`` is a failed request: an error, not a verdict or a gate.

    A round counts failed requests in ``n_failed`` and never stores them, so a resume retries
    them; the rest are rejections with a reason.
    """
    return rejection.error_class is not None and rejection.error_class not in VERDICT_ERRORS


def _report_failures(step: str, rejections: Sequence[Rejection]) -> list[Rejection]:
    """The rejections ``step`` may store: its failed requests are logged and left out."""
    failed = [r for r in rejections if is_failure(r)]
    if failed:
        first = failed[0]
        run_logger().warning(
            "%s: %d request(s) failed with an error after %d tries and are not stored, so a "
            "resume retries them; the first: %s: %s",
            step,
            len(failed),
            REQUEST_TRIES,
            first.error_class,
            first.reason,
        )
    return [r for r in rejections if not is_failure(r)]


class _RetriedGenerator:
    """A Generator whose errors (not its rejections) are retried, then recorded as failures."""

    def __init__(self, inner: Generator) -> None:
        self.inner = inner
        self.failures: dict[str, Rejection] = {}
        self._lock = threading.Lock()

    def generate(self, blueprint: Blueprint, seed: int, screen: Screen | None = None) -> SynthTask:
        for tries_left in reversed(range(REQUEST_TRIES)):
            try:
                return self.inner.generate(blueprint, seed, screen=screen)
            except (GeneratorRejection, BudgetExceeded):
                raise
            except Exception as exc:
                if tries_left:
                    continue
                with self._lock:
                    self.failures[blueprint.blueprint_id] = failed_request(
                        blueprint, "generate", exc
                    )
                raise GeneratorRejection(f"failed: {type(exc).__name__}") from exc
        raise AssertionError("unreachable")  # pragma: no cover


def synthesis_processes(cfg: CampaignConfig) -> ProcessSynthesis | None:
    """The worker processes ``cfg``'s programmatic synthesis spreads over; None: this process.

    Model-backed roles stay on threads (their work is waiting on calls). The count is
    ``EVOSYN_SYNTH_WORKERS`` if set (:func:`~evosyn.agents.synthesis_pool.synthesis_workers`),
    else ``campaign.synthesis_workers``.
    """
    workers = synthesis_workers(cfg.campaign.synthesis_workers)
    if workers < 2 or {"generator", "teacher", "verifier"} & on_model(cfg):
        return None
    return ProcessSynthesis(CampaignRoles.of(cfg), workers)


def warm_synthesis(cfg: CampaignConfig) -> None:
    """Start ``cfg``'s synthesis worker processes, if it has any, without waiting for them.

    A round does so when it starts; a caller that knows sooner (a campaign starting) may too.
    """
    if (processes := synthesis_processes(cfg)) is not None:
        processes.warm(wait=False)


def kept_tasks(cfg: CampaignConfig, lake: Lake, campaign_id: str, round: int) -> SeenTasks:
    """The verified tasks a task of ``round`` must not repeat (``agents.generator.dedup``).

    ``campaign``: this campaign's earlier rounds. ``lake``: also every other campaign of the
    domain stored in the lake.
    """
    domain = cfg.campaign.domain
    everywhere = cfg.agents.generator.dedup == "lake"
    scope = None if everywhere else campaign_id
    passed = {v.task_id for v in lake.read(Verification, scope) if v.passed}
    seen = SeenTasks(domain)
    for kept in lake.read(SynthTask, scope):
        mine = kept.campaign_id == campaign_id
        if kept.domain == domain and kept.task_id in passed and (not mine or kept.round < round):
            seen.add(kept.task)
    return seen


def generation_window(generator: Generator) -> int:
    """Blueprints a model-backed Generator works on at once: its model's ``concurrency``.

    A window's blueprints are screened against the tasks of the windows before it, so each
    window ends with a wait for its repair turns: fewer, wider windows wait less, and a
    window as wide as the model's limit keeps every slot of it busy (issue #38's
    round_overhead: 32 blueprints at once on a 32-request server, the Generator's step
    16 -> 12 s of 100 blueprints).
    """
    own: Sequence[Gateway] = getattr(generator, "gateways", ())[:1]  # then its labeller's
    return max([1, *(g.settings.concurrency for g in own)])


@role_task("generate", "generate-r{blueprints[0].round}")
def generate_tasks(
    cfg: CampaignConfig, blueprints: list[Blueprint], seed: int | None = None
) -> SynthesisBatch:
    """Ground a round's blueprints into tasks, in order; publish the tasks and rejections.

    ``seed``: of the Generator's choices (default: the round's, :func:`round_seed`).

    One step for the whole round, so that no task repeats another kept in the round or
    before it (:func:`kept_tasks`), whichever rollout chunk it lands in.
    """
    roles = roles_for(cfg)
    lake = lake_of(cfg)
    cid, rnd = blueprints[0].campaign_id, blueprints[0].round
    seed = round_seed(cfg, rnd) if seed is None else seed
    ids = {b.blueprint_id for b in blueprints}

    def stored() -> SynthesisBatch | None:
        found = SynthesisBatch(
            tasks=[t for t in lake.read(SynthTask, cid, rnd) if t.blueprint_id in ids],
            rejections=[
                r
                for r in lake.read(Rejection, cid, rnd)
                if r.blueprint_id in ids and r.stage in GENERATION_STAGES
            ],
        )
        # Done when every blueprint has a task or a rejection.
        ended = {t.blueprint_id for t in found.tasks} | {r.blueprint_id for r in found.rejections}
        if ended != ids:
            return None
        _progress("synthesize", rnd, len(found.rejections))
        return found

    def run() -> Ran[SynthesisBatch]:
        generator = _RetriedGenerator(roles.generator)
        out = generate(
            blueprints,
            generator,
            seed=seed,
            seen=kept_tasks(cfg, lake, cid, rnd),
            progress=lambda k: _progress("synthesize", rnd, k),
            window=generation_window(roles.generator) if "generator" in on_model(cfg) else 1,
            processes=synthesis_processes(cfg),
        )
        # A blueprint whose Generator raised is a failed request, not a `generate` rejection.
        out.rejections = [generator.failures.get(r.blueprint_id, r) for r in out.rejections]
        kept = _report_failures(f"generate-r{rnd}", out.rejections)
        if not out.tasks:
            _stop_if_unreachable("generator", out.rejections, roles)
        return Ran(out, marker=[(out.tasks, "generate"), (kept, "generate")])

    return lake_step(lake, stored, run, Calls(roles.gateways, cid, rnd, "generate"))


@role_task("synthesize", "synthesize-r{tasks[0].round}-{batch}")
def synthesize_batch(
    cfg: CampaignConfig, tasks: list[SynthTask], batch: str, seed: int | None = None
) -> SynthesisBatch:
    """Roll out and verify one chunk of a round's tasks; publish trajectories and verdicts.

    ``seed``: of the rollouts (default: the round's, :func:`round_seed`).
    """
    roles = roles_for(cfg)
    lake = lake_of(cfg)
    cid, rnd = tasks[0].campaign_id, tasks[0].round
    seed = round_seed(cfg, rnd) if seed is None else seed
    task_ids = {t.task_id for t in tasks}
    ids = {t.blueprint_id for t in tasks}

    def stored() -> SynthesisBatch | None:
        found = SynthesisBatch(
            rejections=[
                r
                for r in lake.read(Rejection, cid, rnd)
                if r.blueprint_id in ids and r.stage not in GENERATION_STAGES
            ],
            trajectories=[t for t in lake.read(Trajectory, cid, rnd) if t.task_id in task_ids],
            verifications=[v for v in lake.read(Verification, cid, rnd) if v.task_id in task_ids],
        )
        # Done when every task ended in a passed verdict or a rejection.
        passed_tasks = {v.task_id for v in found.verified}
        ended = {r.blueprint_id for r in found.rejections} | {
            t.blueprint_id for t in tasks if t.task_id in passed_tasks
        }
        if ended != ids:
            return None
        _progress("synthesize", rnd, len(tasks))
        return found

    def run() -> Ran[SynthesisBatch]:
        progress = functools.partial(_progress, "synthesize", rnd)
        # Under Ray the chunks already run in processes of their own, one core each.
        processes = synthesis_processes(cfg) if cfg.campaign.task_runner == "thread" else None
        if processes is not None:
            out = processes.roll_out(tasks, seed, REQUEST_TRIES, progress)
        else:
            out = roll_out_each(tasks, roles.teacher, roles.verifier, seed, progress, REQUEST_TRIES)
        kept = _report_failures(f"synthesize-r{rnd}-{batch}", out.rejections)
        return Ran(
            out,
            marker=[(out.trajectories, batch), (out.verifications, batch), (kept, batch)],
        )

    calls = Calls(roles.gateways, cid, rnd, f"synthesize-{batch}")
    return lake_step(lake, stored, run, calls)
