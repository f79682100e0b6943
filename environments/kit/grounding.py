"""Domain-neutral pieces of the programmatic Generators: requests, drafts, the loop.

Every programmatic Generator (one per registered domain) reads the blueprint's requested
values the same way (:class:`Request`), builds a :class:`Draft` of gold steps (:class:`Step`),
counts its tool calls against the same ranges (:func:`count_misses`, with the buckets of
:mod:`evosyn.buckets`), and assembles and screens the task the same way; the
:class:`GroundedGenerator` base holds the candidate loop and that assembly, so that all
domains honour ``num_write`` / ``num_read`` / ``difficulty_profile`` and contamination
identically.
"""

from __future__ import annotations

import abc
import functools
import random
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Generic, Literal, TypeVar

from tau2.data_model.message import ToolCall
from tau2.data_model.tasks import (
    Action,
    Description,
    EnvAssertion,
    EnvFunctionCall,
    EvaluationCriteria,
    InitialState,
    RewardType,
    StructuredUserInstructions,
    Task,
    UserScenario,
)
from tau2.domains.airline.data_model import PaymentMethod as AirlinePaymentMethod
from tau2.domains.retail.data_model import PaymentMethod as RetailPaymentMethod
from tau2.environment.db import DB

from evosyn.buckets import BUCKETS, DIFFICULTY_CALLS, bucket, in_bucket
from evosyn.environments import quality
from evosyn.environments.base import FunctionalSymbol, Requestor, Tau2Domain
from evosyn.environments.contamination import Signature, official_index, signature
from evosyn.environments.cow import detached
from evosyn.environments.feasibility import first
from evosyn.environments.kit import phrasing
from evosyn.environments.kit.screen import GeneratorRejection, Screen
from evosyn.environments.registry import get_domain
from evosyn.records import Answer, Blueprint, Factor, SynthTask

#: Candidates tried before a blueprint is given up.
MAX_CANDIDATES = 8

REALIZABLE: dict[str, Factor] = {
    "num_write": Factor(
        name="num_write",
        values=list(BUCKETS),
        guidance="Number of state-changing (write) tool calls the gold trajectory makes.",
    ),
    "num_read": Factor(
        name="num_read",
        values=list(BUCKETS),
        guidance="Number of information-gathering (read) tool calls the gold trajectory makes.",
    ),
    "computation": Factor(
        name="computation",
        values=["none", "aggregate", "constrained_opt", "conditional"],
        guidance="What the agent must compute before acting: nothing, a sum or difference, an "
        "optimal choice under constraints, or an action that depends on a computed condition.",
    ),
}
"""Factors beyond the seed ontologies a kit-built Generator honours as hard requests, by name."""


def amount(value: float) -> str:
    """An amount as an expected answer: positive, no trailing zeros, at least 3 characters.

    τ²-bench matches answers as substrings with commas removed: "40" matches "$40" and a
    ``calculate`` result "40.0", while "40.0" misses "$40"; "-7.44" misses a refund of "$7.44";
    "8" is in any message with a date, so short amounts carry their "$".
    """
    value = abs(round(float(value), 2))
    text = str(int(value)) if value.is_integer() else f"{value:.2f}".rstrip("0")
    return text if len(text) > 2 else f"${text}"


def money(value: float, topic: str) -> Answer:
    """An amount the agent must tell, answering ``topic`` ("the total bag fee")."""
    return Answer(value=amount(value), topic=topic, phrase=phrasing.money(abs(value)))


def robust(answers: Sequence[Answer]) -> list[Answer]:
    """``answers`` without repeats and without values a wrong reply could satisfy ("$8").

    Such a value is better left unchecked than checked badly.
    """
    kept = {a.value: a for a in answers if not quality.is_brittle(a.value)}
    return list(kept.values())


SavedMethod = AirlinePaymentMethod | RetailPaymentMethod
"""A payment method saved in a τ²-bench user's profile."""


