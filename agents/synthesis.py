"""One batch of synthesis: blueprint -> task -> trajectory -> verdict, every outcome recorded."""

from __future__ import annotations

import contextlib
import contextvars
import functools
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from collections.abc import Generator as Steps
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field
from tau2.data_model.message import Message
from tau2.data_model.tasks import Task

from evosyn.agents.gateway.errors import BudgetExceeded
from evosyn.agents.generator import Generator, GeneratorRejection
from evosyn.agents.generator.base import Screen
from evosyn.agents.generator.contract import underivable
from evosyn.agents.teacher import UNACTED_CHALLENGE, UNACTED_PERSONA, Attempt, Teacher
from evosyn.agents.verifier import RealizeJudge, Verifier
from evosyn.buckets import difficulty_of
from evosyn.environments import information_flow, quality
from evosyn.environments.contamination import contamination_reason
from evosyn.environments.dedup import SeenTasks
from evosyn.environments.dialogue_acts import persona_kind, realized_challenges, realized_personas
from evosyn.environments.features import (
    SET_KEYS,
    UNDERIVABLE_PATTERNS,
    iter_tool_calls,
    realized_features,
)
from evosyn.environments.registry import domain_plugin, get_domain, list_domains
from evosyn.records import Blueprint, Rejection, SynthTask, Trajectory, Verification
from evosyn.space import seed_space

if TYPE_CHECKING:
    from evosyn.agents.synthesis_pool import ProcessSynthesis

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
    seen: SeenTasks | None = None,
    progress: Callable[[int], None] | None = None,
) -> SynthesisBatch:
    """Run the Generator over ``blueprints``, then the Teacher and the Verifier over the tasks.

    See :func:`generate` and :func:`roll_out`, which a round runs as separate steps.
    """
    made = generate(blueprints, generator, seed, seen, progress)
    rolled = roll_out(made.tasks, teacher, verifier, seed, progress)
    rolled.tasks = made.tasks
    rolled.rejections = made.rejections + rolled.rejections
    return rolled


def generate(
    blueprints: Sequence[Blueprint],
    generator: Generator,
    seed: int,
    seen: SeenTasks | None = None,
    progress: Callable[[int], None] | None = None,
    window: int = 1,
    processes: ProcessSynthesis | None = None,
) -> SynthesisBatch:
    """A task for each blueprint, or a rejection saying why there is none; in blueprint order.

    Every task, whichever Generator made it, is screened against the domain's official tasks
    (:func:`~evosyn.environments.contamination.contamination_reason`, stage
    ``contamination``) and against ``seen``, the tasks kept before it
    (:mod:`~evosyn.environments.dedup`, stage ``duplicate``; by default the tasks of this
    call); a kept task joins ``seen``. ``window`` blueprints are generated at once (threads:
    a model-backed Generator waits on calls), each seeing ``seen`` as the window found it and
    screened in order afterwards, so the result does not depend on timing (the first calls of
    the next :data:`WINDOWS_AHEAD` windows go out meanwhile: :func:`_windowed`). With
    ``processes`` (a programmatic Generator) the blueprints are generated on its worker
    processes and the result is the one ``generator`` gives here, one blueprint after the
    other (:meth:`~evosyn.agents.synthesis_pool.ProcessSynthesis.generated`).
    ``progress`` counts the blueprints that end here, rejected.
    """
    batch = SynthesisBatch()
    kept = KeptTasks(seen)
    if processes is None:
        # Closed on the way out, even on an error: windows ahead wait for the screening.
        with contextlib.closing(_windowed(blueprints, generator, seed, kept, window)) as outcomes:
            _screen_in_order(outcomes, kept, batch, progress)
    else:
        guessed = processes.generated(
            blueprints, seed, kept, functools.partial(_generated, generator, seed, kept)
        )
        _screen_in_order(guessed, kept, batch, progress)
    return batch


