"""The programmatic telecom Teacher: policy-following, dual-control conversations."""

from __future__ import annotations

import pytest
from synthesis_checks import hand_blueprint
from tau2.data_model.message import AssistantMessage, ToolMessage, UserMessage
from tau2.data_model.tasks import Action
from tau2.domains.telecom.data_model import TelecomDB

from evosyn.agents.verifier import ReplayVerifier
from evosyn.environments import FunctionalSymbol, get_domain
from evosyn.environments.telecom import policy
from evosyn.environments.telecom.generator import TelecomGenerator
from evosyn.environments.telecom.teacher import TelecomTeacher, describe
from evosyn.records import Blueprint


@pytest.fixture(scope="module")
def generator() -> TelecomGenerator:
    return TelecomGenerator()


@pytest.fixture(scope="module")
def teacher() -> TelecomTeacher:
    return TelecomTeacher()


def _blueprint(family: str, outcome: str, writes: str | None = None, index: int = 0) -> Blueprint:
    return hand_blueprint(
        family,
        outcome,
        focus=["eligibility_check"],
        patterns=["diagnose_then_resolve"] if outcome == "fulfill" else [],
        controls=None if writes is None else {"num_write": writes},
        difficulty="hard",
        blueprint_id=f"bp-{family}-{outcome}-{writes}-{index}",
    )


def test_conversation_follows_the_procedure(
    generator: TelecomGenerator, teacher: TelecomTeacher
) -> None:
    task = generator.generate(_blueprint("line_management", "fulfill", "5+"), seed=1)
    messages = teacher.rollout(task, seed=1).messages
    assert messages[0].role == "system" and "telecom agent policy" in messages[0].content.lower()
    domain = get_domain("telecom")
    agent_calls = [
        (index, call)
        for index, m in enumerate(messages)
        if isinstance(m, AssistantMessage)
        for call in m.tool_calls or []
    ]
    assert agent_calls[0][1].name in policy.IDENTIFY_TOOLS
    for index, call in agent_calls:
        if domain.symbol(call.name) == FunctionalSymbol.WRITE:
            before = messages[index - 1]
            assert isinstance(before, UserMessage) and (before.content or "").startswith("Yes")
    assert "###STOP###" in (messages[-1].content or "")
    for message in messages:
        assert not (message.content and getattr(message, "tool_calls", None))


def test_the_user_acts_on_the_phone_and_reports_what_it_shows(
    generator: TelecomGenerator, teacher: TelecomTeacher
) -> None:
    task = generator.generate(_blueprint("service_troubleshooting", "fulfill", "3-4"), seed=2)
    messages = teacher.rollout(task, seed=2).messages
    domain = get_domain("telecom")
    user_calls = [
        index for index, m in enumerate(messages) if isinstance(m, UserMessage) and m.tool_calls
    ]
    assert len(user_calls) >= 4  # a check and three fixes
    reported = False
    for index in user_calls:
        asked, observed, report = messages[index - 1], messages[index + 1], messages[index + 2]
        call = messages[index].tool_calls[0]
        assert isinstance(asked, AssistantMessage) and asked.content
        assert isinstance(observed, ToolMessage) and observed.requestor == "user"
        # The user says in words what the phone showed: no raw fields, no icons.
        assert isinstance(report, UserMessage) and report.content
        assert "Status Bar:" not in report.content and "📶" not in report.content
        assert not any(
            line in report.content for line in (observed.content or "").splitlines() if ": " in line
        )
        if domain.symbol(call.name, "user") == FunctionalSymbol.WRITE:
            # A fix is prescribed only after the user reported what the phone shows: a
            # check, or what the status bar shows, said when the caller described the problem.
            said = " ".join(m.content or "" for m in messages[:index] if isinstance(m, UserMessage))
            assert reported or "status bar shows" in said, call.name
        else:
            reported = True