def payment_text(method: SavedMethod, methods: Sequence[SavedMethod]) -> str:
    """A saved payment method as a user names it: "the Visa credit card ending in 7334".

    Users describe their cards and balances; the ids are the agent's to look up (official
    tasks hand an id over in 1 of 164 instructions).
    """
    if method.source == "credit_card":
        return f"the {method.brand.title()} credit card ending in {method.last_four}"
    kind = {"paypal": "PayPal account"}.get(method.source, method.source.replace("_", " "))
    if sum(m.source == method.source for m in methods) == 1:
        return f"your {kind}"
    balance = float(getattr(method, "balance", None) or getattr(method, "amount", 0) or 0)
    return f"the {kind} with a balance of ${amount(balance).lstrip('$')}"


def single(blueprint: Blueprint, factor: str) -> str:
    """The one value ``blueprint`` selects for ``factor``; GeneratorRejection otherwise."""
    values = blueprint.selections.get(factor, [])
    if len(values) != 1:
        raise GeneratorRejection(f"{factor} needs exactly one value, got {values}")
    return values[0]


def control(blueprint: Blueprint, name: str) -> str | None:
    """The requested value of a control factor (difficulty controls first), or None."""
    if name in blueprint.difficulty_controls:
        return str(blueprint.difficulty_controls[name])
    values = blueprint.selections.get(name)
    return values[0] if values else None


#: Challenges the user acts out on the agent's proposal of the task's write (the user side
#: names another value first, then changes: ``acting.change_line``): a change of mind, or a
#: condition named only then.
PROPOSAL_CHALLENGES = ("constraint_hidden_until_late", "preference_change")


def proposal_conflict(
    selections: Mapping[str, Sequence[str]], unvaried: Collection[str] = ()
) -> str | None:
    """Why a requested proposal challenge can get no occasion, or None (a Planner rule).

    A change of mind or a late condition answers the agent's proposal of a write, on the one
    detail a user leaves open (a payment method, or a domain's own such as a refuel amount).
    A refusal or a task without writes proposes nothing; a family in ``unvaried`` leaves the
    user no such detail.
    """
    wanted = [
        c for c in PROPOSAL_CHALLENGES if c in (selections.get("interaction_challenge") or [])
    ]
    if not wanted:
        return None
    family = first(selections, "task_family") or ""
    if len(wanted) > 1:
        why = "the user answers the one proposal either way, not both"
    elif first(selections, "expected_outcome") == "refuse":
        why = "a refusal proposes no write"
    elif first(selections, "num_write") == "0":
        why = "num_write=0 proposes no write"
    elif family in unvaried:
        why = f"{family} leaves the user nothing to choose otherwise"
    else:
        return None
    return f"interaction_challenge={', '.join(wanted)} answers a proposal, but {why}"


def requested_family(blueprint: Blueprint, families: Sequence[str], what: str) -> tuple[str, str]:
    """The blueprint's one (family, outcome); GeneratorRejection if either is unknown.

    ``what`` names the domain's families in the message ("an airline family").
    """
    family = single(blueprint, "task_family")
    outcome = single(blueprint, "expected_outcome")
    if family not in families:
        raise GeneratorRejection(f"task_family {family!r} is not {what}")
    if outcome not in ("fulfill", "refuse"):
        raise GeneratorRejection(f"expected_outcome {outcome!r} is unknown")
    return family, outcome


def with_controls(
    selections: Mapping[str, Sequence[str]], controls: Mapping[str, str | None]
) -> dict[str, Sequence[str]]:
    """``selections`` with every requested control value (None: not requested) as a selection."""
    return {**selections, **{k: [v] for k, v in controls.items() if v is not None}}


@dataclass(frozen=True)
class CountMiss:
    """A requested count that a task's gold tool calls miss."""

    #: ``num_read``, ``num_write`` or ``difficulty_profile``.
    factor: str
    #: The requested value (a bucket, or a difficulty profile).
    wanted: str
    #: The calls counted: reads, writes, or all tool calls for a difficulty profile.
    count: int


