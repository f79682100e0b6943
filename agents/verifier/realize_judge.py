"""The realization judge: a model reads whether a dialogue acts out what its task requested.

After the verdict, synthesis checks that a dialogue *realizes* its blueprint: every requested
interaction challenge is acted out by the user, and the user shows the persona kind the task's
persona line asks for (:func:`evosyn.agents.synthesis._unrealized`). The detectors of
:mod:`~evosyn.environments.dialogue_acts` decide it from the turns; they are precise, but on a
capable model's own wording they miss acts a reader sees. The ``llm`` judge is that reader: for
the requested challenges and persona kind the detectors did not find, one call per trajectory
shows the conversation (as the NL judge shows it, each message numbered by its index) and a
definition of each item (the domain ontology's guidance for challenges, one definition per
persona kind), and asks, item by item, whether the user acted it out, at which turn and why in
one line. What it finds acted counts as realized; the detectors' findings are never put to it.

A reply that misses an item, grades one twice, names one not asked or points an acted item at
a turn the user did not write gets one repair turn (:func:`~evosyn.agents.llm_output.ask_json`);
a reply still unusable raises ``OutputRejected`` and a call that failed for good raises
``LLMError``: either is an error of the rollout (a failed request), not a rejection.

The judge is chosen by ``agents.verifier.realize_judge.kind`` (:data:`REALIZE_JUDGES`):
``none`` (the default) has no judge, so the detectors alone decide; ``llm`` calls the model of
``agents.verifier.realize_judge.llm`` over ``llm.default``.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, StrictBool
from tau2.data_model.message import Message, SystemMessage, UserMessage

from evosyn.agents.gateway import Gateway
from evosyn.agents.llm_output import ask_json
from evosyn.agents.prompt_context import render
from evosyn.agents.registry import Registry
from evosyn.agents.verifier.base import judge_settings
from evosyn.agents.verifier.nl_judge import transcript
from evosyn.config import CampaignConfig

ROLE = "realize_judge"
TEMPLATES = Path(__file__).parent

#: What each interaction challenge asks of the user, as a reader labels it: the user's own
#: turns must do it. Written for the judge (not from the detectors' cues).
CHALLENGES: dict[str, str] = {
    "missing_information": (
        "The user says they do not have, cannot find or do not remember a piece of information "
        "the agent needs to find their records (a reservation, order or account number, a "
        "user or customer id, ...), whether the agent asked for it or the user volunteers it. "
        "A user who merely never mentions it, without saying they lack it, has not acted it."
    ),
    "ambiguous_request": (
        "The user first states what they want vaguely or incompletely (which trip, order, "
        "item or line, what should be done, or which option they mean is left open), so the "
        "agent has to ask what exactly they want; the user makes it specific only then. A "
        "request complete from the start has not acted it, and the agent asking only who the "
        "user is (identification) does not make a request vague."
    ),
    "ambiguous_preference": (
        "The user first states what they want vaguely or leaves a preference open (which "
        "trip, flight, cabin, date, passenger or payment, or what should be done), so the "
        "agent has to ask what exactly they want; the user makes it specific only then. A "
        "request complete from the start has not acted it, and the agent asking only who the "
        "user is (identification) does not make a request vague."
    ),
    "user_false_claim": (
        "The user asserts as fact something the records or the rules do not back: a promise, "
        "approval, waiver, voucher, refund or fix they say an earlier agent, call, email or "
        "message gave them; a status, membership, insurance, cabin, plan, purchase or "
        "entitlement they do not have; or a fact about their booking, order, line or bill that "
        "the tool results contradict. It is acted once the user makes the claim, whether the "
        "agent catches it or not, even if the user drops it when told otherwise. A question "
        "whether something is possible is not a claim."
    ),
    "preference_change": (
        "After the agent has proposed or confirmed a concrete option (a flight, cabin, item, "
        "plan, amount or payment method), the user changes their mind and asks for something "
        "other than what they had asked for or accepted before. Choosing among options for "
        "the first time is not a change."
    ),
    "constraint_hidden_until_late": (
        "The user reveals a condition on accepting (a budget cap, a minimum refund, a "
        "required payment method, a date or time limit, ...) only late, once the agent has "
        "proposed or is about to act, not when first stating the request. A limit given with "
        "the request has not acted it."
    ),
    "emotional_pressure": (
        "The user uses feelings to push the agent: frustration, upset, stress, anxiety, "
        "disappointment or pressing impatience ('please hurry, I've been at this all "
        "morning', 'come on', 'this is unacceptable', 'there's really nothing you can do?'), "
        "to get an exception, a waiver, a refund, faster handling or a second look. A calm "
        "request, plain politeness or a neutral question has not acted it."
    ),
    "multi_intent_interleaving": (
        "While one request is still open (being looked up or worked on, not yet finished), "
        "the user raises a second request or a side question, and the conversation then "
        "deals with both. Several requests stated together in the opening message, or a new "
        "request once the first is finished, have not acted it."
    ),
}

#: What each persona kind shows in the user's turns. The kinds are those
#: :func:`~evosyn.environments.dialogue_acts.persona_kind` reads from a persona line.
PERSONAS: dict[str, str] = {
    "busy": (
        "The user is in a hurry and says so: explicit hurry or time pressure ('quick please', "
        "'I'm short on time', 'let's get this done', 'no need for details'). Short answers "
        "alone do not show it."
    ),
    "chatty": (
        "The user is friendly and talkative beyond the task: small talk, personal asides or "
        "stories, remarks about their day, trip or family, warm chit-chat. Politeness and "
        "thanks alone do not show it."
    ),
    "careful": (
        "The user double-checks before agreeing: asks the agent to confirm, repeat or spell "
        "out details (dates, items, amounts, what changes), asks how a charge or refund is "
        "worked out, what the terms or consequences are, or checks a detail against what they "
        "know before saying yes."
    ),
    "novice": (
        "The user is new to or unsure of the process or the technology: says so, asks how "
        "things work or what a term means, asks for or needs step-by-step guidance, or asks "
        "basic questions an experienced customer would not."
    ),
    "expert": (
        "The user knows the procedures and their account: knows what to ask for and gives "
        "what the agent will need up front (ids, the precise change), uses the domain's terms "
        "correctly, anticipates steps or names the rules that apply, confident and efficient."
    ),
    "brief": (
        "The user is polite and to the point: consistently short, direct answers to what is "
        "asked, without small talk, elaboration or asides (an opening message that states the "
        "request in full does not count against it)."
    ),
}


class RealizeVerdict(BaseModel):
    """The judge's verdict on one requested item: a challenge or the persona kind."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    item: str = Field(description="The challenge's name or the persona kind.")
    kind: Literal["challenge", "persona"] = Field(description="What the item is.")
    realized: bool = Field(description="Whether the user acted the challenge out / showed it.")
    turn: int | None = Field(
        description="Index in the messages of the user's turn that shows it; None if not."
    )
    reason: str = Field(description="Why, in one line.")


