"""Sample records of every lake table, shared by the tests."""

from __future__ import annotations

import socket

from evosyn.records import (
    Blueprint,
    Campaign,
    Direction,
    EvalResult,
    ExperimentArm,
    Factor,
    FactorReview,
    LakeRecord,
    LLMCall,
    ObjectiveType,
    Probe,
    ReflectorDecision,
    Rejection,
    ReviewAction,
    RoundSummary,
    SynthTask,
    Training,
    Trajectory,
    UnscoredEpisode,
    ValueFeedback,
    Verification,
)
from evosyn.space import seed_space


def sample_records(campaign_id: str = "c1", round: int = 1) -> list[LakeRecord]:
    """One record of every lake table, with nested fields filled in."""
    # τ²-bench is imported after evosyn, which quiets its import-time logging.
    from tau2.data_model.message import (
        AssistantMessage,
        SystemMessage,
        ToolCall,
        ToolMessage,
        UserMessage,
    )
    from tau2.data_model.tasks import Action, EvaluationCriteria, Task, UserScenario

    cr = {"campaign_id": campaign_id, "round": round}
    task = Task(
        id=f"{campaign_id}-r{round}-t0",
        user_scenario=UserScenario(instructions="You are Mia; cancel reservation ABC123."),
        evaluation_criteria=EvaluationCriteria(
            actions=[
                Action(
                    action_id="a0",
                    name="cancel_reservation",
                    arguments={"reservation_id": "ABC123"},
                )
            ],
            communicate_info=["refund of 120"],
        ),
    )
    messages = [
        SystemMessage(role="system", content="policy"),
        UserMessage(role="user", content="Please cancel ABC123."),
        AssistantMessage(
            role="assistant",
            tool_calls=[
                ToolCall(
                    id="call0", name="cancel_reservation", arguments={"reservation_id": "ABC123"}
                )
            ],
        ),
        ToolMessage(id="call0", role="tool", content='{"status": "cancelled"}'),
        AssistantMessage(role="assistant", content="Done: a refund of 120 is on its way."),
    ]
    new_factor = Factor(
        name="num_write", values=["0", "1", "2", "3-4", "5+"], origin="failure_driven"
    )
    return [
        Campaign(**cr, name="demo", domain="airline", seed=0, config={"campaign": {"rounds": 3}}),
        RoundSummary(**cr, space_version=1, budget=10, n_verified=7, status="succeeded"),
        seed_space("airline", campaign_id, round),
        Direction(
            **cr,
            direction_id="d0",
            space_version=1,
            objective=ObjectiveType.FAILURE_TARGETED,
            preferred={"task_family": ["flight_cancellation"]},
            forbidden={"expected_outcome": ["refuse"]},
            budget=10,
            rationale="cancellations fail often",
        ),
        Blueprint(
            **cr,
            blueprint_id="b0",
            direction_id="d0",
            space_version=1,
            selections={
                "task_family": ["flight_cancellation"],
                "tool_use_pattern": ["lookup_verify_then_modify"],
            },
            intent="Cancel a refundable reservation.",
            difficulty_controls={"num_write": 1},
        ),
        SynthTask(
            **cr,
            task_id=task.id,
            blueprint_id="b0",
            domain="airline",
            task=task,
            requested={"task_family": ["flight_cancellation"]},
            cues={"a0": "The reason is change of plan."},
        ),
        Trajectory(**cr, trajectory_id="tr0", task_id=task.id, messages=messages),
        Verification(
            **cr,
            task_id=task.id,
            trajectory_id="tr0",
            passed=True,
            reward=1.0,
            realized={"num_write": "1"},
            seconds=0.01,
        ),
        Rejection(**cr, blueprint_id="b1", stage="generate", reason="no reservation fits"),
        Training(
            **cr,
            training_id="train0",
            learner="simulated",
            dataset_snapshot="d<=1",
            n_samples=7,
            status="succeeded",
        ),
        EvalResult(
            **cr,
            training_id="train0",
            task_id="0",
            split="diagnostic",
            success=False,
            reward=0.0,
            failure_reason="wrong refund",
        ),
        ValueFeedback(
            **cr,
            factor="task_family",
            value="flight_cancellation",
            coverage=0.5,
            n_verified=7,
            success=0.25,
            n_diagnostic=4,
        ),
        Probe(
            **cr,
            name="num_write",
            distribution={"1": 3, "3-4": 2},
            failure_rate={"1": 0.1, "3-4": 1.0},
            coverage={"1": 0.9, "3-4": 0.1},
            spearman=0.46,
            cmi=0.12,
            p_value=0.01,
            suggested=new_factor,
        ),
        ReflectorDecision(
            **cr,
            action="add_factor",
            new_factor=new_factor,
            reviews=[FactorReview(factor="x", action=ReviewAction.KEEP, evidence="n/a")],
            next_space_version=2,
        ),
        LLMCall(
            **cr,
            call_id="call-1",
            attempt=0,
            role="planner",
            model="openai/test",
            tokens_in=10,
            tokens_out=5,
            outcome="ok",
        ),
        UnscoredEpisode(
            **cr,
            training_id="t1",
            task_id="diag-7",
            split="diagnostic",
            kind="user_sim_fault",
            attempts=2,
            message="the user invented a passenger",
        ),
        ExperimentArm(
            **cr,
            experiment="exp",
            arm="r_zero",
            seed=0,
            overrides={"campaign.strategy": "r_zero"},
            rounds=3,
            seconds=12.5,
        ),
    ]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
