"""The LLM teacher: τ²-bench's orchestrator, gateway calls over real HTTP, Repair, faults."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llm_scripts import conversation, gold_script, planned_write_task
from openai_server import OpenAIServer, Reply
from tau2.data_model.message import AssistantMessage, ToolMessage

from evosyn.agents.gateway import Completion
from evosyn.agents.synthesis import MAX_REPAIRS, gate_breaks, synthesize
from evosyn.agents.teacher import UNACTED_CHALLENGE, UNACTED_PERSONA, Attempt
from evosyn.agents.teacher.llm import (
    LLMTeacher,
    RolloutError,
    parse_tool_calls,
    render,
    user_choices,
)
from evosyn.agents.verifier import ReplayVerifier
from evosyn.config import CampaignConfig, LLMSection, ModelSettings
from evosyn.records import Blueprint, SynthTask, Trajectory, Verification


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with OpenAIServer() as srv:
        yield srv


@pytest.fixture(scope="module")
def verifier() -> ReplayVerifier:
    return ReplayVerifier("airline")


@pytest.fixture(scope="module")
def write_task() -> SynthTask:
    return planned_write_task()


def config(server: OpenAIServer, tmp_path: Path, **teacher: Any) -> CampaignConfig:
    base = ModelSettings(
        model="openai/teacher-model",
        api_base=server.url,
        timeout=teacher.pop("timeout", 5.0),
        backoff_base_s=0.01,
        cache_dir=str(tmp_path / "cache"),
    )
    return CampaignConfig(
        llm=LLMSection(
            default=base,
            roles={"user_simulator": ModelSettings(model="openai/user-model")},
        )
    )


def systems(server: OpenAIServer, model: str) -> list[str]:
    return [r.body["messages"][0]["content"] for r in server.requests if r.body["model"] == model]


# ------------------------------------------------------------------ prompts and parsing


def test_templates_render_policy_and_repair() -> None:
    repair = render("repair.j2", attempt=1, reasons=["db: mismatch"], calls=["#0 f({})"])
    prompt = render("teacher.j2", domain="airline", policy="POLICY TEXT", repair=repair)
    assert "POLICY TEXT" in prompt
    assert "- db: mismatch" in prompt and "\n#0 f({})" in prompt
    assert "<repair" not in render("teacher.j2", domain="a", policy="p", repair="")


def test_tool_call_arguments_parse_or_pass_through() -> None:
    def completion(arguments: str) -> Completion:
        call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": arguments}}
        return Completion(call_id="x", model="m", tool_calls=[call])

    [good] = parse_tool_calls(completion('{"a": 1}'), "assistant") or []
    assert (good.name, good.arguments, good.requestor) == ("f", {"a": 1}, "assistant")
    [bad] = parse_tool_calls(completion('{"a": '), "user") or []
    assert bad.arguments == {"__raw_arguments__": '{"a": '}
    assert parse_tool_calls(Completion(call_id="x", model="m"), "assistant") is None


# ------------------------------------------------------------------ rollouts


def test_rollout_of_a_synthesized_task_passes_the_verifier(
    server: OpenAIServer, tmp_path: Path, write_task: SynthTask, verifier: ReplayVerifier
) -> None:
    script = gold_script(write_task)
    server.script(*script)
    teacher = LLMTeacher.from_config(config(server, tmp_path))
    trajectory = teacher.rollout(write_task, seed=3)
    assert server.request_count == len(script)
    verdict = verifier.verify(write_task.task, trajectory.messages)
    assert verdict.passed, verdict.reasons
    assert (trajectory.teacher, trajectory.attempt) == ("llm", 0)
    # Both models were called, each with its own prompt and the agent with the tool schemas.
    agent_requests = [r for r in server.requests if r.body["model"] == "teacher-model"]
    user_requests = [r for r in server.requests if r.body["model"] == "user-model"]
    assert agent_requests and user_requests
    assert "book_reservation" in json.dumps(agent_requests[0].body["tools"])
    assert "tools" not in user_requests[0].body
    assert "<policy>" in agent_requests[0].body["messages"][0]["content"]
    assert "<scenario>" in user_requests[0].body["messages"][0]["content"]
    # Every call is an llm_calls row of its role.
    agent_gw, user_gw = teacher.gateways
    assert len(agent_gw.records("c", 1)) == len(agent_requests)
    assert {r.role for r in user_gw.records("c", 1)} == {"user_simulator"}
    # Observations are the environment's, not the model's.
    tools = [m for m in trajectory.messages if isinstance(m, ToolMessage)]
    assert tools and all(not t.error for t in tools)


def test_repair_shows_reasons_and_replays_from_the_original_state(
    server: OpenAIServer, tmp_path: Path, write_task: SynthTask, verifier: ReplayVerifier
) -> None:
    teacher = LLMTeacher.from_config(config(server, tmp_path))
    server.script(*gold_script(write_task, drop_writes=True))
    first = teacher.rollout(write_task, seed=3)
    failed = verifier.verify(write_task.task, first.messages)
    assert not failed.passed
    assert failed.reasons, failed

    server.reset()
    server.script(*gold_script(write_task))
    previous = Attempt(trajectory=first, verification=failed)
    repaired = teacher.rollout(write_task, seed=3, attempt=1, previous=previous)
    assert repaired.attempt == 1
    verdict = verifier.verify(write_task.task, repaired.messages)
    assert verdict.passed, verdict.reasons
    prompt = systems(server, "teacher-model")[0]
    assert "failed the replay verifier" in prompt
    assert all(reason in prompt for reason in failed.reasons)
    # The user simulator never sees the repair.
    assert all("replay verifier" not in s for s in systems(server, "user-model"))


def verdict_of(trajectory: Trajectory, reasons: list[str]) -> Verification:
    """A failed verdict on ``trajectory`` with ``reasons``, as synthesis hands it to Repair."""
    return Verification(
        campaign_id=trajectory.campaign_id,
        round=trajectory.round,
        task_id=trajectory.task_id,
        trajectory_id=trajectory.trajectory_id,
        passed=False,
        reward=1.0,
        reasons=reasons,
    )


def test_each_repair_reason_goes_to_the_side_that_can_fix_it(
    server: OpenAIServer, tmp_path: Path, write_task: SynthTask, verifier: ReplayVerifier
) -> None:
    teacher = LLMTeacher.from_config(config(server, tmp_path))
    server.script(*gold_script(write_task))
    first = teacher.rollout(write_task, seed=3)
    unacted = f"{UNACTED_PERSONA}: busy"
    agent_fault = "choice: tool call #1 book_reservation argument cabin: the user never named it"
    # Only the user simulator failed: its instructions say what it did not act out, and the
    # agent is told nothing (it could not act out the customer's manner).
    server.reset()
    server.script(*gold_script(write_task))
    previous = Attempt(trajectory=first, verification=verdict_of(first, [unacted]))
    again = teacher.rollout(write_task, seed=3, attempt=1, previous=previous)
    assert verifier.verify(write_task.task, again.messages).passed
    agent, user = systems(server, "teacher-model"), systems(server, "user-model")
    assert agent and all("<repair" not in s and unacted not in s for s in agent)
    assert user and all('<repair attempt="1">' in s and f"- {unacted}" in s for s in user)
    # Both failed: each side gets its own reasons, and only its own.
    server.reset()
    server.script(*gold_script(write_task))
    mixed = verdict_of(first, [agent_fault, f"{UNACTED_CHALLENGE}: user_false_claim", unacted])
    teacher.rollout(
        write_task, seed=3, attempt=2, previous=Attempt(trajectory=first, verification=mixed)
    )
    agent, user = systems(server, "teacher-model"), systems(server, "user-model")
    assert all(f"- {agent_fault}" in s and "not acted out" not in s for s in agent)
    assert all(agent_fault not in s for s in user)
    assert all(f"- {UNACTED_CHALLENGE}: user_false_claim" in s and unacted in s for s in user)


def test_a_persona_not_acted_out_is_repaired_by_the_user_simulator(
    server: OpenAIServer, tmp_path: Path, write_task: SynthTask, verifier: ReplayVerifier
) -> None:
    task = write_task.model_copy(deep=True)
    task.task.user_scenario.persona = "You are chatty and like a friendly word on the way."
    plain = conversation(write_task)  # as the brief customer of the task before, no aside
    # The second time the customer adds an aside to their first words, nothing else changes.
    first_user = next(i for i, (who, _) in enumerate(plain) if who == "user_simulator")
    opening = f"{plain[first_user][1].content} My dog is snoring right next to me, ha."
    chatty = [reply for _, reply in plain]
    chatty[first_user] = Reply.text(opening)
    teacher = LLMTeacher.from_config(config(server, tmp_path))
    server.script(*(reply for _, reply in plain), *chatty)
    batch = synthesize([blueprint_of(task)], _Fixed(task), teacher, verifier, seed=3)
    [verdict] = batch.verifications
    assert verdict.passed and verdict.repair_attempts == 1, verdict.reasons
    assert verdict.repaired_from == [f"{UNACTED_PERSONA}: chatty"]
    # The repair went to the user simulator's instructions, and the agent was told nothing.
    repaired = [s for s in systems(server, "user-model") if '<repair attempt="1">' in s]
    assert repaired and all(f"- {UNACTED_PERSONA}: chatty" in s for s in repaired)
    assert all("<repair" not in s for s in systems(server, "teacher-model"))


def test_the_repair_numbers_the_calls_as_the_checks_do(
    server: OpenAIServer, tmp_path: Path, write_task: SynthTask, verifier: ReplayVerifier
) -> None:
    teacher = LLMTeacher.from_config(config(server, tmp_path))
    server.script(*gold_script(write_task))
    messages = [m.model_copy(deep=True) for m in teacher.rollout(write_task, seed=3).messages]
    calls = [c for m in messages if isinstance(m, AssistantMessage) for c in m.tool_calls or []]
    # The last call gets an argument its schema lacks (the verifier's numbering), the one
    # before it an id the agent never saw (the information-flow gate's).
    calls[-1].arguments["bogus"] = 1
    calls[-2].arguments = {**calls[-2].arguments, "reservation_id": "ZZ9ZZ9"}
    reasons = [
        *[w for w in verifier.verify(write_task.task, messages).warnings if "bogus" in w],
        *[b for b in gate_breaks("airline", messages) if "ZZ9ZZ9" in b],
    ]
    assert len(reasons) == 2, reasons
    listed = teacher.repair_section(1, reasons, messages).splitlines()
    for reason, call in zip(reasons, calls[-1:-3:-1], strict=True):
        number = re.search(r"tool call #(\d+) (\w+)", reason)
        assert number and number.group(2) == call.name, reason
        [line] = [line for line in listed if line.startswith(f"#{number.group(1)} ")]
        assert line.startswith(f"#{number.group(1)} {call.name}(")


class _Fixed:
    """A generator that always returns the same task."""

    def __init__(self, task: SynthTask) -> None:
        self.task = task

    def generate(self, blueprint: Blueprint, seed: int, screen: Any = None) -> SynthTask:
        return self.task


def blueprint_of(task: SynthTask) -> Blueprint:
    return Blueprint(
        campaign_id=task.campaign_id,
        round=task.round,
        blueprint_id=task.blueprint_id,
        direction_id="d0",
        space_version=1,
        selections={},
        intent="test",
    )


def test_synthesis_repairs_a_failing_pseudo_gold(
    server: OpenAIServer, tmp_path: Path, write_task: SynthTask, verifier: ReplayVerifier
) -> None:
    teacher = LLMTeacher.from_config(config(server, tmp_path))
    server.script(*gold_script(write_task, drop_writes=True), *gold_script(write_task))
    batch = synthesize([blueprint_of(write_task)], _Fixed(write_task), teacher, verifier, seed=3)
    [verdict] = batch.verifications
    assert verdict.passed, verdict.reasons
    assert verdict.repair_attempts == 1
    assert not batch.rejections
    assert "failed the replay verifier" in systems(server, "teacher-model")[-1]


def test_a_repaired_verdict_keeps_every_reason_of_the_failed_attempt(
    server: OpenAIServer, tmp_path: Path, write_task: SynthTask, verifier: ReplayVerifier
) -> None:
    # The customer leaves the cabin, bags, insurance and card to the agent, who picks them:
    # reward 1, and a choice made for the customer on each of them.
    criteria = write_task.task.evaluation_criteria
    assert criteria is not None
    [book] = [a for a in criteria.actions or [] if a.name == "book_reservation"]
    cabin = str(book.arguments["cabin"])
    slipped = [
        Reply.text("Whatever you think is best.")
        if who == "user_simulator" and cabin in (reply.content or "")
        else reply
        for who, reply in conversation(write_task)
    ]
    teacher = LLMTeacher.from_config(config(server, tmp_path))
    server.script(*slipped)
    reasons = gate_breaks("airline", teacher.rollout(write_task, seed=3).messages)
    assert len(reasons) > 1, reasons
    server.reset()
    server.script(*slipped, *gold_script(write_task))
    batch = synthesize([blueprint_of(write_task)], _Fixed(write_task), teacher, verifier, seed=3)
    [verdict] = batch.verifications
    assert verdict.passed and verdict.repair_attempts == 1, verdict.reasons
    [failed] = verdict.repaired_from
    assert all(reason in failed for reason in reasons), failed


def test_repair_stops_after_two_attempts(
    server: OpenAIServer, tmp_path: Path, write_task: SynthTask, verifier: ReplayVerifier
) -> None:
    teacher = LLMTeacher.from_config(config(server, tmp_path))
    bad = gold_script(write_task, drop_writes=True)
    server.script(*bad, *bad, *bad, *gold_script(write_task))
    batch = synthesize([blueprint_of(write_task)], _Fixed(write_task), teacher, verifier, seed=3)
    [verdict] = batch.verifications
    assert not verdict.passed
    assert verdict.repair_attempts == MAX_REPAIRS == 2
    [rejection] = batch.rejections
    assert rejection.stage == "verify" and rejection.reason
    # Three rollouts, no fourth: the good script was never requested.
    assert server.request_count == 3 * len(bad)
    prompts = systems(server, "teacher-model")
    assert sum('<repair attempt="2">' in p for p in prompts) > 0
    assert sum('<repair attempt="3">' in p for p in prompts) == 0


def test_faults_are_retried_and_accounted(
    server: OpenAIServer, tmp_path: Path, write_task: SynthTask, verifier: ReplayVerifier
) -> None:
    script = gold_script(write_task)
    faulty = [
        Reply.rate_limited(retry_after=0.05),
        script[0],
        script[1],
        Reply.server_error(),
        script[2],
        Reply.slow(3.0),
        *script[3:],
    ]
    server.script(*faulty)
    teacher = LLMTeacher.from_config(config(server, tmp_path, timeout=1.0))
    trajectory = teacher.rollout(write_task, seed=3)
    assert verifier.verify(write_task.task, trajectory.messages).passed
    rows = [r for gw in teacher.gateways for r in gw.records("c", 1)]
    errors = sorted(r.error_class or "" for r in rows if r.outcome == "error")
    assert len(errors) == 3
    assert "RateLimitError" in errors and any("Timeout" in e for e in errors)
    assert sum(r.outcome == "ok" for r in rows) == len(script)
    assert len(rows) == server.request_count == len(faulty)


def test_an_empty_agent_turn_is_a_recorded_rollout_rejection(
    server: OpenAIServer, tmp_path: Path, write_task: SynthTask, verifier: ReplayVerifier
) -> None:
    teacher = LLMTeacher.from_config(config(server, tmp_path))
    server.script(gold_script(write_task)[0], Reply.text("   "))
    with pytest.raises(RolloutError, match="message protocol"):
        teacher.rollout(write_task, seed=3)
    server.reset()
    server.script(gold_script(write_task)[0], Reply.text(""))
    batch = synthesize([blueprint_of(write_task)], _Fixed(write_task), teacher, verifier, seed=3)
    [rejection] = batch.rejections
    assert (rejection.stage, rejection.error_class) == ("rollout", "RolloutError")
    assert not batch.verifications


def test_the_prompts_state_what_each_challenge_and_persona_requires() -> None:
    from evosyn.agents.teacher.llm import acting_brief
    from evosyn.environments.dialogue_acts import ACTING, HANDLING
    from evosyn.environments.registry import get_domain
    from evosyn.records import SynthTask

    official = get_domain("airline").tasks()[0].model_copy(deep=True)
    task = SynthTask(
        campaign_id="c",
        round=1,
        task_id=official.id,
        blueprint_id="b",
        domain="airline",
        task=official,
        requested={"interaction_challenge": ["user_false_claim", "preference_change"]},
    )
    task.task.user_scenario.persona = "You are careful and like to double-check details."
    brief = acting_brief(task)
    for wanted in ("user_false_claim", "preference_change", "careful"):
        assert ACTING[wanted] in brief
    assert ACTING["missing_information"] not in brief
    # The agent is told how to handle every challenge, never which one this task has.
    prompt = render(
        "teacher.j2",
        domain="airline",
        policy="p",
        repair="",
        handling=list(HANDLING.values()),
        choices=user_choices("airline"),
    )
    assert all(rule in prompt for rule in HANDLING.values())
    assert "never pick one for them" in prompt and "state the amount" in prompt
    # ... and how to meet every manner a customer may have, which the task does not say either.
    for manner in ("short of time", "friendly aside", "first time", "go\nover the details"):
        assert manner in prompt, manner


def test_the_missing_id_rule_leaves_the_pick_to_the_customer_as_the_gate_requires() -> None:
    # The agent is told to say what it found and let the customer say which: the gate counts
    # that as the customer's choice, and a yes to a reservation the agent put forward not.
    from tau2.data_model.message import SystemMessage, ToolCall, UserMessage

    from evosyn.environments.dialogue_acts import HANDLING
    from evosyn.environments.information_flow import flow_breaks
    from evosyn.environments.registry import domain_plugin, get_domain

    rule = HANDLING["missing_information"]
    assert "tell the customer what you found" in rule and "say which one" in rule
    assert "never guess one or pick one for them to confirm" in rule
    domain = get_domain("airline")
    rules = domain_plugin("airline").flow
    assert rules is not None
    state = domain.initial_state()
    user = "mia_li_3668"

    def call(name: str, number: int, **arguments: object) -> list[Any]:
        made = ToolCall(id=f"c{number}", name=name, arguments=arguments, requestor="assistant")
        return [AssistantMessage(role="assistant", tool_calls=[made]), domain.execute(state, made)]

    reservations = state.db.users[user].reservations
    looked_up = [
        SystemMessage(role="system", content="policy"),
        UserMessage(role="user", content=f"I'm {user}; I want to cancel a trip but lost the id."),
        *call("get_user_details", 0, user_id=user),
        *[
            m
            for i, r in enumerate(reservations)
            for m in call("get_reservation_details", i + 1, reservation_id=r)
        ],
    ]
    trips = [state.db.reservations[r] for r in reservations]
    cancel = AssistantMessage(
        role="assistant",
        tool_calls=[
            ToolCall(
                id="w",
                name="cancel_reservation",
                arguments={"reservation_id": reservations[1]},
                requestor="assistant",
            )
        ],
    )
    chosen = trips[1]
    listed = "; ".join(f"{t.origin} to {t.destination}" for t in trips)
    followed = [
        *looked_up,
        AssistantMessage(role="assistant", content=f"I found these trips: {listed}. Which one?"),
        UserMessage(role="user", content=f"The one from {chosen.origin} to {chosen.destination}."),
        AssistantMessage(role="assistant", content="I'll cancel it. Shall I go ahead?"),
        UserMessage(role="user", content="Yes."),
        cancel,
    ]
    assert not any("reservation_id" in b for b in flow_breaks(domain, rules, followed))
    proposed = [
        *looked_up,
        AssistantMessage(
            role="assistant",
            content=f"I found your trip from {chosen.origin} to {chosen.destination} "
            f"({reservations[1]}). Shall I cancel it?",
        ),
        UserMessage(role="user", content="Yes."),
        cancel,
    ]
    breaks = [b for b in flow_breaks(domain, rules, proposed) if "reservation_id" in b]
    assert breaks and "not their choice" in breaks[0]