@runtime_checkable
class RealizeJudge(Protocol):
    """Says whether a dialogue's user acts out requested challenges and shows a persona kind."""

    name: str
    gateways: tuple[Gateway, ...]
    """The gateways its calls go through (their ``llm_calls`` rows wait in them)."""

    def judge(
        self,
        domain: str,
        messages: Sequence[Message],
        challenges: Sequence[str],
        persona: str | None,
    ) -> list[RealizeVerdict]:
        """One verdict per challenge, in order, then one for ``persona`` (a kind) if given.

        Raises:
            OutputRejected: the judge's reply stayed unusable after its repair turn.
            LLMError: a model call failed for good.
        """
        ...


REALIZE_JUDGES: Registry[RealizeJudge | None] = Registry("agents.verifier.realize_judge.kind")
"""Realization judges by name; ``none`` builds no judge."""


# --------------------------------------------------------------------------- the model's reply


class _ChallengeOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    challenge: str
    turn: int | None = None
    reason: str = Field(min_length=1)
    acted: StrictBool


class _PersonaOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: str
    turn: int | None = None
    reason: str = Field(min_length=1)
    shown: StrictBool


class _RealizeOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    challenges: list[_ChallengeOutput] = Field(default_factory=list)
    persona: _PersonaOutput | None = None


def _turn(label: str, realized: bool, turn: int | None, messages: Sequence[Message]) -> int | None:
    """The turn of an item judged realized: a message the user wrote; ValueError if not."""
    if not realized:
        return None
    if turn is None:
        raise ValueError(f"{label}: judged true but no turn: give the user's turn that shows it")
    if not 0 <= turn < len(messages) or not isinstance(messages[turn], UserMessage):
        raise ValueError(f"{label}: turn {turn} is not a user turn: give a [n] marked 'user'")
    return turn


