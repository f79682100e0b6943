"""The telecom policy model: its rules on the real database and in the replay verifier."""

from __future__ import annotations

from typing import Any

import pytest

from evosyn.agents.verifier import ReplayVerifier
from evosyn.environments import get_domain
from evosyn.environments.telecom import policy
from evosyn.environments.telecom.generator import TelecomGenerator
from evosyn.environments.telecom.teacher import TelecomTeacher
from evosyn.environments.trajectories import gold_trajectory
from evosyn.records import Blueprint


@pytest.fixture(scope="module")
def db() -> Any:
    return get_domain("telecom").blank_state().env.tools.db


def test_refuel_is_capped_at_two_gigabytes(db: Any) -> None:
    args = {"customer_id": "C1001", "line_id": "L1001"}
    assert policy.violation(db, "refuel_data", {**args, "gb_amount": 2.0}) is None
    broken = policy.violation(db, "refuel_data", {**args, "gb_amount": 2.5})
    assert broken is not None and "at most 2 GB" in broken


def test_payment_requests_are_only_for_overdue_bills(db: Any) -> None:
    assert (
        policy.violation(db, "send_payment_request", {"customer_id": "C1002", "bill_id": "B1005"})
        is None
    )
    broken = policy.violation(
        db, "send_payment_request", {"customer_id": "C1001", "bill_id": "B1002"}
    )
    assert broken is not None and "Issued" in broken


def test_suspensions_are_lifted_only_when_policy_allows(db: Any) -> None:
    # L1003 is suspended, its contract runs to 2026 and its customer owes nothing overdue.
    assert policy.violation(db, "resume_line", {"customer_id": "C1001", "line_id": "L1003"}) is None
    line = policy.line(db, "L1003")
    ended = line.model_copy(update={"contract_end_date": policy.TODAY.replace(year=2024)})
    ok, why = policy.resume_allowed(db, policy.customer(db, "C1001"), ended)
    assert not ok and "contract" in why
    # C1002 has overdue bill B1005: none of its lines may be resumed or left unsuspended.
    owner = policy.customer(db, "C1002")
    ok, why = policy.resume_allowed(db, owner, policy.line(db, "L1004"))
    assert not ok and "B1005" in why
    assert policy.suspend_allowed(db, owner, policy.line(db, "L1004"))[0]
    broken = policy.violation(
        db, "suspend_line", {"customer_id": "C1001", "line_id": "L1001", "reason": "travel"}
    )
    assert broken is not None and "neither" in broken


def test_unknown_records_and_tools_are_not_judged(db: Any) -> None:
    assert policy.violation(db, "refuel_data", {"customer_id": "C9", "line_id": "L1"}) is None
    assert (
        policy.violation(db, "enable_roaming", {"customer_id": "C1001", "line_id": "L1001"}) is None
    )


def test_verifier_rejects_a_gold_write_that_breaks_policy() -> None:
    selections = {
        "task_family": ["plan_change"],
        "expected_outcome": ["fulfill"],
        "policy_or_constraint_focus": ["eligibility_check"],
        "tool_use_pattern": ["verify_before_action"],
        "interaction_challenge": [],
        "difficulty_profile": ["medium"],
    }
    bp = Blueprint(
        campaign_id="t",
        round=1,
        blueprint_id="bp-p",
        direction_id="d",
        space_version=1,
        selections=selections,
        intent="t",
        difficulty_controls={},
        seed=0,
    )
    task = TelecomGenerator().generate(bp, seed=0)
    for action in task.task.evaluation_criteria.actions:
        if action.name == "refuel_data":
            action.arguments["gb_amount"] = 3.0  # beyond the cap, yet the gold itself
    # Made as the gold has it, the write fails the policy check.
    gold = gold_trajectory(get_domain("telecom"), task.task)
    verdict = ReplayVerifier("telecom").verify(task.task, gold)
    assert not verdict.passed
    assert any(r.startswith("policy:") and "at most 2 GB" in r for r in verdict.reasons)
    # The Teacher's agent checks the policy first: it refuses the refuel and says why.
    messages = TelecomTeacher().rollout(task, seed=0).messages
    calls = [c.name for m in messages if m.role == "assistant" for c in m.tool_calls or []]
    assert "refuel_data" not in calls
    assert any(m.role == "assistant" and "at most 2 GB" in (m.content or "") for m in messages)
