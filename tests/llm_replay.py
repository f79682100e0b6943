"""Captured prompts of every LLM role and the code path each role's reply goes through.

``tests/agents/llm/replay/`` holds the capture (``capture.py`` writes it): ``inputs.json``, the
records of an offline campaign the roles render their prompts from, and ``prompts/<case>.txt``,
each case's prompt. ``replies/<case>.json`` holds a reply written by reading that prompt alone,
as a model following it literally would. A ``Case`` renders its prompt with the role's own
``prompt`` method and feeds a reply through the role's own ``ask``-validate path over HTTP;
``test_replay.py`` asks that every reply is accepted at the first answer.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openai_server import OpenAIServer, Reply

from evosyn.agents.designer import LLMDesigner
from evosyn.agents.generator.base import GeneratorRejection
from evosyn.agents.generator.llm import LLMGenerator
from evosyn.agents.generator.single_agent import SingleAgentSynthesizer
from evosyn.agents.planner import LLMPlanner, PartialPlanningError
from evosyn.agents.reflector import REALIZABLE, LLMReflector
from evosyn.agents.teacher.llm import LLMTeacher
from evosyn.agents.verifier import ReplayVerifier
from evosyn.config import CampaignConfig, LLMSection, ModelSettings
from evosyn.environments.registry import domain_plugin
from evosyn.records import Blueprint, Direction, Feedback, SynthesisSpace, SynthTask

FOLDER = Path(__file__).parent / "agents" / "llm" / "replay"
CAMPAIGN = "capture"
DOMAIN = "airline"


@dataclass(frozen=True)
class Inputs:
    """The captured campaign state (``inputs.json``) as records."""

    space_before: SynthesisSpace
    space: SynthesisSpace
    feedback: Feedback
    direction: Direction
    blueprints: dict[str, Blueprint]
    teacher_task: SynthTask

    @classmethod
    def load(cls) -> Inputs:
        """The records of ``inputs.json``."""
        raw = json.loads((FOLDER / "inputs.json").read_text())
        return cls(
            space_before=SynthesisSpace.model_validate(raw["space_before"]),
            space=SynthesisSpace.model_validate(raw["space"]),
            feedback=Feedback.model_validate(raw["feedback"]),
            # The Planner is asked for one blueprint of the direction.
            direction=Direction.model_validate({**raw["direction"], "budget": 1}),
            blueprints={k: Blueprint.model_validate(v) for k, v in raw["blueprints"].items()},
            teacher_task=SynthTask.model_validate(raw["teacher_task"]),
        )


def config(server: OpenAIServer, cache_dir: Path) -> CampaignConfig:
    """A campaign whose every role asks ``server`` (one model, no response cache)."""
    return CampaignConfig.model_validate(
        {
            "campaign": {"name": CAMPAIGN, "id": CAMPAIGN, "domain": DOMAIN, "seed": 0},
            "llm": LLMSection(
                default=ModelSettings(
                    model="openai/replay-model",
                    api_base=server.url,
                    timeout=30.0,
                    max_attempts=1,
                    cache=False,
                    cache_dir=str(cache_dir),
                )
            ).model_dump(),
        }
    )


def reply_of(name: str) -> Any:
    """The scripted reply of case ``name`` (a JSON answer, or a teacher's list of turns)."""
    return json.loads((FOLDER / "replies" / f"{name}.json").read_text())


# --------------------------------------------------------------------------- the roles


def _feasible() -> Any:
    return domain_plugin(DOMAIN).infeasible


def _designer_prompt(inputs: Inputs) -> str:
    return LLMDesigner(_no_gateway(), DOMAIN).prompt(inputs.space, inputs.feedback, 2, 24)


def _designer(inputs: Inputs, cfg: CampaignConfig) -> str | None:
    designer = LLMDesigner.from_config(cfg, _feasible(), domain_plugin(DOMAIN).checks.conflicts)
    designer.design(inputs.space, inputs.feedback, CAMPAIGN, 2, 24)
    return designer.rejections.get((CAMPAIGN, 2))


def _planner_prompt(inputs: Inputs) -> str:
    conflicts = domain_plugin(DOMAIN).checks.conflicts
    return LLMPlanner(_no_gateway(), DOMAIN, conflicts).prompt(inputs.space, inputs.direction)


def _planner(inputs: Inputs, cfg: CampaignConfig) -> str | None:
    try:
        LLMPlanner.from_config(cfg, domain_plugin(DOMAIN).checks.conflicts).plan(
            inputs.space, inputs.direction, seed=0
        )
    except PartialPlanningError as exc:
        return "; ".join(exc.rejected.values())
    return None


def _generator_prompt(case: str, inputs: Inputs) -> str:
    blueprint = inputs.blueprints[case]
    return LLMGenerator(_no_gateway(), DOMAIN).prompt(blueprint, blueprint.seed)


def _generator(case: str, inputs: Inputs, cfg: CampaignConfig) -> str | None:
    blueprint = inputs.blueprints[case]
    try:
        LLMGenerator.from_config(cfg).generate(blueprint, blueprint.seed)
    except GeneratorRejection as exc:
        return str(exc)
    return None


def _single_agent_prompt(inputs: Inputs) -> str:
    blueprint = inputs.blueprints["single_agent"]
    return SingleAgentSynthesizer(_no_gateway(), DOMAIN).prompt(blueprint, blueprint.seed)


def _single_agent(inputs: Inputs, cfg: CampaignConfig) -> str | None:
    blueprint = inputs.blueprints["single_agent"]
    mono = SingleAgentSynthesizer.from_config(cfg)
    try:
        synth = mono.generate(blueprint, blueprint.seed)
    except GeneratorRejection as exc:
        return str(exc)
    verdict = ReplayVerifier(DOMAIN).verify(synth.task, mono.rollout(synth, 0).messages)
    return None if verdict.passed else f"not verified: {verdict.reasons}"


def _reflector_prompt(inputs: Inputs) -> str:
    return LLMReflector(_no_gateway(), DOMAIN, REALIZABLE).prompt(
        inputs.space_before, inputs.feedback, 1
    )


def _reflector(inputs: Inputs, cfg: CampaignConfig) -> str | None:
    reflector = LLMReflector.from_config(cfg, REALIZABLE)
    decision, _ = reflector.reflect(inputs.space_before, inputs.feedback, 1)
    return decision.rationale if "output rejected" in decision.rationale else None


USER_HEADING = "\n\n# The user simulator's scenario\n"


def _teacher_prompt(inputs: Inputs) -> str:
    # The agent's prompt is the same for every task; the task goes to the user simulator.
    teacher = LLMTeacher(_no_gateway(), _no_gateway(), DOMAIN)
    return teacher.system_prompt() + USER_HEADING + teacher.user_instructions(inputs.teacher_task)


def _teacher(inputs: Inputs, cfg: CampaignConfig) -> str | None:
    synth = inputs.teacher_task
    trajectory = LLMTeacher.from_config(cfg).rollout(synth, seed=0)
    verdict = ReplayVerifier(DOMAIN).verify(synth.task, trajectory.messages)
    return None if verdict.passed else f"not verified: {verdict.reasons}"


@functools.cache
def _no_gateway() -> Any:
    # Rendering a prompt makes no call: a gateway nobody listens on will do.
    from evosyn.agents.gateway import Gateway, GatewaySettings

    return Gateway("capture", GatewaySettings(model="openai/unused", api_base="http://127.0.0.1:9"))


# --------------------------------------------------------------------------- cases


@dataclass(frozen=True)
class Case:
    """One captured prompt: how the role renders it and how its reply is judged."""

    name: str
    prompt: Callable[[Inputs], str]
    #: Runs the role's code path on the scripted server; None, or why the reply was refused.
    run: Callable[[Inputs, CampaignConfig], str | None]

    def script(self, server: OpenAIServer) -> int:
        """Queue this case's reply (every turn, for the teacher); the number of replies."""
        reply = reply_of(self.name)
        if self.name != "teacher":
            server.script(Reply.text(json.dumps(reply, indent=1)))
            return 1
        for index, turn in enumerate(reply):
            call = turn.get("tool_call")
            if call is not None:
                server.script(Reply.tool_call(call["name"], call["arguments"], f"call_{index}"))
            else:
                server.script(Reply.text(turn["content"]))
        return len(reply)


CASES = [
    Case("designer", _designer_prompt, _designer),
    Case("planner", _planner_prompt, _planner),
    *(
        Case(
            name,
            functools.partial(_generator_prompt, name),
            functools.partial(_generator, name),
        )
        for name in (
            "generator_booking",
            "generator_change",
            "generator_cancellation",
            "generator_refund",
            "generator_refusal",
        )
    ),
    Case("single_agent", _single_agent_prompt, _single_agent),
    Case("reflector", _reflector_prompt, _reflector),
    Case("teacher", _teacher_prompt, _teacher),
]
