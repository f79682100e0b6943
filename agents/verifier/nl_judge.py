"""The judge of natural-language assertions: τ²-bench's NL_ASSERTION criterion, on a model.

A τ²-bench task may state what the agent must (or must not) do in words
(``evaluation_criteria.nl_assertions``); τ²-bench has an LLM read the conversation and say,
assertion by assertion, whether it is met, and the criterion's reward is 1 only if every one is
(:func:`nl_reward`). The ``llm`` judge does the same through the gateway: one call per
trajectory, showing the conversation as τ²-bench shows its judge (every message in order, by
role; the tool calls, which τ²-bench prints as ``None``, spelled out) and the numbered
assertions, and asking for one verdict and a one-line reason per assertion. A reply that misses
an assertion, grades one twice or is not the JSON asked for gets one repair turn
(:func:`~evosyn.agents.llm_output.ask_json`); a reply still unusable raises ``OutputRejected``
and a call that failed for good raises ``LLMError``: either is an error of the verdict, not a
verdict on the trajectory.

The judge is chosen by ``agents.verifier.nl_judge.kind`` (:data:`NL_JUDGES`): ``none`` (the
default) has no judge, so the assertions stay unchecked; ``llm`` calls the model of
``agents.verifier.nl_judge.llm`` over ``llm.default``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, StrictBool
from tau2.data_model.message import (
    AssistantMessage,
    Message,
    MultiToolMessage,
    ToolMessage,
    UserMessage,
)

from evosyn.agents.gateway import Gateway
from evosyn.agents.llm_output import ask_json
from evosyn.agents.prompt_context import render
from evosyn.agents.registry import Registry
from evosyn.agents.verifier.base import judge_settings
from evosyn.config import CampaignConfig

ROLE = "nl_judge"
TEMPLATES = Path(__file__).parent


class NLVerdict(BaseModel):
    """The judge's verdict on one assertion."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    assertion: str = Field(description="The assertion, as the task states it.")
    met: bool = Field(description="Whether the conversation meets it.")
    reason: str = Field(description="Why, in one line.")


@runtime_checkable
class NLJudge(Protocol):
    """Grades a task's natural-language assertions on a conversation."""

    name: str
    gateways: tuple[Gateway, ...]
    """The gateways its calls go through (their ``llm_calls`` rows wait in them)."""

    def judge(self, assertions: Sequence[str], messages: Sequence[Message]) -> list[NLVerdict]:
        """One verdict per assertion, in order.

        Raises:
            OutputRejected: the judge's reply stayed unusable after its repair turn.
            LLMError: a model call failed for good.
        """
        ...


NL_JUDGES: Registry[NLJudge | None] = Registry("agents.verifier.nl_judge.kind")
"""NL-assertion judges by name; ``none`` builds no judge."""


def nl_reward(verdicts: Sequence[NLVerdict]) -> float:
    """The NL_ASSERTION reward: 1 if every assertion is met (or there is none), else 0.

    ``tau2.evaluator.evaluator_nl_assertions.NLAssertionsEvaluator.calculate_reward``'s rule;
    the task's reward is multiplied by it when NL_ASSERTION is in its reward basis.
    """
    return 1.0 if all(v.met for v in verdicts) else 0.0


# --------------------------------------------------------------------------- the model's reply


class _VerdictOutput(BaseModel):
    """One verdict as the model writes it."""

    model_config = ConfigDict(extra="forbid")

    outcome: int = Field(description="The assertion's number in the prompt.")
    met: StrictBool
    reason: str = Field(min_length=1)


class _VerdictsOutput(BaseModel):
    """The judge's whole reply."""

    model_config = ConfigDict(extra="forbid")

    verdicts: list[_VerdictOutput]


def parse_verdicts(data: dict[str, Any], assertions: Sequence[str]) -> list[NLVerdict]:
    """The verdicts in ``data``, one per assertion in order; ValueError naming a fault."""
    output = _VerdictsOutput.model_validate(data)
    found: dict[int, _VerdictOutput] = {}
    for verdict in output.verdicts:
        if not 1 <= verdict.outcome <= len(assertions):
            raise ValueError(
                f"outcome {verdict.outcome} is not one of the outcomes 1 to {len(assertions)}"
            )
        if verdict.outcome in found:
            raise ValueError(f"outcome {verdict.outcome} is graded twice")
        if not " ".join(verdict.reason.split()):
            raise ValueError(f"outcome {verdict.outcome}: the reason is blank")
        found[verdict.outcome] = verdict
    missing = [str(n) for n in range(1, len(assertions) + 1) if n not in found]
    if missing:
        raise ValueError(f"no verdict for outcome {', '.join(missing)}: grade every outcome")
    return [
        NLVerdict(
            assertion=assertion,
            met=found[n].met,
            reason=" ".join(found[n].reason.split()),
        )
        for n, assertion in enumerate(assertions, start=1)
    ]


# --------------------------------------------------------------------------- the prompt


def transcript(messages: Sequence[Message]) -> str:
    """The conversation as the judge reads it: one line per turn, ``role: text``.

    Every message τ²-bench's judge is shown, in order; a tool call is written as
    ``name(arguments)`` where τ²-bench prints the call's empty content.
    """
    lines: list[str] = []
    for message in messages:
        tools = message.tool_messages if isinstance(message, MultiToolMessage) else [message]
        for one in tools:
            if one.content:
                lines.append(f"{one.role}: {one.content}")
            if isinstance(one, AssistantMessage | UserMessage):
                for call in one.tool_calls or []:
                    arguments = json.dumps(call.arguments, sort_keys=True, default=str)
                    lines.append(f"{one.role} (tool call): {call.name}({arguments})")
            elif isinstance(one, ToolMessage) and not one.content:
                lines.append(f"{one.role}: (no output)")
    return "\n".join(lines)


class LLMNLJudge:
    """The NL-assertion judge as one model call per trajectory.

    Args:
        gateway: Gateway of role ``nl_judge``.
        domain: Domain name (shown in the prompt).
    """

    name = "llm"

    def __init__(self, gateway: Gateway, domain: str = "airline") -> None:
        self.gateway = gateway
        self.gateways: tuple[Gateway, ...] = (gateway,)
        self.domain = domain

    def prompt(self, assertions: Sequence[str], messages: Sequence[Message]) -> str:
        """The judging prompt of one conversation."""
        return render(
            TEMPLATES,
            "nl_judge.j2",
            domain=self.domain,
            conversation=transcript(messages),
            assertions=list(assertions),
        )

    def judge(self, assertions: Sequence[str], messages: Sequence[Message]) -> list[NLVerdict]:
        """One verdict per assertion; no call when there is none."""
        if not assertions:
            return []
        return ask_json(
            self.gateway,
            self.prompt(assertions, messages),
            lambda data: parse_verdicts(data, assertions),
            seed=0,
        )


@NL_JUDGES.register("none")
def _none(cfg: CampaignConfig) -> NLJudge | None:
    return None


@NL_JUDGES.register("llm")
def _llm(cfg: CampaignConfig) -> NLJudge | None:
    gateway = Gateway(ROLE, judge_settings(cfg, ROLE), seed=cfg.campaign.seed)
    return LLMNLJudge(gateway, cfg.campaign.domain)