def test_every_phone_output_reads_as_words() -> None:
    from evosyn.environments.telecom.teacher import in_words

    network = (
        "Airplane Mode: ON\nSIM Card Status: missing\nCellular Connection: no_service\n"
        "Cellular Signal: none\nCellular Network Type: none\nMobile Data Enabled: No\n"
        "Data Roaming Enabled: No\nWi-Fi Radio: OFF\nWi-Fi Connected: No"
    )
    said = in_words("check_network_status", network)
    assert "airplane mode is on" in said.lower() and "SIM card is missing" in said
    assert "mobile data is off" in said and ":" not in said
    bar = in_words(
        "toggle_data",
        "Mobile Data is now ON.\nStatus Bar: 📶³ Good | 5G | 📱 Data Enabled | 🔋 80%",
    )
    assert bar == (
        "Mobile Data is now ON. The status bar shows a good signal, 5G, mobile data on and "
        "battery at 80%."
    )
    apn = in_words(
        "check_apn_settings",
        "Current APN Name: internet\nMMSC URL (for picture messages): Not Set\n(These are "
        "technical settings, usually best left unchanged.)",
    )
    assert apn == "The APN name is internet and the MMSC URL for picture messages is not set."


def test_observations_are_the_real_ones(
    generator: TelecomGenerator, teacher: TelecomTeacher
) -> None:
    verifier = ReplayVerifier("telecom")
    for index, family in enumerate(("plan_change", "billing_issue", "line_management")):
        task = generator.generate(_blueprint(family, "fulfill", index=index), seed=index)
        messages = teacher.rollout(task, seed=index).messages
        report = verifier.report(task.task, messages)
        assert report.reward == 1.0 and not report.tool_issues, report.reasons


def test_rollouts_are_deterministic_and_vary_by_attempt(
    generator: TelecomGenerator, teacher: TelecomTeacher
) -> None:
    task = generator.generate(_blueprint("billing_issue", "fulfill", "2"), seed=3)
    first = [m.model_dump_json() for m in teacher.rollout(task, seed=3).messages]
    again = [m.model_dump_json() for m in teacher.rollout(task, seed=3).messages]
    assert first == again
    others = {
        tuple(m.content or "" for m in teacher.rollout(task, seed=3, attempt=a).messages)
        for a in range(1, 5)
    }
    assert len(others) >= 2


def test_refusal_closes_with_the_rule_and_transfer_ends_the_call(
    generator: TelecomGenerator, teacher: TelecomTeacher
) -> None:
    refused = generator.generate(_blueprint("billing_issue", "refuse"), seed=4)
    closing = teacher.rollout(refused, seed=4).messages[-2]
    assert "only for overdue bills" in (closing.content or "")
    handed = generator.generate(_blueprint("device_upgrade", "refuse"), seed=4)
    messages = teacher.rollout(handed, seed=4).messages
    assert messages[-4].tool_calls[0].name == "transfer_to_human_agents"  # type: ignore[union-attr]
    assert "TRANSFERRED TO A HUMAN" in (messages[-2].content or "")
    assert messages[-1].content == "###TRANSFER###"  # the user's end of a transfer in τ²-bench


def test_describe_names_every_account_change_as_the_customer_knows_it() -> None:
    state = get_domain("telecom").initial_state()
    line = state.db_of(TelecomDB).lines[0]
    owner = {"customer_id": "C1001", "line_id": line.line_id}
    cases = {
        "refuel_data": {**owner, "gb_amount": 1.5},
        "resume_line": owner,
        "enable_roaming": owner,
    }
    for name, arguments in cases.items():
        text = describe(Action(action_id="a", name=name, arguments=arguments), state)
        assert not text.startswith("call ")
        # A line is its phone number to the caller; its internal id is never read out.
        assert line.phone_number in text and line.line_id not in text
    refuel_action = Action(action_id="a", name="refuel_data", arguments=cases["refuel_data"])
    refuel = describe(refuel_action, state)
    assert "1.5 GB" in refuel and "$" in refuel  # the price is stated before the yes
