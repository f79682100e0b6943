"""Single-agent synthesis: one call proposes task and trajectory; observations are real."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llm_scripts import grounded_shares
from openai_server import OpenAIServer, Reply
from tau2.data_model.message import ToolMessage

from evosyn.agents.generator.base import GeneratorRejection
from evosyn.agents.generator.single_agent import SingleAgentSynthesizer
from evosyn.agents.synthesis import synthesize
from evosyn.agents.verifier import ReplayVerifier
from evosyn.config import CampaignConfig, LLMSection, ModelSettings
from evosyn.environments import FunctionalSymbol, get_domain
from evosyn.environments.airline.generator import AirlineGenerator
from evosyn.environments.airline.teacher import AirlineTeacher
from evosyn.records import Blueprint, SynthTask

BLUEPRINT = Blueprint(
    campaign_id="test",
    round=1,
    blueprint_id="bp-mono-0",
    direction_id="d0",
    space_version=1,
    selections={"task_family": ["flight_cancellation"], "expected_outcome": ["fulfill"]},
    intent="cancel a reservation the policy allows to cancel",
)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with OpenAIServer() as srv:
        yield srv


@pytest.fixture(scope="module")
def verifier() -> ReplayVerifier:
    return ReplayVerifier("airline")


@pytest.fixture(scope="module")
def reference() -> SynthTask:
    """A real task (existing entities) whose proposal the scripted model will return."""
    bp = BLUEPRINT.model_copy(
        update={
            "blueprint_id": "bp-ref-0",
            "selections": {
                "task_family": ["flight_cancellation"],
                "expected_outcome": ["fulfill"],
                "policy_or_constraint_focus": ["fare_rule_constraint"],
                "tool_use_pattern": ["lookup_verify_then_modify"],
                "interaction_challenge": [],
                "difficulty_profile": ["medium"],
            },
        }
    )
    return AirlineGenerator().generate(bp, 3)


def proposal_of(task: SynthTask, drop_writes: bool = False) -> dict[str, Any]:
    """The JSON a perfect monolithic model would write for ``task``."""
    domain = get_domain("airline")
    instructions = task.task.user_scenario.instructions
    turns: list[dict[str, Any]] = []
    for message in AirlineTeacher().messages(task.task, seed=1, cues=task.cues):
        if isinstance(message, ToolMessage) or message.role == "system":
            continue
        if message.tool_calls:
            [call] = message.tool_calls
            if drop_writes and domain.symbol(call.name) == FunctionalSymbol.WRITE:
                continue
            turns.append(
                {"role": "assistant", "tool_call": {"name": call.name, "arguments": call.arguments}}
            )
        else:
            turns.append({"role": message.role, "content": message.content})
    criteria = task.task.evaluation_criteria
    return {
        "task": {
            "purpose": task.task.description.purpose,
            "reason_for_call": instructions.reason_for_call,
            "known_info": instructions.known_info,
            # An id the user lacks is the missing_information challenge: a model names one only
            # when it is requested (the contract's check), whatever the programmatic task says.
            "unknown_info": instructions.unknown_info
            if "missing_information" in task.requested.get("interaction_challenge", [])
            else None,
            "task_instructions": instructions.task_instructions,
            "gold_actions": [
                {"name": a.name, "arguments": a.arguments} for a in criteria.actions or []
            ],
            "communicate_info": criteria.communicate_info or [],
        },
        "conversation": turns,
    }


def synthesizer(server: OpenAIServer, tmp_path: Path, **settings: Any) -> SingleAgentSynthesizer:
    cfg = CampaignConfig(
        llm=LLMSection(
            default=ModelSettings(
                model="openai/mono-model",
                api_base=server.url,
                timeout=settings.pop("timeout", 5.0),
                backoff_base_s=0.01,
                cache_dir=str(tmp_path / "cache"),
                **settings,
            )
        )
    )
    return SingleAgentSynthesizer.from_config(cfg)


def test_one_call_proposes_a_task_whose_trajectory_verifies(
    server: OpenAIServer, tmp_path: Path, reference: SynthTask, verifier: ReplayVerifier
) -> None:
    text = "Here is the sample:\n```json\n" + json.dumps(proposal_of(reference)) + "\n```"
    server.script(Reply.text(text))
    mono = synthesizer(server, tmp_path)
    synth = mono.generate(BLUEPRINT, seed=4)
    assert server.request_count == 1
    body = server.requests[0].body
    assert body["temperature"] == 1.0 and body["seed"] == 4
    prompt = body["messages"][0]["content"]
    assert "flight_cancellation" in prompt and "cancel_reservation" in prompt
    assert (synth.task_id, synth.generator) == ("bp-mono-0-task", "single_agent")
    assert synth.requested == BLUEPRINT.selections
    trajectory = mono.rollout(synth, seed=4)
    assert server.request_count == 1  # the trajectory came with the task
    verdict = verifier.verify(synth.task, trajectory.messages)
    assert verdict.passed, verdict.reasons
    # Observations are the environment's answers, not text from the model.
    tools = [m for m in trajectory.messages if isinstance(m, ToolMessage)]
    assert tools and all(not t.error for t in tools)
    assert all(t.content and t.content not in text for t in tools if len(t.content) > 40)
    [row] = mono.gateways[0].records("c", 1)
    assert (row.role, row.outcome) == ("single_agent", "ok")


def test_a_conversation_that_misses_its_gold_fails_verification(
    server: OpenAIServer, tmp_path: Path, reference: SynthTask, verifier: ReplayVerifier
) -> None:
    server.script(Reply.text(json.dumps(proposal_of(reference, drop_writes=True))))
    mono = synthesizer(server, tmp_path)
    batch = synthesize([BLUEPRINT], mono, mono, verifier, seed=0)
    [verdict] = batch.verifications
    assert not verdict.passed and verdict.reasons
    assert [r.stage for r in batch.rejections] == ["verify"]
    assert server.request_count == 1  # no Repair calls: the monolithic agent has none


def _with(payload: dict[str, Any], **task: Any) -> str:
    changed = json.loads(json.dumps(payload))
    changed["task"].update(task)
    return json.dumps(changed)


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda p: "", "empty reply"),
        (lambda p: json.dumps(p)[:200], "truncated JSON"),
        (lambda p: "I cannot help with that.", "no JSON object"),
        (
            lambda p: _with(p, gold_actions=[{"name": "teleport", "arguments": {}}]),
            "gold action 'teleport' is not an agent tool",
        ),
        (
            lambda p: _with(p, gold_actions=[{"name": "cancel_reservation", "arguments": {}}]),
            "missing arguments ['reservation_id']",
        ),
        (lambda p: _with(p, gold_actions="none"), "invalid proposal at task.gold_actions"),
        (
            lambda p: json.dumps(
                {
                    **p,
                    "conversation": [
                        *p["conversation"],
                        {"role": "assistant", "tool_call": {"name": "teleport", "arguments": {}}},
                    ],
                }
            ),
            "conversation turn #",
        ),
        (
            lambda p: _with(
                p,
                gold_actions=[
                    {"name": "cancel_reservation", "arguments": {"reservation_id": "NOPE00"}}
                ],
            ),
            "gold action #0 cancel_reservation fails on the database",
        ),
    ],
)
def test_invalid_output_is_a_rejection_with_the_reason(
    server: OpenAIServer, tmp_path: Path, reference: SynthTask, make: Any, reason: str
) -> None:
    bad = make(proposal_of(reference))
    server.script(Reply.text(bad), Reply.text(bad))
    mono = synthesizer(server, tmp_path)
    with pytest.raises(GeneratorRejection, match="single-agent output rejected") as caught:
        mono.generate(BLUEPRINT, seed=0)
    assert reason in str(caught.value)
    assert server.request_count == 2  # the answer and one repair turn, as the modular arm


def test_the_repair_turn_quotes_the_error_and_a_fixed_answer_is_kept(
    server: OpenAIServer, tmp_path: Path, reference: SynthTask, verifier: ReplayVerifier
) -> None:
    good = proposal_of(reference)
    bad = _with(good, gold_actions=[{"name": "teleport", "arguments": {}}])
    server.script(Reply.text(bad), Reply.text(json.dumps(good)))
    mono = synthesizer(server, tmp_path)
    synth = mono.generate(BLUEPRINT, seed=0)
    assert verifier.verify(synth.task, mono.rollout(synth, 0).messages).passed
    repair = server.requests[-1].body["messages"][-1]["content"]
    assert "gold action 'teleport' is not an agent tool" in repair


def test_a_reply_whose_writes_miss_the_request_is_repaired_with_every_miss_named(
    server: OpenAIServer, tmp_path: Path, reference: SynthTask, verifier: ReplayVerifier
) -> None:
    # The single agent is held to the LLM Generator's contract: here gold actions that only
    # look things up, for a cancellation of one write.
    good = proposal_of(reference)
    domain = get_domain("airline")
    reads = [
        a
        for a in good["task"]["gold_actions"]
        if domain.symbol(a["name"]) != FunctionalSymbol.WRITE
    ]
    wanted = BLUEPRINT.model_copy(
        update={"selections": {**BLUEPRINT.selections, "num_write": ["1"]}}
    )
    server.script(Reply.text(_with(good, gold_actions=reads)), Reply.text(json.dumps(good)))
    mono = synthesizer(server, tmp_path)
    synth = mono.generate(wanted, seed=0)
    assert server.request_count == 2
    repair = server.requests[-1].body["messages"][-1]["content"]
    assert "task_family is flight_cancellation, but the writes (none)" in repair
    assert "num_write is 1, but the gold actions make 0 write call(s)" in repair
    assert verifier.verify(synth.task, mono.rollout(synth, 0).messages).passed


def test_the_prompt_defines_every_requested_factor_as_the_generator_does(
    server: OpenAIServer, tmp_path: Path
) -> None:
    wanted = BLUEPRINT.model_copy(
        update={
            "selections": {**BLUEPRINT.selections, "num_write": ["1"]},
            "difficulty_controls": {"num_write": "2", "difficulty_profile": "hard"},
        }
    )
    mono = synthesizer(server, tmp_path)
    prompt = mono.prompt(wanted, seed=0)
    # A difficulty control wins over the selection, as the contract counts it.
    assert "- num_write: 2\n" in prompt and "- difficulty_profile: hard\n" in prompt
    for line in mono.contract.definitions(wanted):
        assert f"- {line}\n" in prompt
    assert "Your gold_actions are checked" in prompt


def test_a_repeat_of_a_kept_task_is_asked_again(
    server: OpenAIServer, tmp_path: Path, reference: SynthTask
) -> None:
    good = json.dumps(proposal_of(reference))
    server.script(Reply.text(good), Reply.text(good))
    mono = synthesizer(server, tmp_path)
    with pytest.raises(GeneratorRejection, match="kept before"):
        mono.generate(BLUEPRINT, seed=0, screen=lambda task: "it repeats a task kept before")
    assert server.request_count == 2


def test_faults_are_retried_and_accounted(
    server: OpenAIServer, tmp_path: Path, reference: SynthTask, verifier: ReplayVerifier
) -> None:
    server.script(
        Reply.rate_limited(retry_after=0.05),
        Reply.server_error(),
        Reply.slow(3.0),
        Reply.text(json.dumps(proposal_of(reference))),
    )
    mono = synthesizer(server, tmp_path, timeout=1.0)
    synth = mono.generate(BLUEPRINT, seed=0)
    assert verifier.verify(synth.task, mono.rollout(synth, 0).messages).passed
    rows = mono.gateways[0].records("c", 1)
    assert [r.outcome for r in rows] == ["error", "error", "error", "ok"]
    classes = [r.error_class or "" for r in rows[:3]]
    assert classes[0] == "RateLimitError" and "Timeout" in classes[2]


def test_a_call_that_keeps_failing_is_a_rejection_with_its_class(
    server: OpenAIServer, tmp_path: Path
) -> None:
    server.script(Reply.server_error(), Reply.server_error())
    mono = synthesizer(server, tmp_path, max_attempts=2)
    with pytest.raises(GeneratorRejection, match="model call failed"):
        mono.generate(BLUEPRINT, seed=0)
    assert [r.outcome for r in mono.gateways[0].records("c", 1)] == ["error", "error"]


def test_the_single_agent_is_grounded_as_the_generator_and_verifies_as_often(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A model that only uses records its prompt shows: the arms differ only in their split.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    shares = grounded_shares(8, tmp_path)
    assert shares["modular"] > 0
    assert abs(shares["single_agent"] - shares["modular"]) <= 0.10
    # Shown no records, as before the single agent was grounded, it can only invent ids.
    assert grounded_shares(8, tmp_path / "bare", entities=0)["single_agent"] == 0


def test_the_records_are_shown_as_the_generator_shows_them(
    monkeypatch: pytest.MonkeyPatch, server: OpenAIServer, tmp_path: Path
) -> None:
    # Records cut short for room: both arms name what was left out and explain the maps.
    from evosyn.agents import prompt_context
    from evosyn.agents.generator.llm import LLMGenerator

    real = prompt_context.within
    monkeypatch.setattr(prompt_context, "within", lambda entities: real(entities, limit=6000))
    mono = synthesizer(server, tmp_path)
    shown = prompt_context.grounding(mono.domain, BLUEPRINT, 0, mono.entities)
    assert shown["left_out"] and shown["maps"]
    modular = LLMGenerator(mono.gateway).prompt(BLUEPRINT, seed=0)
    prompt = mono.prompt(BLUEPRINT, seed=0)
    left = next(line for line in modular.splitlines() if line.startswith("Left out for room"))
    assert left in prompt.splitlines()
    assert all(name in left for name in shown["left_out"])
    for start in ("A map of entries keyed by ids", "A map keyed by dates"):
        said = [line for line in modular.splitlines() if line.startswith(start)]
        assert said == [line for line in prompt.splitlines() if line.startswith(start)]
    assert any(line.startswith("A map") for line in prompt.splitlines())


def test_an_unknown_id_the_blueprint_does_not_ask_for_is_repaired(
    server: OpenAIServer, tmp_path: Path, reference: SynthTask, verifier: ReplayVerifier
) -> None:
    # The LLM Generator's check: unknown_info names an id only with missing_information.
    good = proposal_of(reference)
    bad = _with(good, unknown_info="You do not know your reservation id.")
    server.script(Reply.text(bad), Reply.text(json.dumps(good)))
    mono = synthesizer(server, tmp_path)
    rules = mono.prompt(BLUEPRINT, seed=0).split("RULES", 1)[1]
    assert "It names no id or number: missing_information is not\n  requested" in rules
    synth = mono.generate(BLUEPRINT, seed=0)
    repair = server.requests[-1].body["messages"][-1]["content"]
    assert "missing_information is not requested" in repair
    assert verifier.verify(synth.task, mono.rollout(synth, 0).messages).passed
    lacking = BLUEPRINT.model_copy(
        update={
            "selections": {**BLUEPRINT.selections, "interaction_challenge": ["missing_information"]}
        }
    )
    rules = mono.prompt(lacking, seed=0).split("RULES", 1)[1]
    assert "- unknown_info names the id or number the customer does not have" in rules
    assert "It names no id" not in rules
