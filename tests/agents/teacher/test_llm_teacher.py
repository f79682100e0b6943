"""The LLM teacher: τ²-bench's orchestrator, gateway calls over real HTTP, Repair, faults."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llm_scripts import gold_script, planned_write_task
from openai_server import OpenAIServer, Reply
from tau2.data_model.message import ToolMessage

from evosyn.agents.gateway import Completion
from evosyn.agents.synthesis import MAX_REPAIRS, synthesize
from evosyn.agents.teacher import Attempt
from evosyn.agents.teacher.llm import (
    LLMTeacher,
    RolloutError,
    parse_tool_calls,
    render,
    user_choices,
)
from evosyn.agents.verifier import ReplayVerifier
from evosyn.config import CampaignConfig, LLMSection, ModelSettings
from evosyn.records import Blueprint, SynthTask


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


def test_templates_render_policy_brief_and_repair() -> None:
    repair = render("repair.j2", attempt=1, reasons=["db: mismatch"], calls=["f({})"])
    prompt = render(
        "teacher.j2", domain="airline", policy="POLICY TEXT", brief="Purpose: x", repair=repair
    )
    assert "POLICY TEXT" in prompt and "Purpose: x" in prompt
    assert "- db: mismatch" in prompt and "1. f({})" in prompt
    assert "<repair" not in render("teacher.j2", domain="a", policy="p", brief="", repair="")


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
        brief="",
        repair="",
        handling=list(HANDLING.values()),
        choices=user_choices("airline"),
    )
    assert all(rule in prompt for rule in HANDLING.values())
    assert "never pick one for them" in prompt and "state the amount" in prompt
