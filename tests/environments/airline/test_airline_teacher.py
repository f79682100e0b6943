"""The programmatic airline Teacher: policy-shaped conversations with real observations."""

from __future__ import annotations

import pytest
from tau2.data_model.message import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolMessage,
    UserMessage,
)

from evosyn.agents.verifier import ReplayVerifier
from evosyn.environments import FunctionalSymbol, get_domain, information_flow, quality
from evosyn.environments.airline.generator import FAMILIES, AirlineGenerator
from evosyn.environments.airline.teacher import AirlineTeacher
from evosyn.environments.kit.dialogue import TRANSFER_MESSAGE, TRANSFERRED, first_person
from evosyn.environments.quality import AGENT_GREETING
from evosyn.environments.registry import domain_plugin
from evosyn.records import Blueprint, SynthTask

STOP = "###STOP###"


@pytest.fixture(scope="module")
def generator() -> AirlineGenerator:
    return AirlineGenerator()


@pytest.fixture(scope="module")
def teacher() -> AirlineTeacher:
    return AirlineTeacher()


def blueprint(family: str, outcome: str, challenges: tuple[str, ...] = ()) -> Blueprint:
    return Blueprint(
        campaign_id="test",
        round=2,
        blueprint_id=f"tb-{family}-{outcome}",
        direction_id="d0",
        space_version=1,
        selections={
            "task_family": [family],
            "expected_outcome": [outcome],
            "policy_or_constraint_focus": ["loyalty_status_constraint"],
            # Refusals and inquiries write nothing, so they cannot show a confirmed change.
            "tool_use_pattern": (
                ["state_change_with_confirmation"]
                if outcome == "fulfill" and family != "loyalty_or_membership_service"
                else ["policy_check_before_action"]
            ),
            "interaction_challenge": list(challenges),
            "difficulty_profile": ["hard"],
        },
        intent="teacher test",
    )


def synth_tasks(generator: AirlineGenerator) -> list[SynthTask]:
    def challenges(family: str) -> tuple[str, ...]:
        # A new booking has no id to look up (a Planner rule).
        lookup = "user_false_claim" if family == "flight_booking" else "missing_information"
        return (lookup, "multi_intent_interleaving")

    return [
        generator.generate(blueprint(f, o, challenges(f)), 4)
        for f in FAMILIES
        for o in ("fulfill", "refuse")
    ]


def check_shape(messages: list[Message]) -> None:
    """The conversation rules of the airline policy and of τ²-bench's orchestrator."""
    domain = get_domain("airline")
    assert isinstance(messages[0], SystemMessage)
    assert domain.policy() in (messages[0].content or "")
    assert "<instructions>" in (messages[0].content or "")  # as τ²-bench's stock agent sees it
    # The agent greets first, as τ²-bench's orchestrator has it, then the user states the request.
    assert isinstance(messages[1], AssistantMessage) and messages[1].content == AGENT_GREETING
    assert isinstance(messages[2], UserMessage)
    assert isinstance(messages[-1], UserMessage)
    if messages[-1].content == TRANSFERRED:
        # A hand-over ends as τ²-bench's: the transfer call, its message, the user's token.
        assert messages[-2].content == TRANSFER_MESSAGE
        assert messages[-4].tool_calls[0].name == "transfer_to_human_agents"
    else:
        assert STOP in (messages[-1].content or "")
    for index, message in enumerate(messages):
        if isinstance(message, AssistantMessage):
            # One tool call at a time, and never a tool call together with a reply.
            assert (message.content is None) == bool(message.tool_calls)
            assert len(message.tool_calls or []) <= 1
        if isinstance(message, AssistantMessage) and message.tool_calls:
            call = message.tool_calls[0]
            answer = messages[index + 1]
            assert isinstance(answer, ToolMessage) and answer.id == call.id
            if domain.symbol(call.name) == FunctionalSymbol.WRITE:
                # The policy: details listed, then an explicit yes, right before every write.
                confirm, ask = messages[index - 1], messages[index - 2]
                assert isinstance(confirm, UserMessage)
                assert (confirm.content or "").lower().startswith("yes")
                assert isinstance(ask, AssistantMessage) and ask.content
        if isinstance(message, UserMessage | AssistantMessage) and message.content:
            following = messages[index + 1] if index + 1 < len(messages) else None
            # Text turns alternate between user and agent.
            if (
                following is not None
                and not isinstance(following, ToolMessage)
                and following.content is not None
            ):
                assert type(following) is not type(message)


def test_trajectories_verify_and_follow_the_policy(
    generator: AirlineGenerator, teacher: AirlineTeacher
) -> None:
    verifier = ReplayVerifier("airline", strict=True)
    for synth in synth_tasks(generator):
        trajectory = teacher.rollout(synth, seed=9)
        assert trajectory.task_id == synth.task_id
        assert (trajectory.campaign_id, trajectory.round) == ("test", 2)
        check_shape(trajectory.messages)
        verdict = verifier.verify(synth.task, trajectory.messages)
        assert verdict.passed, (synth.task_id, verdict.reasons)
        # Every expected answer is said where it answers the user's question.
        assert quality.out_of_context_answers(synth.task, trajectory.messages) == []


