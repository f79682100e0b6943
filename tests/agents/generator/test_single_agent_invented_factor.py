"""The single synthesis agent and a factor the Reflector invented, as the LLM Generator has it.

The single-agent ablation replaces the Generator, so it must meet an invented factor the same
way: define it by the definition in the blueprint's space, ask for the task's value of it, and
keep a proposal only when it states the requested value and the labeller, reading the task by
the definition alone, agrees. Replies and labels come from a scripted server over HTTP.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from invented_factor import GATEWAY, PASSENGERS, invented_reference, spaces
from llm_scripts import conversation, task_json
from openai_server import OpenAIServer, Reply

from evosyn.agents.generator.base import GeneratorRejection
from evosyn.agents.generator.single_agent import SingleAgentSynthesizer
from evosyn.agents.verifier import ReplayVerifier
from evosyn.config import CampaignConfig, LLMSection, ModelSettings
from evosyn.records import Blueprint, SynthTask


@pytest.fixture(scope="module")
def reference() -> tuple[Blueprint, SynthTask]:
    """A real cancellation task, and a blueprint of the grown space asking for 2+ passengers."""
    return invented_reference()


def proposal(synth: SynthTask, **extra: Any) -> str:
    """The single agent's answer for ``synth``: its task and its teacher's conversation."""
    turns: list[dict[str, Any]] = []
    for who, reply in conversation(synth):
        role = "assistant" if who == "teacher" else "user"
        if reply.tool_calls:
            function = reply.tool_calls[0]["function"]
            call = {"name": function["name"], "arguments": json.loads(function["arguments"])}
            turns.append({"role": role, "tool_call": call})
        else:
            turns.append({"role": role, "content": reply.content})
    return json.dumps({"task": task_json(synth), "conversation": turns, **extra})


def test_the_prompt_defines_the_invented_factor_and_asks_for_its_value(
    reference: tuple[Blueprint, SynthTask],
) -> None:
    wanted, _ = reference
    prompt = SingleAgentSynthesizer(GATEWAY, spaces=spaces).prompt(wanted, seed=3)
    assert (
        "- passengers: How many passengers the request is for: 1 alone, 2+ for two or more. "
        "Values: 1, 2+; a labeller reads the task's value by this definition alone." in prompt
    )
    assert "a factor added during the campaign" not in prompt
    assert "- factor_values states the task's value of passengers" in prompt
    assert '"factor_values": {"passengers": "<its value>"}' in prompt.split("OUTPUT", 1)[1]
    # Without the space it cannot define it, and asks for no value.
    blind = SingleAgentSynthesizer(GATEWAY).prompt(wanted, seed=3)
    assert "- passengers: a factor added during the campaign" in blind
    assert "factor_values" not in blind


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with OpenAIServer() as srv:
        yield srv


def agent_on(server: OpenAIServer, tmp_path: Path) -> SingleAgentSynthesizer:
    """The single agent of a campaign on ``server``, its labeller on the same model."""
    cfg = CampaignConfig(
        llm=LLMSection(
            default=ModelSettings(
                model="openai/mono-model",
                api_base=server.url,
                timeout=5.0,
                backoff_base_s=0.01,
                cache=False,
            )
        ),
        lake={"root": str(tmp_path / "lake")},
    )
    made = SingleAgentSynthesizer.from_config(cfg)
    assert made.labeller is not None and made.labeller.gateway in made.gateways
    made.spaces = spaces
    return made


def labels(value: str | None) -> Reply:
    return Reply.text(json.dumps({"labels": [{"task": "task 1", "value": value}]}))


def test_a_stated_value_the_labeller_reads_otherwise_is_repaired_then_rejected(
    server: OpenAIServer, tmp_path: Path, reference: tuple[Blueprint, SynthTask]
) -> None:
    wanted, synth = reference
    stated = proposal(synth, factor_values={"passengers": "2+"})
    server.script(Reply.text(proposal(synth)), Reply.text(stated), labels("1"))
    with pytest.raises(GeneratorRejection, match=r"the labeller reads passengers = '1'"):
        agent_on(server, tmp_path).generate(wanted, seed=0)
    repair = server.requests[1].body["messages"][-1]["content"]
    assert "factor_values must state the task's value of passengers" in repair
    labelling = server.requests[2].body["messages"][0]["content"]
    assert labelling.startswith("You are the Labeller")
    assert f"Definition: {PASSENGERS.definition}" in labelling


def test_a_wrong_stated_value_is_named_before_the_labeller_is_asked(
    server: OpenAIServer, tmp_path: Path, reference: tuple[Blueprint, SynthTask]
) -> None:
    wanted, synth = reference
    wrong = proposal(synth, factor_values={"passengers": "1"})
    server.script(Reply.text(wrong), Reply.text(wrong))
    with pytest.raises(GeneratorRejection, match=r"factor_values.passengers is '1'"):
        agent_on(server, tmp_path).generate(wanted, seed=0)
    assert server.request_count == 2


def test_a_value_stated_and_confirmed_is_kept_and_its_conversation_verifies(
    server: OpenAIServer, tmp_path: Path, reference: tuple[Blueprint, SynthTask]
) -> None:
    wanted, synth = reference
    server.script(Reply.text(proposal(synth, factor_values={"passengers": "2+"})), labels("2+"))
    agent = agent_on(server, tmp_path)
    made = agent.generate(wanted, seed=0)
    assert made.requested["passengers"] == ["2+"]
    assert server.request_count == 2
    # factor_values is no part of the task or the conversation the agent plays.
    trajectory = agent.rollout(made, seed=0)
    verdict = ReplayVerifier("airline").verify(made.task, trajectory.messages)
    assert verdict.passed, verdict.reasons
