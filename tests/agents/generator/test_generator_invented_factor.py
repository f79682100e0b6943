"""The LLM Generator and a factor the Reflector invented: defined, stated, and checked.

The Generator finds the factor's definition in the blueprint's space, defines it in its prompt
and asks for the task's value of it; the reply must state the requested value, and the
labeller, reading the task by the definition alone, must agree, or the repair turn says what
is wrong. Replies and labels come from a scripted server over HTTP.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from invented_factor import GATEWAY, PASSENGERS, invented_reference, spaces
from llm_scripts import task_json
from openai_server import OpenAIServer, Reply

from evosyn.agents.generator.base import GeneratorRejection
from evosyn.agents.generator.llm import LLMGenerator
from evosyn.config import CampaignConfig, LLMSection, ModelSettings
from evosyn.records import Blueprint, SynthTask


@pytest.fixture(scope="module")
def reference() -> tuple[Blueprint, SynthTask]:
    """A real cancellation task, and a blueprint of the grown space asking for 2+ passengers."""
    return invented_reference()


def test_the_prompt_defines_the_invented_factor_and_asks_for_its_value(
    reference: tuple[Blueprint, SynthTask],
) -> None:
    wanted, _ = reference
    prompt = LLMGenerator(GATEWAY, spaces=spaces).prompt(wanted, seed=3)
    assert (
        "- passengers: How many passengers the request is for: 1 alone, 2+ for two or more. "
        "Values: 1, 2+; a labeller reads the task's value by this definition alone." in prompt
    )
    assert "a factor added during the campaign" not in prompt
    assert "- factor_values states the task's value of passengers" in prompt
    assert '"factor_values": {"passengers": "<its value>"}' in prompt.split("# Output", 1)[1]
    # Without the space it cannot define it, and asks for no value.
    blind = LLMGenerator(GATEWAY).prompt(wanted, seed=3)
    assert "- passengers: a factor added during the campaign" in blind
    assert "factor_values" not in blind


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with OpenAIServer() as srv:
        yield srv


def generator_on(server: OpenAIServer, tmp_path: Path) -> LLMGenerator:
    """The Generator of a campaign on ``server``, its labeller on the same model."""
    cfg = CampaignConfig(
        llm=LLMSection(
            default=ModelSettings(
                model="openai/generator-model",
                api_base=server.url,
                timeout=5.0,
                backoff_base_s=0.01,
                cache=False,
            )
        ),
        lake={"root": str(tmp_path / "lake")},
    )
    made = LLMGenerator.from_config(cfg)
    assert made.labeller is not None
    made.spaces = spaces
    return made


def labels(value: str | None) -> Reply:
    return Reply.text(json.dumps({"labels": [{"task": "task 1", "value": value}]}))


def test_a_stated_value_the_labeller_reads_otherwise_is_repaired_then_rejected(
    server: OpenAIServer, tmp_path: Path, reference: tuple[Blueprint, SynthTask]
) -> None:
    wanted, synth = reference
    unstated = json.dumps(task_json(synth))
    stated = json.dumps({**task_json(synth), "factor_values": {"passengers": "2+"}})
    server.script(Reply.text(unstated), Reply.text(stated), labels("1"))
    with pytest.raises(GeneratorRejection, match=r"the labeller reads passengers = '1'"):
        generator_on(server, tmp_path).generate(wanted, seed=0)
    repair = server.requests[1].body["messages"][-1]["content"]
    assert "factor_values must state the task's value of passengers" in repair
    labelling = server.requests[2].body["messages"][0]["content"]
    assert labelling.startswith("You are the Labeller")
    assert f"Definition: {PASSENGERS.definition}" in labelling


def test_a_wrong_stated_value_is_named_before_the_labeller_is_asked(
    server: OpenAIServer, tmp_path: Path, reference: tuple[Blueprint, SynthTask]
) -> None:
    wanted, synth = reference
    wrong = json.dumps({**task_json(synth), "factor_values": {"passengers": "1"}})
    server.script(Reply.text(wrong), Reply.text(wrong))
    with pytest.raises(GeneratorRejection, match=r"factor_values.passengers is '1'"):
        generator_on(server, tmp_path).generate(wanted, seed=0)
    assert server.request_count == 2


def test_a_value_stated_and_confirmed_is_kept_as_requested(
    server: OpenAIServer, tmp_path: Path, reference: tuple[Blueprint, SynthTask]
) -> None:
    wanted, synth = reference
    stated = json.dumps({**task_json(synth), "factor_values": {"passengers": "2+"}})
    server.script(Reply.text(stated), labels("2+"))
    made = generator_on(server, tmp_path).generate(wanted, seed=0)
    assert made.requested["passengers"] == ["2+"]
    assert server.request_count == 2
