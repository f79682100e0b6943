"""The agent words its closing from what it has seen: a refusal's reason from its policy model.

The task's notes and assertions are the Generator's; the agent reaches the write the user asks
for that policy forbids only as a sealed request, checks it with its domain's policy model and
says why it will not make it. It asks every cancellation's reason, and writes its own
hand-over summary where the task does not compare it.
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap

import pytest
from tau2.data_model.message import AssistantMessage, Message, UserMessage
from tau2.domains.telecom.data_model import TelecomDB

from evosyn.agents.generator.base import GeneratorRejection
from evosyn.agents.verifier import ReplayVerifier
from evosyn.environments import get_domain
from evosyn.environments.airline import policy as airline_policy
from evosyn.environments.kit import phrasing, scripted
from evosyn.environments.kit.agent import ScriptedAgent
from evosyn.environments.registry import domain_plugin
from evosyn.environments.telecom import policy as telecom_policy
from evosyn.records import Blueprint, SynthTask

#: Refusal families whose request is a write the Generator stores (``SynthTask.refused``).
REFUSING = {
    "airline": ("flight_booking", "flight_cancellation", "flight_change", "refund_or_compensation"),
    "retail": ("order_cancellation", "return_delivered_order", "order_logistics_modification"),
    "telecom": ("billing_issue", "line_management", "plan_change"),
}
SEEDS = range(3)
#: An id the customer never sees: a user id ("james_lee_6136"), a payment method's.
_INTERNAL_ID = re.compile(r"[a-z]_\d")


def _blueprint(family: str, outcome: str, seed: int, focus: str | None = None) -> Blueprint:
    selections = {"task_family": [family], "expected_outcome": [outcome]}
    if focus is not None:
        selections["policy_or_constraint_focus"] = [focus]
    return Blueprint(
        campaign_id="c1",
        round=1,
        blueprint_id=f"bp-{family}-{outcome}-{seed}-{focus}",
        direction_id="d0",
        space_version=1,
        selections=selections,
        intent=f"{family} / {outcome}",
    )


def _task(domain: str, family: str, outcome: str, seed: int, focus: str | None = None) -> SynthTask:
    return (
        domain_plugin(domain).generator().generate(_blueprint(family, outcome, seed, focus), seed)
    )


def _blank(task: SynthTask) -> SynthTask:
    """``task`` without its notes and assertions: nothing of the Generator's wording is left."""
    inner = task.task.model_copy(deep=True)
    if inner.description is not None:
        inner.description.notes = None
    if inner.evaluation_criteria is not None:
        inner.evaluation_criteria.nl_assertions = None
    return task.model_copy(update={"task": inner})


def _recording(domain: str) -> tuple[object, list[ScriptedAgent]]:
    """The domain's Teacher, with every agent side it builds kept for the test to read."""
    built: list[ScriptedAgent] = []
    teacher = domain_plugin(domain).teacher()
    base = teacher.agent_side

    class Recording(base):  # type: ignore[misc, valid-type]
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, **kwargs)  # type: ignore[arg-type]
            built.append(self)

    teacher.agent_side = Recording  # type: ignore[attr-defined]
    return teacher, built


def _said(messages: list[Message]) -> str:
    return " ".join(m.content or "" for m in messages if isinstance(m, AssistantMessage))


@pytest.mark.parametrize("domain", sorted(REFUSING))
def test_every_refused_write_is_refused_with_the_policy_models_reason(domain: str) -> None:
    teacher, built = _recording(domain)
    verifier = ReplayVerifier(domain)
    refused = 0
    for family in REFUSING[domain]:
        for seed in SEEDS:
            try:
                task = _blank(_task(domain, family, "refuse", seed))
            except GeneratorRejection:
                continue
            if not task.refused:
                continue
            refused += 1
            trajectory = teacher.rollout(task, seed)  # type: ignore[attr-defined]
            agent = built[-1]
            assert agent.refusals, (family, seed, task.refused)
            said = _said(trajectory.messages)
            for reason in agent.refusals:
                assert reason in said
                assert phrasing.plain_reason(reason) == reason  # no rule label left
                assert not _INTERNAL_ID.search(reason), reason
            calls = {
                c.name
                for m in trajectory.messages
                if isinstance(m, AssistantMessage)
                for c in m.tool_calls or []
            }
            assert not {w.name for w in task.refused} & calls
            assert verifier.verify(task.task, trajectory.messages).passed, (family, seed)
    assert refused >= len(REFUSING[domain])


def test_an_item_asked_to_become_another_product_is_refused_for_that_rule() -> None:
    for seed in range(12):
        task = _blank(
            _task("retail", "order_item_modification", "refuse", seed, "product_variant_match")
        )
        asked = task.refused[0].arguments
        if "item_ids" in asked and "new_item_ids" not in asked:
            break  # another product: no option of the item's to change to
    else:
        pytest.fail("no item asked to become another product")
    teacher, built = _recording("retail")
    teacher.rollout(task, seed)  # type: ignore[attr-defined]
    assert "another option of the same product" in " ".join(built[-1].refusals)