def count_misses(blueprint: Blueprint, *, reads: int, writes: int, calls: int) -> list[CountMiss]:
    """Every requested count the gold tool calls miss, in the order read, write, difficulty.

    The one count check: the programmatic Generators reject a candidate on the first miss
    (:func:`check_counts`), the LLM roles' contract names them all. A value requested as a
    difficulty control counts first (:func:`control`); a value that is no bucket (``in_bucket``)
    or no difficulty profile cannot be counted against, so it is no miss.

    Args:
        blueprint: The blueprint whose ``num_read`` / ``num_write`` / ``difficulty_profile``
            the calls must meet.
        reads: The gold read calls.
        writes: The gold write calls.
        calls: All gold tool calls.
    """
    misses = []
    for name, count in (("num_read", reads), ("num_write", writes)):
        wanted = control(blueprint, name)
        if wanted is not None and in_bucket(count, wanted) is False:
            misses.append(CountMiss(name, wanted, count))
    difficulty = control(blueprint, "difficulty_profile")
    if difficulty in DIFFICULTY_CALLS:
        lo, hi = DIFFICULTY_CALLS[difficulty]
        if not lo <= calls <= hi:
            misses.append(CountMiss("difficulty_profile", difficulty, calls))
    return misses


def check_counts(symbols: Sequence[FunctionalSymbol], blueprint: Blueprint) -> None:
    """Reject (never substitute) gold calls whose counts miss the blueprint's request.

    Args:
        symbols: The functional symbol of every gold tool call, in order.
        blueprint: The blueprint whose ``num_read`` / ``num_write`` / ``difficulty_profile``
            the calls must meet (:func:`count_misses`); the first miss is the reason.
    """
    misses = count_misses(
        blueprint,
        reads=symbols.count(FunctionalSymbol.READ),
        writes=symbols.count(FunctionalSymbol.WRITE),
        calls=len(symbols),
    )
    if not misses:
        return
    miss = misses[0]
    if miss.factor == "difficulty_profile":
        raise GeneratorRejection(
            f"difficulty_profile={miss.wanted} was not met: {miss.count} tool calls"
        )
    raise GeneratorRejection(
        f"{miss.factor}={miss.wanted} was not met: the task has {bucket(miss.count)}"
    )


def scenario_instructions(
    instructions: Sequence[str],
    challenges: Sequence[str],
    options: Mapping[str, Sequence[str]],
    rng: random.Random,
) -> list[str]:
    """The user's instructions followed by one seeded wording of each selected challenge."""
    out = list(instructions)
    for challenge in challenges:
        choices = options.get(challenge)
        if choices:
            out.append(rng.choice(choices))
    return out


class Unfit(Exception):
    """A candidate that cannot meet the requested counts; another caller might."""


#: The control factors a Generator reads (difficulty controls first, then selections).
CONTROLS = ("num_write", "num_read", "computation", "difficulty_profile")


@dataclass(kw_only=True)
class Request:
    """What a blueprint asks for, in the terms every programmatic Generator shares.

    A domain's request subclasses it with what it derives (write counts, a form, ...).
    """

    blueprint: Blueprint
    seed: int
    family: str
    outcome: str
    #: The requested value of each of :data:`CONTROLS` (None: not requested).
    controls: dict[str, str | None]
    focus: list[str]
    patterns: frozenset[str]
    challenges: list[str]
    #: The seeded stream of every choice the Generator makes for the blueprint.
    rng: random.Random
    #: Entities earlier candidates were built on (a caller, a line), kept off the next ones.
    excluded: set[str] = field(default_factory=set)

    @staticmethod
    def read(
        blueprint: Blueprint,
        seed: int,
        families: Sequence[str],
        what: str,
        rule: Callable[[Mapping[str, Sequence[str]]], str | None],
        checked: Sequence[str] = ("num_write", "num_read"),
    ) -> Request:
        """The blueprint's request; GeneratorRejection if ``rule`` finds it infeasible.

        Args:
            blueprint: The blueprint.
            seed: Seed of the Generator's choices.
            families: The domain's task families.
            what: The domain's families in a message ("an airline family").
            rule: The domain's ``infeasible``.
            checked: The controls ``rule`` sees as selections.
        """
        family, outcome = requested_family(blueprint, families, what)
        controls = {name: control(blueprint, name) for name in CONTROLS}
        static = rule(with_controls(blueprint.selections, {k: controls[k] for k in checked}))
        if static is not None:
            raise GeneratorRejection(static)
        selections = blueprint.selections
        return Request(
            blueprint=blueprint,
            seed=seed,
            family=family,
            outcome=outcome,
            controls=controls,
            focus=list(selections.get("policy_or_constraint_focus", [])),
            patterns=frozenset(selections.get("tool_use_pattern", [])),
            challenges=list(selections.get("interaction_challenge", [])),
            rng=phrasing.seeded(seed, blueprint.blueprint_id, "generate"),
        )

    @property
    def read_bucket(self) -> str | None:
        """The requested ``num_read`` bucket, or None."""
        return self.controls["num_read"]

    @property
    def difficulty(self) -> str | None:
        """The requested ``difficulty_profile``, or None."""
        return self.controls["difficulty_profile"]

    def shared(self) -> dict[str, Any]:
        """The fields every request has, by name: a domain's request is built on them."""
        return {f.name: getattr(self, f.name) for f in fields(Request)}