def parse_realized(
    data: dict[str, Any],
    messages: Sequence[Message],
    challenges: Sequence[str],
    persona: str | None,
) -> list[RealizeVerdict]:
    """The verdicts in ``data``: one per challenge in order, then the persona's; ValueError."""
    output = _RealizeOutput.model_validate(data)
    found: dict[str, _ChallengeOutput] = {}
    for one in output.challenges:
        if one.challenge not in challenges:
            raise ValueError(
                f"challenge {one.challenge!r} was not asked: judge only {list(challenges)}"
            )
        if one.challenge in found:
            raise ValueError(f"challenge {one.challenge!r} is judged twice")
        if not " ".join(one.reason.split()):
            raise ValueError(f"challenge {one.challenge!r}: the reason is blank")
        found[one.challenge] = one
    missing = [c for c in challenges if c not in found]
    if missing:
        raise ValueError(f"no verdict for challenge {', '.join(missing)}: judge every one")
    verdicts = [
        RealizeVerdict(
            item=c,
            kind="challenge",
            realized=found[c].acted,
            turn=_turn(f"challenge {c!r}", found[c].acted, found[c].turn, messages),
            reason=" ".join(found[c].reason.split()),
        )
        for c in challenges
    ]
    if persona is None:
        if output.persona is not None:
            raise ValueError("persona was not asked: leave it null")
        return verdicts
    if output.persona is None:
        raise ValueError(f"no verdict for persona {persona!r}: judge it")
    if output.persona.kind != persona:
        raise ValueError(f"persona kind {output.persona.kind!r} was not asked: judge {persona!r}")
    if not " ".join(output.persona.reason.split()):
        raise ValueError("persona: the reason is blank")
    shown = output.persona.shown
    return [
        *verdicts,
        RealizeVerdict(
            item=persona,
            kind="persona",
            realized=shown,
            turn=_turn(f"persona {persona!r}", shown, output.persona.turn, messages),
            reason=" ".join(output.persona.reason.split()),
        ),
    ]


# --------------------------------------------------------------------------- the prompt


def numbered(messages: Sequence[Message]) -> str:
    """The conversation as the NL judge's ``transcript`` writes it, numbered by message.

    Each message's lines come under its index ``[n]`` in ``messages``: the turn a verdict
    names. A system message (the agent's instructions) is left out.
    """
    blocks: list[str] = []
    for index, message in enumerate(messages):
        if isinstance(message, SystemMessage):
            continue  # the agent's instructions: nothing the user did
        text = transcript([message])
        if text:
            blocks.append(f"[{index}] {text}")
    return "\n".join(blocks)


@cache
def challenge_guidance(domain: str) -> str:
    """The domain ontology's guidance for its ``interaction_challenge`` factor."""
    from evosyn.space import seed_space

    try:
        factors = seed_space(domain, "realize-judge").factors
    except Exception:  # an unknown domain: the judge still reads the definitions
        return ""
    return next((f.guidance for f in factors if f.name == "interaction_challenge"), "")


class LLMRealizeJudge:
    """The realization judge as one model call per trajectory.

    Args:
        gateway: Gateway of role ``realize_judge``.
    """

    name = "llm"

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.gateways: tuple[Gateway, ...] = (gateway,)

    def prompt(
        self,
        domain: str,
        messages: Sequence[Message],
        challenges: Sequence[str],
        persona: str | None,
    ) -> str:
        """The judging prompt of one conversation."""
        return render(
            TEMPLATES,
            "realize_judge.j2",
            domain=domain,
            conversation=numbered(messages),
            guidance=challenge_guidance(domain),
            challenges=[(c, CHALLENGES.get(c, c.replace("_", " "))) for c in challenges],
            persona=(persona, PERSONAS.get(persona, persona)) if persona else None,
        )

    def judge(
        self,
        domain: str,
        messages: Sequence[Message],
        challenges: Sequence[str],
        persona: str | None,
    ) -> list[RealizeVerdict]:
        """One verdict per challenge, then the persona's; no call when nothing is asked."""
        challenges = list(dict.fromkeys(challenges))
        if not challenges and persona is None:
            return []
        return ask_json(
            self.gateway,
            self.prompt(domain, messages, challenges, persona),
            lambda data: parse_realized(data, messages, challenges, persona),
            seed=0,
        )


@REALIZE_JUDGES.register("none")
def _none(cfg: CampaignConfig) -> RealizeJudge | None:
    return None


@REALIZE_JUDGES.register("llm")
def _llm(cfg: CampaignConfig) -> RealizeJudge | None:
    return LLMRealizeJudge(Gateway(ROLE, judge_settings(cfg, ROLE), seed=cfg.campaign.seed))