def _screen_in_order(
    outcomes: Iterator[tuple[Blueprint, Outcome]],
    kept: KeptTasks,
    batch: SynthesisBatch,
    progress: Callable[[int], None] | None,
) -> None:
    """Each outcome into ``batch``, in order: a kept task, or a rejection saying why not."""
    for blueprint, outcome in outcomes:
        stage: Literal["generate", "contamination", "duplicate"] = "generate"
        if isinstance(outcome, SynthTask):
            stage, reason = "contamination", contamination_reason(outcome)
            if reason is None:
                stage, reason = "duplicate", kept.reason(outcome.task)
            if reason is None:
                kept.add(outcome)
                batch.tasks.append(outcome)
                continue
        else:
            stage, reason = outcome.stage, str(outcome)
        batch.rejections.append(
            Rejection(
                campaign_id=blueprint.campaign_id,
                round=blueprint.round,
                blueprint_id=blueprint.blueprint_id,
                stage=stage,
                reason=reason,
            )
        )
        if progress is not None:
            progress(1)


class KeptTasks:
    """The tasks one :func:`generate` call keeps, in order, and the index that screens by them."""

    def __init__(self, seen: SeenTasks | None) -> None:
        #: Every task kept before (the caller's ``seen``), then this call's; None until one is.
        self.seen = seen
        #: This call's kept tasks, in the order they were kept.
        self.tasks: list[SynthTask] = []

    def screen(self) -> Screen | None:
        """The screen a Generator is given now: none while nothing is kept."""
        return self.seen.reason if self.seen else None

    def reason(self, task: Task) -> str | None:
        """Why ``task`` repeats a kept task, or None; what :meth:`screen` answers now."""
        return self.seen.reason(task) if self.seen else None

    def add(self, synth: SynthTask) -> None:
        """Keep ``synth``: later tasks repeating it are duplicates."""
        if self.seen is None:
            self.seen = SeenTasks(synth.domain)
        self.seen.add(synth.task)
        self.tasks.append(synth)


Outcome = SynthTask | GeneratorRejection
"""What the Generator made of one blueprint: a task, or why there is none."""


def _windowed(
    blueprints: Sequence[Blueprint], generator: Generator, seed: int, kept: KeptTasks, window: int
) -> Steps[tuple[Blueprint, Outcome]]:
    """Each blueprint's outcome, in order, ``window`` at a time on threads.

    A window is screened only once the one before it is consumed, so it sees what that one
    kept. A window of several blueprints (a model-backed Generator) starts while up to
    :data:`WINDOWS_AHEAD` windows before it are still out: its blueprints' first calls (which
    no screen shapes) overlap theirs, and each waits at its screen (:class:`_ScreenGate`)
    for the windows before it to be consumed.
    """
    if window > 1:
        yield from _ahead(blueprints, generator, seed, kept, window)
        return
    with ThreadPoolExecutor(max_workers=window) as pool:
        for start in range(0, len(blueprints), window):
            chunk = blueprints[start : start + window]
            made = list(pool.map(functools.partial(_generated, generator, seed, kept), chunk))
            yield from zip(chunk, made, strict=True)


#: Windows of blueprints whose first model calls go out while an earlier window is screened.
WINDOWS_AHEAD = 3


def _ahead(
    blueprints: Sequence[Blueprint], generator: Generator, seed: int, kept: KeptTasks, window: int
) -> Iterator[tuple[Blueprint, Outcome]]:
    """:func:`_windowed` with the next :data:`WINDOWS_AHEAD` windows started early."""
    starts = range(0, len(blueprints), window)
    gate = _ScreenGate(kept)
    pool = ThreadPoolExecutor(max_workers=window * (WINDOWS_AHEAD + 1))
    out: deque[tuple[Sequence[Blueprint], list[Future[Outcome]]]] = deque()

    def submit(index: int) -> None:
        chunk = blueprints[starts[index] : starts[index] + window]
        screen = functools.partial(gate.screen, index)
        out.append((chunk, [pool.submit(_screened, generator, seed, screen, b) for b in chunk]))

    try:
        for index in range(min(WINDOWS_AHEAD + 1, len(starts))):
            submit(index)
        for index in range(len(starts)):
            chunk, futures = out.popleft()
            yield from zip(chunk, [f.result() for f in futures], strict=True)
            gate.consumed(index)  # the caller has screened and kept this window's tasks
            if index + WINDOWS_AHEAD + 1 < len(starts):
                submit(index + WINDOWS_AHEAD + 1)
    finally:
        gate.close()
        pool.shutdown(wait=True, cancel_futures=True)


