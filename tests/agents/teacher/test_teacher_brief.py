"""What the LLM teacher's agent is told of its task, rendered through ``system_prompt``."""

from __future__ import annotations

from tau2.data_model.tasks import Description

from evosyn.agents.gateway import Gateway, GatewaySettings
from evosyn.agents.teacher.llm import LLMTeacher
from evosyn.environments.registry import get_domain

GATEWAY = Gateway("test", GatewaySettings(model="openai/unused", api_base="http://127.0.0.1:9/v1"))


def test_the_brief_gives_the_reason_for_the_call_but_not_the_expected_outcome() -> None:
    task = get_domain("airline").tasks()[0].model_copy(deep=True)
    task.description = Description(
        purpose="The policy forbids cancelling a basic economy ticket: the agent must refuse.",
        relevant_policies=None,
        notes="Expected outcome: refuse, no write.",
    )
    reason = task.user_scenario.instructions.reason_for_call  # type: ignore[union-attr]
    prompt = LLMTeacher(GATEWAY, GATEWAY, "airline").system_prompt(task)
    brief = prompt.split("<task_brief>", 1)[1].split("</task_brief>", 1)[0]
    assert f"Reason for the call: {reason}" in brief
    for told in (
        "must refuse",
        "policy forbids cancelling",
        "Expected outcome",
        "Purpose",
        "Notes",
    ):
        assert told not in prompt
    # Without the brief, the agent is told nothing of the task.
    bare = LLMTeacher(GATEWAY, GATEWAY, "airline", brief=False).system_prompt(task)
    assert "<task_brief>" not in bare and reason not in bare


def test_the_agent_is_told_its_own_domains_choices_and_that_records_are_the_customers() -> None:
    task = get_domain("retail").tasks()[0]
    prompt = LLMTeacher(GATEWAY, GATEWAY, "retail").system_prompt(task)
    assert "the order" in prompt and "each payment" in prompt
    for other in ("the cabin", "insurance", "how much data", "the line,"):
        assert other not in prompt.split("<policy>")[0], other
    assert 'a "yes" to one you found and proposed does not count' in prompt
    telecom = LLMTeacher(GATEWAY, GATEWAY, "telecom").system_prompt(
        get_domain("telecom").tasks()[0]
    )
    assert "the line, how much data" in telecom.split("<policy>")[0]