@dataclass
class Step:
    """A gold tool call under construction."""

    name: str
    arguments: dict[str, Any]
    requestor: Requestor = "assistant"
    #: What the call is for, in words (the action's ``info``).
    info: str | None = None
    #: What the user says when the conversation reaches the call (its ``SynthTask.cues``).
    cue: str | None = None
    #: The arguments τ²-bench compares with the agent's call (None: every one; []: the name
    #: only, as for a hand-over summary the agent writes in its own words).
    compare_args: list[str] | None = None


@dataclass(kw_only=True)
class Draft:
    """A task under construction: what the user asks and knows, what the agent must do.

    A domain's draft subclasses it with its entities (the caller, a line) and bookkeeping.
    """

    reason: str
    purpose: str
    instructions: list[str] = field(default_factory=list)
    known: list[str] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    communicate: list[Answer] = field(default_factory=list)
    nl_assertions: list[str] = field(default_factory=list)
    #: The outcome in words (the task's notes): why a refusal, what the user now has.
    note: str = ""
    init: list[EnvFunctionCall] = field(default_factory=list)
    #: The writes the user asks for that the policy forbids (a refusal: ``SynthTask.refused``).
    refused: list[Step] = field(default_factory=list)


DraftT = TypeVar("DraftT", bound=Draft)
RequestT = TypeVar("RequestT", bound=Request)
DBT = TypeVar("DBT", bound=DB)