class _ScreenGate:
    """Each window's screen of :func:`_ahead`, once the windows before it are consumed."""

    def __init__(self, kept: KeptTasks) -> None:
        self.kept = kept
        self._consumed = -1  # the last window the caller consumed
        self._closed = False
        self._changed = threading.Condition()

    def consumed(self, index: int) -> None:
        """Window ``index``, and every one before it, is consumed."""
        with self._changed:
            self._consumed = index
            self._changed.notify_all()

    def close(self) -> None:
        """No window will be consumed any more: waiting screens let their tasks through."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def screen(self, index: int, task: Task) -> str | None:
        """Why window ``index``'s ``task`` repeats a kept task, as its window finds ``kept``.

        What :meth:`KeptTasks.screen` would say at the window's start, had it started once the
        window before it was consumed.
        """
        with self._changed:
            self._changed.wait_for(lambda: self._closed or self._consumed >= index - 1)
            if self._closed:
                return None  # the caller stopped: this outcome is never used
        # The caller keeps tasks only between windows, never while a window may read them.
        return self.kept.reason(task)


def _screened(
    generator: Generator, seed: int, screen: Screen | None, blueprint: Blueprint
) -> Outcome:
    """The Generator's task for ``blueprint`` through ``screen``, or why it made none."""
    try:
        return generator.generate(blueprint, seed, screen=screen)
    except GeneratorRejection as exc:
        return exc


def _generated(generator: Generator, seed: int, kept: KeptTasks, blueprint: Blueprint) -> Outcome:
    """The Generator's task for ``blueprint`` through ``kept``'s screen as it is now."""
    return _screened(generator, seed, kept.screen(), blueprint)


def roll_out(
    tasks: Sequence[SynthTask],
    teacher: Teacher,
    verifier: Verifier,
    seed: int,
    progress: Callable[[int], None] | None = None,
) -> SynthesisBatch:
    """Roll each task out, verify it, and Repair a failed rollout up to :data:`MAX_REPAIRS` times.

    The returned batch holds the trajectories, verdicts and rejections (no tasks: they are
    :func:`generate`'s).
    """
    batch = SynthesisBatch()
    for task in tasks:
        _roll_out_one(batch, task, teacher, verifier, seed)
        if progress is not None:
            progress(1)
    return batch


def roll_out_each(
    tasks: Sequence[SynthTask],
    teacher: Teacher,
    verifier: Verifier,
    seed: int,
    progress: Callable[[int], None] | None = None,
    tries: int = 1,
) -> SynthesisBatch:
    """:func:`roll_out` of each task alone; an error escaping it (a Verifier's) is retried.

    A task still raising after ``tries`` tries is a failed request: a rejection naming the
    error class (:func:`failed_request`), which a round does not store, so a resume retries it.

    Programmatic roles roll the tasks out one after another. With a teacher or a Verifier that
    calls a model (one with ``gateways``), the tasks' conversations run at once, on threads, as
    many in the process as :func:`conversation_slots` allows: a conversation is a chain of
    calls, each waiting on the model, so one after another they would keep a single request
    of the chunk in flight. Each task's outcome is its own (a rollout depends on its task and
    ``seed``, not on the others), and the batch lists them in task order, as one after another
    would.
    """
    one = functools.partial(
        _roll_out_tried,
        teacher=teacher,
        verifier=verifier,
        seed=seed,
        progress=progress,
        tries=tries,
    )
    slots = conversation_slots([teacher, verifier])
    if slots is None:
        outcomes: Iterable[SynthesisBatch] = map(one, tasks)
    else:

        def held(task: SynthTask) -> SynthesisBatch:
            with slots:
                return one(task)

        with ThreadPoolExecutor(max(1, len(tasks)), thread_name_prefix="rollout") as pool:
            # Each thread in a copy of the caller's context (a Prefect task run's, if any).
            futures = [pool.submit(contextvars.copy_context().run, held, t) for t in tasks]
            outcomes = [f.result() for f in futures]
    batch = SynthesisBatch()
    for one_batch in outcomes:
        batch.trajectories += one_batch.trajectories
        batch.verifications += one_batch.verifications
        batch.rejections += one_batch.rejections
    return batch


#: Conversations at once in a process, per request the model may have in flight (its gateways'
#: ``concurrency``): enough that every slot stays busy while some conversations are between
#: turns (the environment, the Verifier), and no more of them held in memory at once.
CONVERSATIONS_PER_SLOT = 2
_conversation_slots: dict[tuple[tuple[str, ...], int], threading.BoundedSemaphore] = {}
_conversation_slots_lock = threading.Lock()