def test_observations_are_real(generator: AirlineGenerator, teacher: AirlineTeacher) -> None:
    domain = get_domain("airline")
    synth = generator.generate(blueprint("flight_change", "fulfill"), 2)
    messages = teacher.rollout(synth, seed=1).messages
    state = domain.initial_state(synth.task)
    calls = 0
    for index, message in enumerate(messages):
        if isinstance(message, AssistantMessage) and message.tool_calls:
            expected = domain.execute(state, message.tool_calls[0])
            recorded = messages[index + 1]
            assert isinstance(recorded, ToolMessage)
            assert recorded.content == expected.content
            calls += 1
    assert calls == len(synth.task.evaluation_criteria.actions or [])


def test_a_tampered_trajectory_fails(generator: AirlineGenerator, teacher: AirlineTeacher) -> None:
    synth = generator.generate(blueprint("flight_cancellation", "fulfill"), 2)
    messages = teacher.rollout(synth, seed=1).messages
    # Dropping the closing message loses nothing the DB checks, but drops the write's pair.
    write_index = next(
        i
        for i, m in enumerate(messages)
        if isinstance(m, AssistantMessage)
        and m.tool_calls
        and m.tool_calls[0].name == "cancel_reservation"
    )
    tampered = messages[:write_index] + messages[write_index + 2 :]
    verdict = ReplayVerifier("airline").verify(synth.task, tampered)
    assert not verdict.passed


def test_deterministic_and_varied(generator: AirlineGenerator, teacher: AirlineTeacher) -> None:
    synth = generator.generate(blueprint("seat_or_baggage_service", "fulfill"), 1)
    first = teacher.rollout(synth, seed=5)
    again = AirlineTeacher().rollout(synth, seed=5)
    assert first.model_dump_json() == again.model_dump_json()
    texts = {
        tuple(m.content for m in teacher.rollout(synth, seed=s).messages if m.content)
        for s in range(6)
    }
    assert len(texts) > 1
    assert teacher.rollout(synth, seed=5, attempt=1).attempt == 1


def test_the_cancellation_reason_is_the_tasks_cue(
    generator: AirlineGenerator, teacher: AirlineTeacher
) -> None:
    synth = generator.generate(blueprint("flight_cancellation", "fulfill"), 0)
    criteria = synth.task.evaluation_criteria
    assert criteria is not None
    cancels = [a for a in criteria.actions or [] if a.name == "cancel_reservation"]
    assert cancels and set(synth.cues) == {a.action_id for a in cancels}
    for action in cancels:
        # The exported note keeps its words; what the user says is the cue.
        assert (action.info or "").startswith("reason: ")
        assert synth.cues[action.action_id].startswith("The reason is ")
    said = [m.content for m in teacher.rollout(synth, seed=0).messages if m.role == "user"]
    assert set(synth.cues.values()) <= set(said)
    # A task without cues (an LLM Generator's) still has the agent ask, as the policy
    # requires for every cancellation; the caller answers from their instructions.
    bare = teacher.rollout(synth.model_copy(update={"cues": {}}), seed=0).messages
    asked = [
        i for i, m in enumerate(bare) if m.role == "assistant" and "reason" in (m.content or "")
    ]
    assert len(asked) >= len(cancels)
    assert all(bare[i + 1].role == "user" and bare[i + 1].content for i in asked)
    assert ReplayVerifier("airline").verify(synth.task, bare).passed


def test_official_tasks_roll_out_too(teacher: AirlineTeacher) -> None:
    # The blind agent acts on an official task only with what the caller's instructions
    # and the records give it: never an unseen value. Where it would need a flight search
    # the scripted agent does not make, it leaves the write out and replay rejects it.
    verifier = ReplayVerifier("airline")
    domain = get_domain("airline")
    rules = domain_plugin("airline").flow
    assert rules is not None
    verified = 0
    tasks = domain.tasks()
    for task in tasks:
        messages = teacher.messages(task, seed=0)
        assert information_flow.flow_breaks(domain, rules, messages) == [], task.id
        verified += verifier.verify(task, messages).passed
    assert verified >= len(tasks) // 2


def test_first_person() -> None:
    assert first_person("You want to cancel your trip.") == "I want to cancel my trip."
    assert first_person("You are upset; you want help.") == "I am upset; I want help."
    # An object is "me": a telecom caller said "a replacement device shipped to I".
    assert (
        first_person("You want a new phone shipped to you.") == "I want a new phone shipped to me."
    )
    assert first_person("Ask if it is ready for you, then wait.") == (
        "Ask if it is ready for me, then wait."
    )