class GroundedGenerator(abc.ABC, Generic[DraftT, RequestT, DBT]):
    """A programmatic Generator on one τ²-bench domain's unmodified database.

    Holds what every domain does alike: the domain and its official-task index, the
    contamination check against it, and the candidate loop of :meth:`generate`. The domain
    supplies how a blueprint reads as a request, how a candidate is built, padded with
    look-ups and assembled into a task, and what a rejected candidate excludes next.

    Args:
        domain: The domain (default: the shared instance of :attr:`domain_name`).
    """

    name = "programmatic"
    #: Candidates :meth:`generate` tries before it gives up (a domain whose tasks are few per
    #: request may try more).
    max_candidates: ClassVar[int] = MAX_CANDIDATES
    #: The τ²-bench domain this Generator grounds tasks in.
    domain_name: ClassVar[str]
    #: The domain's database model.
    database: type[DBT]

    def __init__(self, domain: Tau2Domain | None = None) -> None:
        self.domain = domain or get_domain(self.domain_name)
        if self.domain.name != self.domain_name:
            raise ValueError(
                f"{type(self).__name__} needs the {self.domain_name} domain, not {self.domain.name}"
            )
        #: Candidates skipped so far: they duplicated an official or an already kept task.
        self.skips = 0

    @functools.cached_property
    def db(self) -> DBT:
        """The unmodified database, its keyed tables plain dicts of the parsed records.

        The Generator only reads, so it needs none of the copy-on-write bookkeeping a replay
        view does on every access, nor copies of the records: they are the parsed base's own,
        shared with every replay view, and must never be changed.

        Raises:
            TypeError: If the domain's database is not a :attr:`database`.
        """
        return detached(self.domain.blank_state().db_of(self.database))

    # ---------------------------------------------------------------- contamination

    def signature(self, task: Task) -> Signature:
        """Decisive tool sequence and entity set of a task's gold actions."""
        return signature(self.domain, task)

    def contamination_reason(self, task: Task | SynthTask) -> str | None:
        """Why ``task`` overlaps an official task of the domain (see ``contamination``)."""
        return official_index(self.domain_name).reason(
            task.task if isinstance(task, SynthTask) else task
        )

    # ---------------------------------------------------------------- the protocol

    def generate(self, blueprint: Blueprint, seed: int, screen: Screen | None = None) -> SynthTask:
        """A new task for ``blueprint``; deterministic in (blueprint, seed, ``screen``).

        A candidate that overlaps an official task or that ``screen`` stops (it repeats a
        kept task) is skipped for one on other entities.

        Raises:
            GeneratorRejection: If the database or policy cannot realize the blueprint, or
                every candidate was skipped.
        """
        request = self._request(blueprint, seed)
        last = ""
        unfit = 0
        for _ in range(self.max_candidates):
            draft = self._build(request)
            try:
                self._pad_reads(draft, request)
            except Unfit as exc:
                # Another caller may have more to look up; the reason stays if none has.
                last = str(exc)
                unfit += 1
                self._retry_unfit(draft, request)
                continue
            check_counts(self._symbols(draft), blueprint)
            task = self._assemble(draft, request)
            stage: Literal["contamination", "duplicate"] = "contamination"
            reason = self.contamination_reason(task)
            if reason is None and screen is not None:
                stage, reason = "duplicate", screen(task)
            if reason is None:
                return SynthTask(
                    campaign_id=blueprint.campaign_id,
                    round=blueprint.round,
                    task_id=task.id,
                    blueprint_id=blueprint.blueprint_id,
                    domain=self.domain_name,
                    task=task,
                    requested={k: list(v) for k, v in blueprint.selections.items()},
                    generator=self.name,
                    answers=self._answers(draft),
                    cues=self._cues(draft, request, task),
                    refused=[
                        ToolCall(name=step.name, arguments=step.arguments, requestor=step.requestor)
                        for step in draft.refused
                    ],
                )
            last = reason
            self.skips += 1
            self._exclude(draft, request)
        if unfit:
            raise GeneratorRejection(f"no candidate fits the requested counts ({last})")
        raise GeneratorRejection(
            f"every candidate repeats an official or an already kept task ({last})", stage
        )

    # ---------------------------------------------------------------- the domain's part

    @abc.abstractmethod
    def _request(self, blueprint: Blueprint, seed: int) -> RequestT:
        """What ``blueprint`` asks for, in the domain's terms; GeneratorRejection if unmeetable."""

    @abc.abstractmethod
    def _build(self, request: RequestT) -> DraftT:
        """A candidate task for ``request`` on entities not excluded yet."""

    @abc.abstractmethod
    def _pad_reads(self, draft: DraftT, request: RequestT) -> None:
        """Add look-ups until the counts meet the request; :class:`Unfit` if this one cannot."""

    def _gold(self, draft: DraftT) -> list[Step]:
        """Every gold tool call of ``draft``, in order."""
        return draft.steps

    def _symbol(self, step: Step) -> FunctionalSymbol:
        """The functional symbol of ``step``'s tool, for its requestor."""
        return self.domain.symbol(step.name, step.requestor)

    def _symbols(self, draft: DraftT) -> list[FunctionalSymbol]:
        """The functional symbol of every gold tool call of ``draft``, in order."""
        return [self._symbol(s) for s in self._gold(draft)]

    def _is_read(self, step: Step) -> bool:
        """Whether ``step`` is a read (an information-gathering call)."""
        return self._symbol(step) == FunctionalSymbol.READ

    def _reads(self, draft: DraftT) -> int:
        """The gold read calls of ``draft``: what ``num_read`` counts."""
        return self._symbols(draft).count(FunctionalSymbol.READ)

    @abc.abstractmethod
    def _assemble(self, draft: DraftT, request: RequestT) -> Task:
        """The τ²-bench task of ``draft``."""

    def _answers(self, draft: DraftT) -> list[Answer]:
        """What the agent must tell the user in ``draft``, each with the question it answers."""
        return robust(draft.communicate)

    def _cues(self, draft: DraftT, request: RequestT, task: Task) -> dict[str, str]:
        """What the user says at ``task``'s gold actions, by action id: each step's cue.

        A domain whose assembly rewords the scenario rewords the cues alike.
        """
        criteria = task.evaluation_criteria
        actions = (criteria.actions if criteria else None) or []
        steps = self._gold(draft)
        return {a.action_id: s.cue for a, s in zip(actions, steps, strict=True) if s.cue}

    @abc.abstractmethod
    def _exclude(self, draft: DraftT, request: RequestT) -> None:
        """Keep the next candidates off the entity ``draft`` was built on."""

    def _retry_unfit(self, draft: DraftT, request: RequestT) -> None:
        """Prepare the next candidate after ``draft`` could not meet the counts."""
        self._exclude(draft, request)

    # ---------------------------------------------------------------- assembly

    @staticmethod
    def _scene(
        request: RequestT,
        instructions: Sequence[str],
        options: Mapping[str, Sequence[str]],
        *closing: str,
    ) -> tuple[random.Random, list[str]]:
        """The scenario's seeded wording and the user's instructions.

        The instructions are ``instructions``, one seeded wording (from ``options``) of each
        selected interaction challenge, the ``closing`` lines, and the end of the call.
        """
        rng = phrasing.seeded(request.seed, request.blueprint.blueprint_id, "scenario")
        out = scenario_instructions(instructions, request.challenges, options, rng)
        out += [*closing, "Once the request is handled, end the conversation."]
        return rng, out

    def _task(
        self,
        draft: DraftT,
        request: RequestT,
        *,
        persona: str,
        instructions: Sequence[str],
        reward_basis: Sequence[RewardType] = (RewardType.DB, RewardType.COMMUNICATE),
        reason: str | None = None,
        known: Sequence[str] | None = None,
        unknown: str | None = None,
        infos: Sequence[str | None] | None = None,
        env_assertions: Sequence[EnvAssertion] = (),
    ) -> Task:
        """The τ²-bench task of ``draft``: its scenario, gold calls and criteria.

        ``reason``, ``known`` and ``infos`` (each call's info) replace the draft's own where
        the domain rewords them.
        """
        task_id = f"{request.blueprint.blueprint_id}-task"
        steps = self._gold(draft)
        infos = [s.info for s in steps] if infos is None else infos
        return Task(
            id=task_id,
            description=Description(
                purpose=draft.purpose, relevant_policies=None, notes=draft.note or None
            ),
            user_scenario=UserScenario(
                persona=persona,
                instructions=StructuredUserInstructions(
                    domain=self.domain_name,
                    reason_for_call=draft.reason if reason is None else reason,
                    known_info="\n".join(draft.known if known is None else known),
                    unknown_info=unknown,
                    task_instructions="\n".join(instructions),
                ),
            ),
            initial_state=(
                InitialState(
                    initialization_data=None,
                    initialization_actions=draft.init,
                    message_history=None,
                )
                if draft.init
                else None
            ),
            evaluation_criteria=EvaluationCriteria(
                actions=[
                    Action(
                        action_id=f"{task_id}_{i}",
                        requestor=s.requestor,
                        name=s.name,
                        arguments=s.arguments,
                        info=info,
                        compare_args=s.compare_args,
                    )
                    for i, (s, info) in enumerate(zip(steps, infos, strict=True))
                ],
                env_assertions=list(env_assertions) or None,
                communicate_info=[a.value for a in self._answers(draft)],
                nl_assertions=draft.nl_assertions or None,
                reward_basis=list(reward_basis),
            ),
        )