def conversation_slots(roles: Iterable[object]) -> threading.BoundedSemaphore | None:
    """The process's bound on conversations at once for ``roles``; None: no role calls a model.

    One bound per set of models (and their ``concurrency``), shared by every chunk of a round
    that rolls out on them: :data:`CONVERSATIONS_PER_SLOT` × the highest ``concurrency`` of
    the roles' gateways. Conversations over the bound wait for one to end.
    """
    settings = [g.settings for role in roles for g in getattr(role, "gateways", ())]
    if not settings:
        return None
    limit = max(s.concurrency for s in settings)
    key = (tuple(sorted({s.model for s in settings})), limit)
    with _conversation_slots_lock:
        if key not in _conversation_slots:
            _conversation_slots[key] = threading.BoundedSemaphore(CONVERSATIONS_PER_SLOT * limit)
        return _conversation_slots[key]


def _roll_out_tried(
    task: SynthTask,
    teacher: Teacher,
    verifier: Verifier,
    seed: int,
    progress: Callable[[int], None] | None,
    tries: int,
) -> SynthesisBatch:
    for tries_left in reversed(range(tries)):
        try:
            return roll_out([task], teacher, verifier, seed, progress)
        except BudgetExceeded:
            raise
        except Exception as exc:
            if not tries_left:
                if progress is not None:
                    progress(1)
                return SynthesisBatch(rejections=[failed_request(task, "rollout", exc)])
    raise AssertionError("unreachable")  # pragma: no cover


def failed_request(
    where: SynthTask | Blueprint, stage: Literal["generate", "rollout"], exc: Exception
) -> Rejection:
    """The rejection of a request that raised ``exc``: its first line and error class."""
    return Rejection(
        campaign_id=where.campaign_id,
        round=where.round,
        blueprint_id=where.blueprint_id,
        stage=stage,
        reason=(str(exc).splitlines() or [""])[0][:300] or type(exc).__name__,
        error_class=type(exc).__name__,
    )


def _roll_out_one(
    batch: SynthesisBatch, task: SynthTask, teacher: Teacher, verifier: Verifier, seed: int
) -> None:
    """Roll out, verify and gate one task; a failed attempt, verdict or gate, is repaired."""
    where = {"campaign_id": task.campaign_id, "round": task.round}
    verdict: Verification | None = None
    previous: Attempt | None = None
    stage: Literal["verify", "gate", "realize"] = "verify"
    failed: list[str] = []  # every reason of each failed attempt, one line per attempt
    for attempt in range(MAX_REPAIRS + 1):
        try:
            trajectory = teacher.rollout(task, seed, attempt=attempt, previous=previous)
        except BudgetExceeded:
            # The campaign's spend cap stops the round; the task is not rejected but left for
            # a resume with a larger cap.
            raise
        except Exception as exc:  # a teacher bug must not lose the rest of the batch
            from evosyn.agents.teacher.llm import RolloutError

            # An error is no verdict: the rollout is tried once more, and one still failing is
            # a failed request (a rejection with its ``error_class``), which a round counts in
            # ``n_failed`` and does not store, so a resume retries it. A model turn that broke
            # τ²-bench's protocol is the model's output, the same on a retry: a rejection.
            error: Exception | None = exc
            if not isinstance(exc, RolloutError):
                try:
                    trajectory = teacher.rollout(task, seed, attempt=attempt, previous=previous)
                    error = None
                except BudgetExceeded:
                    raise
                except Exception as again:
                    error = again
            if error is not None:
                batch.rejections.append(
                    Rejection(
                        **where,
                        blueprint_id=task.blueprint_id,
                        stage="rollout",
                        reason=str(error).splitlines()[0][:300] or type(error).__name__,
                        error_class=type(error).__name__,
                    )
                )
                return
        verdict = verifier.verify(
            task.task,
            trajectory.messages,
            campaign_id=task.campaign_id,
            round=task.round,
            trajectory_id=trajectory.trajectory_id,
        )
        calls = sum(1 for _ in iter_tool_calls(trajectory.messages))
        offered = _challenge_values(task.domain)
        acted = realized_challenges(trajectory.messages, offered) if offered else set()
        family = {}
        if task.refused:
            # A refusal's family is that of the write it refused, which no tool call shows.
            refused = [w.name for w in task.refused]
            family = {
                "task_family": realized_features(
                    get_domain(task.domain), trajectory.messages, refused
                ).task_family
            }
        realized = (
            verdict.realized
            | family
            | {
                "difficulty_profile": difficulty_of(calls),
                "interaction_challenges": ";".join(sorted(acted)) or "none",
                "personas": ";".join(
                    sorted(realized_personas(trajectory.messages, task.task.user_scenario.persona))
                ),
            }
        )
        verdict = verdict.model_copy(
            update={"repair_attempts": attempt, "realized": realized, "repaired_from": failed}
        )
        stage = "verify"
        if verdict.passed:
            # Reward 1 is not enough to imitate: the gold agent acts only on what it saw, and
            # the dialogue realizes what was asked for. A gate's miss is repaired like a verdict;
            # both are reported at once, so that the agent and the user simulator each get
            # what they must correct in the same repair.
            verdict = _judged(task, trajectory, verdict, getattr(verifier, "realize_judge", None))
            breaks = gate_breaks(task.domain, trajectory.messages)
            missing = _unrealized(task, trajectory, verdict)
            if breaks or missing:
                stage = "gate" if breaks else "realize"
                reasons = [*verdict.reasons, *breaks, *missing]
                verdict = verdict.model_copy(update={"passed": False, "reasons": reasons})
        if verdict.passed:
            break
        failed = [*failed, "; ".join(verdict.reasons) or "reward below 1"]
        previous = Attempt(trajectory=trajectory, verification=verdict)
    assert verdict is not None
    batch.trajectories.append(trajectory)
    batch.verifications.append(verdict)
    if not verdict.passed:
        batch.rejections.append(
            Rejection(
                **where,
                blueprint_id=task.blueprint_id,
                stage=stage,
                reason="; ".join(verdict.reasons)[:500] or "reward below 1",
            )
        )


