"""The replay verifier rejects trajectories whose writes break the domain policy model."""

from __future__ import annotations

from typing import Any

import pytest
from tau2.data_model.tasks import Action, EvaluationCriteria, RewardType, Task, UserScenario

from evosyn.agents.verifier import ReplayVerifier
from evosyn.agents.verifier.replay import policy_check
from evosyn.environments import airline, get_domain
from evosyn.environments.airline import policy
from evosyn.environments.airline.generator import AirlineGenerator
from evosyn.environments.airline.teacher import AirlineTeacher
from evosyn.environments.trajectories import gold_trajectory
from evosyn.records import Blueprint


@pytest.fixture(scope="module")
def generator() -> AirlineGenerator:
    return AirlineGenerator()


def _refusal(generator: AirlineGenerator) -> Task:
    """A synthesized cancellation the policy forbids (refused in its gold)."""
    blueprint = Blueprint(
        campaign_id="test",
        round=1,
        blueprint_id="bp-policy",
        direction_id="d0",
        space_version=1,
        selections={
            "task_family": ["flight_cancellation"],
            "expected_outcome": ["refuse"],
            "policy_or_constraint_focus": ["fare_rule_constraint"],
            "tool_use_pattern": ["policy_check_before_action"],
            "interaction_challenge": [],
            "difficulty_profile": ["easy"],
        },
        intent="a forbidden cancellation",
    )
    return generator.generate(blueprint, 0).task


def _forbidden(generator: AirlineGenerator) -> Any:
    """A basic-economy reservation booked long ago, uninsured, open, not airline-cancelled."""
    db = generator.db
    for rid in sorted(db.reservations):
        r = db.reservations[rid]
        if (
            r.cabin == "basic_economy"
            and r.insurance == "no"
            and r.status != "cancelled"
            and not policy.has_flown(db, r)
            and not policy.may_cancel(db, r, "change_of_plan")[0]
        ):
            return r
    raise AssertionError("the airline database has no such reservation")


def _cancel_task(reservation: Any) -> Task:
    """A (non-official) task whose gold cancels ``reservation`` for a change of plan."""
    actions = [
        Action(action_id="a0", name="get_user_details", arguments={"user_id": reservation.user_id}),
        Action(
            action_id="a1",
            name="get_reservation_details",
            arguments={"reservation_id": reservation.reservation_id},
        ),
        Action(
            action_id="a2",
            name="cancel_reservation",
            arguments={"reservation_id": reservation.reservation_id},
            info="reason: change of plan.",
        ),
    ]
    return Task(
        id="synthetic-forbidden-cancel",
        user_scenario=UserScenario(instructions="You want to cancel; your plans changed."),
        evaluation_criteria=EvaluationCriteria(actions=actions, reward_basis=[RewardType.DB]),
    )


def test_a_forbidden_cancellation_fails_with_the_rule(generator: AirlineGenerator) -> None:
    reservation = _forbidden(generator)
    rid = reservation.reservation_id
    task = _cancel_task(reservation)
    messages = gold_trajectory(get_domain("airline"), task)
    verdict = ReplayVerifier("airline").verify(task, messages)
    # τ²-bench's reward is 1 (the gold itself cancels), yet the pair fails on the policy.
    assert verdict.reward == 1.0
    assert not verdict.passed
    (reason,) = [r for r in verdict.reasons if r.startswith("policy:")]
    assert "cancel_reservation" in reason and rid in reason
    assert "cannot be cancelled" in reason and "no travel insurance" in reason
    # The same pair without the policy model is τ²-bench's verdict alone.
    assert ReplayVerifier("airline", policy="off").verify(task, messages).passed


def test_a_synthesized_refusal_passes(generator: AirlineGenerator) -> None:
    task = _refusal(generator)
    assert ReplayVerifier("airline").verify(task, AirlineTeacher().messages(task, 0)).passed


def test_official_tasks_are_checked_only_on_request() -> None:
    domain = get_domain("airline")
    task = next(t for t in domain.tasks() if t.id == "7")  # gold cancels an ineligible booking
    messages = gold_trajectory(domain, task)
    assert ReplayVerifier("airline").verify(task, messages).passed
    strict = ReplayVerifier("airline", policy="all").verify(task, messages)
    assert not strict.passed
    assert any(r.startswith("policy:") and "XEHM4B" in r for r in strict.reasons)
    # A synthesized copy of an official task (another id) is checked by default.
    copy = task.model_copy(update={"id": "copy-of-7"})
    assert not ReplayVerifier("airline").verify(copy, messages).passed


def test_policy_lookup_by_domain_name() -> None:
    assert policy_check("airline") is airline.PLUGIN.violation
    assert policy_check("no_such_domain") is None
    with pytest.raises(ValueError, match="policy"):
        ReplayVerifier("airline", policy="sometimes")


def test_only_assistant_writes_are_checked(generator: AirlineGenerator) -> None:
    seen: list[tuple[str, dict[str, Any]]] = []
    verifier = ReplayVerifier("airline")

    def spy(db: Any, tool: str, arguments: Any) -> str | None:
        seen.append((tool, dict(arguments)))
        return None

    verifier._policy = spy
    task = _cancel_task(_forbidden(generator))
    assert verifier.verify(task, gold_trajectory(get_domain("airline"), task)).passed
    rid = task.evaluation_criteria.actions[-1].arguments["reservation_id"]
    assert seen == [("cancel_reservation", {"reservation_id": rid})]
