"""What the LLM teacher's agent is told, rendered through ``system_prompt``: never its task."""

from __future__ import annotations

from evosyn.agents.gateway import Gateway, GatewaySettings
from evosyn.agents.teacher.llm import LLMTeacher
from evosyn.environments.registry import get_domain

GATEWAY = Gateway("test", GatewaySettings(model="openai/unused", api_base="http://127.0.0.1:9/v1"))


def test_the_agent_is_told_nothing_of_its_task() -> None:
    teacher = LLMTeacher(GATEWAY, GATEWAY, "airline")
    prompt = teacher.system_prompt()
    assert "<policy>" in prompt and "<task_brief>" not in prompt
    # Nothing any task says reaches the agent: not the customer's reason for the call, their
    # instructions nor what the task is for.
    for task in get_domain("airline").tasks()[:20]:
        instructions = task.user_scenario.instructions
        for told in (
            getattr(instructions, "reason_for_call", None),
            getattr(instructions, "task_instructions", None),
            task.description.purpose if task.description else None,
        ):
            assert not told or told not in prompt, told


def test_the_agent_is_told_its_own_domains_choices_and_that_records_are_the_customers() -> None:
    prompt = LLMTeacher(GATEWAY, GATEWAY, "retail").system_prompt()
    rules = prompt.split("<policy>")[0]
    assert (
        "the customer chooses the order, each item, each new item, each payment, the reason and"
        in rules
    )
    for other in ("the cabin", "insurance", "how much data", "the line", "the reservation"):
        assert other not in rules, other
    # The records the customer names are retail's; the payment rule is there, as retail pays.
    assert "Each record you act on (the order, each item and each new item)" in rules
    assert 'a "yes" to the one you proposed does not count as naming it' in rules
    assert "A payment method you charge or refund must be one a tool result showed you" in rules
    telecom = LLMTeacher(GATEWAY, GATEWAY, "telecom").system_prompt().split("<policy>")[0]
    assert "the customer chooses the line and how much data:" in telecom
    assert "Each record you act on (the line)" in telecom
    # Telecom's caller picks no saved payment method for any write: no payment rule.
    assert "A payment method you charge" not in telecom
    airline = LLMTeacher(GATEWAY, GATEWAY, "airline").system_prompt().split("<policy>")[0]
    assert "Each record you act on (the reservation)" in airline