def gate_breaks(domain: str, messages: Sequence[Message]) -> list[str]:
    """The information-flow, procedure and hearing rules ``messages`` break in ``domain``.

    See :mod:`~evosyn.environments.information_flow`; a domain that declares no rules is
    still held to grounding.
    """
    rules = domain_plugin(domain).flow if domain in list_domains() else None
    return information_flow.gate_breaks(
        get_domain(domain), rules or information_flow.FlowRules(), messages
    )


def _labels(verdict: Verification, key: str) -> set[str]:
    """The realized labels ``verdict`` lists under ``key`` (``;``-joined; ``none``: none)."""
    return set(verdict.realized.get(key, "").split(";")) - {"", "none"}


def _judged(
    task: SynthTask, trajectory: Trajectory, verdict: Verification, judge: RealizeJudge | None
) -> Verification:
    """``verdict`` with what ``judge`` finds the user acted out counted as realized.

    The detectors go first (their precision is about 1): only a requested challenge or the
    requested persona kind they did not find is put to the judge, in one call. Without a judge
    or a miss, ``verdict`` is returned as it is. A judge's error (``LLMError``,
    ``OutputRejected``) propagates: a failed request of the rollout, not a rejection.
    """
    if judge is None:
        return verdict
    acted = _labels(verdict, "interaction_challenges")
    shown = _labels(verdict, "personas")
    challenges = [c for c in task.requested.get("interaction_challenge", []) if c not in acted]
    persona = persona_kind(task.task.user_scenario.persona)
    if persona in shown:
        persona = None
    if not challenges and persona is None:
        return verdict
    found = judge.judge(task.domain, trajectory.messages, challenges, persona)
    acted |= {v.item for v in found if v.kind == "challenge" and v.realized}
    shown |= {v.item for v in found if v.kind == "persona" and v.realized}
    realized = verdict.realized | {
        "interaction_challenges": ";".join(sorted(acted)) or "none",
        "personas": ";".join(sorted(shown)),
    }
    return verdict.model_copy(update={"realized": realized})