def test_an_uncovered_cancellation_reason_is_refused_from_what_the_caller_said() -> None:
    # The insured reservation's cancellation turns on the reason, which the call does not
    # carry: the agent asks it and checks it.
    db = get_domain("airline").blank_state().db
    for seed in range(12):
        task = _blank(_task("airline", "flight_cancellation", "refuse", seed, "refund_eligibility"))
        cancel = task.refused[0]
        if cancel.name == "cancel_reservation" and (
            airline_policy.violation(db, cancel.name, cancel.arguments) is None
        ):
            break
    else:
        pytest.fail("no insured cancellation refused for its reason")
    teacher, built = _recording("airline")
    messages = teacher.rollout(task, seed).messages  # type: ignore[attr-defined]
    assert "change of plan" in " ".join(m.content or "" for m in messages if m.role == "user")
    assert "insurance does not cover change of plan" in " ".join(built[-1].refusals)


def test_the_closing_reads_no_note_or_assertion_of_the_task() -> None:
    source = textwrap.dedent(inspect.getsource(scripted.close))
    read = {node.attr for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Attribute)}
    assert not {"notes", "description", "nl_assertions"} & read


def test_every_cancellation_asks_the_reason_even_without_a_cue() -> None:
    task = _task("airline", "flight_cancellation", "fulfill", 0)
    plain = task.model_copy(update={"cues": {}})
    messages = domain_plugin("airline").teacher().rollout(plain, 0).messages
    cancel = next(
        i
        for i, m in enumerate(messages)
        if isinstance(m, AssistantMessage)
        and any(c.name == "cancel_reservation" for c in m.tool_calls or [])
    )
    asked = [
        m.content or ""
        for m in messages[:cancel]
        if isinstance(m, AssistantMessage) and "reason" in (m.content or "")
    ]
    assert asked
    assert ReplayVerifier("airline").verify(plain.task, messages).passed


def test_a_hand_over_summary_is_the_agents_own_where_the_task_does_not_compare_it() -> None:
    task = _task("retail", "order_cancellation", "refuse", 1, "scope_or_escalation_boundary")
    gold = next(
        a for a in task.task.evaluation_criteria.actions if a.name == "transfer_to_human_agents"
    )
    messages = domain_plugin("retail").teacher().rollout(task, 1).messages
    call = next(
        c
        for m in messages
        if isinstance(m, AssistantMessage)
        for c in m.tool_calls or []
        if c.name == "transfer_to_human_agents"
    )
    assert call.arguments["summary"] != gold.arguments["summary"]
    first = next(m.content for m in messages if isinstance(m, UserMessage) and m.content)
    assert first.strip() in call.arguments["summary"]
    assert ReplayVerifier("retail").verify(task.task, messages).passed


def test_telecom_hands_over_in_its_own_words_on_a_transfer_compared_by_name() -> None:
    # Telecom tasks are rewarded on their actions; the transfer is compared by name only, as
    # in τ²-bench's own telecom tasks, so the agent writes the summary from what it heard.
    task = _task("telecom", "device_upgrade", "refuse", 0)
    gold = next(
        a for a in task.task.evaluation_criteria.actions if a.name == "transfer_to_human_agents"
    )
    assert gold.compare_args == []
    messages = domain_plugin("telecom").teacher().rollout(task, 0).messages
    call = next(
        c
        for m in messages
        if isinstance(m, AssistantMessage)
        for c in m.tool_calls or []
        if c.name == "transfer_to_human_agents"
    )
    assert call.arguments["summary"] != gold.arguments["summary"]
    # The customer's id is in the gold's summary and was never said by the customer.
    assert "Customer C" not in call.arguments["summary"]
    said = [m.content for m in messages if isinstance(m, UserMessage) and m.content]
    assert said[0].strip() in call.arguments["summary"]
    assert ReplayVerifier("telecom").verify(task.task, messages).passed


def test_the_policy_models_judge_a_refused_write_as_the_user_asked_for_it() -> None:
    airline = get_domain("airline").blank_state().db
    user = next(
        u
        for u in airline.users.values()
        if sum(m.source == "certificate" for m in u.payment_methods.values()) >= 2
    )
    certificates = [k for k, m in user.payment_methods.items() if m.source == "certificate"][:2]
    booking = {
        "user_id": user.user_id,
        "origin": "JFK",
        "destination": "LAX",
        "flight_type": "one_way",
        "cabin": "economy",
        "payment_methods": [{"payment_id": k} for k in certificates],
    }
    # No party named yet: the payment mix decides, not a party of none.
    assert "certificate" in (airline_policy.violation(airline, "book_reservation", booking) or "")
    party = {k: v for k, v in booking.items() if k != "payment_methods"}
    assert airline_policy.violation(airline, "book_reservation", party) is None
    assert "at most 5 passengers" in (
        airline_policy.violation_in_context(airline, "book_reservation", party, party=7) or ""
    )
    telecom = TelecomDB.model_validate(get_domain("telecom").blank_state().db.model_dump())
    line = telecom.lines[0]
    owner = next(c for c in telecom.customers if line.line_id in c.line_ids)
    account = {"customer_id": owner.customer_id, "line_id": line.line_id}
    line.data_refueling_gb = telecom_policy.MAX_REFUEL_GB
    assert "already had" in (telecom_policy.violation(telecom, "refuel_data", account) or "")
    other = next(c for c in telecom.customers if line.line_id not in c.line_ids)
    roaming = {"line_id": line.line_id}
    assert telecom_policy.violation(telecom, "enable_roaming", roaming) is None
    assert "not on your account" in (
        telecom_policy.violation_in_context(
            telecom, "enable_roaming", roaming, customer_id=other.customer_id
        )
        or ""
    )