def _unrealized(task: SynthTask, trajectory: Trajectory, verdict: Verification) -> list[str]:
    """Why ``trajectory`` does not realize what ``task``'s blueprint requested (empty: it does).

    Checked here: every requested interaction challenge is acted out (the verdict's realized
    ``interaction_challenges``, per :mod:`~evosyn.environments.dialogue_acts`), so is the
    persona the task's user scenario asks for (realized ``personas``), and every expected
    answer is said in context (per :mod:`~evosyn.environments.quality`). The first two are the
    user simulator's to fix (:func:`~evosyn.agents.teacher.by_side`), the last the agent's.
    """
    reasons: list[str] = []
    wanted = task.requested.get("interaction_challenge", [])
    acted = verdict.realized.get("interaction_challenges", "").split(";")
    missing = sorted(set(wanted) - set(acted))
    if missing:
        reasons.append(f"{UNACTED_CHALLENGE}: {', '.join(missing)}")
    persona = persona_kind(task.task.user_scenario.persona)
    if persona is not None and persona not in verdict.realized.get("personas", "").split(";"):
        reasons.append(f"{UNACTED_PERSONA}: {persona}")
    loose = quality.out_of_context_answers(task.task, trajectory.messages)
    if loose:
        reasons.append(f"expected answers said out of context: {', '.join(loose)}")
    return reasons


class Controllability(BaseModel):
    """How often a requested factor value was the realized one, over verified samples."""

    model_config = ConfigDict(extra="forbid")

    factor: str = Field(description="Factor name.")
    matched: int = Field(ge=0, description="Verified samples whose realized value was requested.")
    total: int = Field(ge=0, description="Verified samples that requested a value.")
    underivable: int = Field(
        default=0,
        ge=0,
        description="Verified samples that requested a value the trajectory cannot show "
        "(left out of ``total``), e.g. the family of a refusal, which writes nothing.",
    )

    @property
    def rate(self) -> float:
        """Share matched (1.0 when nothing was requested)."""
        return self.matched / self.total if self.total else 1.0


#: Factors whose several selected values must all show, by the realized key listing them.


def _set_match(factor: str, values: Sequence[str], realized: dict[str, str]) -> bool | None:
    """Whether every derivable requested value shows; None when none of them is derivable."""
    wanted = set(values) - UNDERIVABLE_PATTERNS if factor == "tool_use_pattern" else set(values)
    if not wanted:
        return None
    return wanted <= set(realized[SET_KEYS[factor]].split(";"))


def controllability(
    blueprints: Sequence[Blueprint], batch: SynthesisBatch
) -> list[Controllability]:
    """Requested vs realized values, per factor the realized features re-derive.

    Single-valued factors with a realized counterpart of the same name count (task family,
    difficulty, write and read counts, computation, ...), and ``tool_use_pattern``, whose
    selected values must all be among the realized ``tool_use_patterns``; values come from the
    verified trajectories, never from the plan. Requests a trajectory cannot show (a refusal's
    family, a pattern that is only ``policy_check_before_action``) are counted apart as
    ``underivable``. ``policy_or_constraint_focus`` is not measured: which rule a task hinges
    on is the agent's reasoning, not something its tool calls show.
    """
    by_blueprint = {b.blueprint_id: b for b in blueprints}
    task_blueprint = {t.task_id: t.blueprint_id for t in batch.tasks}
    counts: dict[str, list[int]] = {}
    for verdict in batch.verified:
        blueprint = by_blueprint.get(task_blueprint.get(verdict.task_id, ""))
        if blueprint is None:
            continue
        outcome = blueprint.selections.get("expected_outcome", [])
        for factor, values in blueprint.selections.items():
            if factor in SET_KEYS and SET_KEYS[factor] in verdict.realized and values:
                match = _set_match(factor, values, verdict.realized)
            elif len(values) == 1 and factor in verdict.realized:
                hidden = underivable(factor, outcome, verdict.realized)
                match = None if hidden else verdict.realized[factor] == values[0]
            else:
                continue
            tally = counts.setdefault(factor, [0, 0, 0])
            if match is None:
                tally[2] += 1
                continue
            tally[0] += match
            tally[1] += 1
    return [
        Controllability(factor=f, matched=m, total=t, underivable=u)
        for f, (m, t, u) in sorted(counts.items())
    ]


@functools.cache
def _challenge_values(domain: str) -> tuple[str, ...]:
    """The interaction challenges ``domain``'s space offers: realized labels are its values.

    Domains name one act their own way (airline's ``ambiguous_preference`` is retail's
    ``ambiguous_request``); a dialogue is labelled with its own domain's name only.
    """
    return tuple(
        value
        for factor in seed_space(domain, "labels").factors
        if factor.name == "interaction_challenge"
        for value in factor.values
    )
