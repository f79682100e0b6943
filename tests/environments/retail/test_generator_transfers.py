"""Retail refusals on the scope focus end in a transfer to a human agent (issue 31).

τ²-bench's official retail gold transfers in 4 of its 114 base tasks, mostly after a
request policy forbids, once the caller insists on a human agent (tasks 10, 12, 26). Every
retail refusal on ``scope_or_escalation_boundary`` ends so, whatever its family, so that
``evosyn synth --n 200`` makes ``transfer_to_human_agents`` at any seed: the blueprints of
seed 777 ask for it only on order families.
"""

from __future__ import annotations

import pytest
from synthesis_checks import exploration, hand_blueprint, verified_rollout
from tau2.data_model.message import AssistantMessage

from evosyn.agents.planner.programmatic import ProgrammaticPlanner
from evosyn.agents.synthesis import synthesize
from evosyn.agents.verifier import ReplayVerifier
from evosyn.agents.verifier.reference import stock_reward
from evosyn.environments.registry import domain_plugin
from evosyn.environments.retail.generator import FAMILIES, INQUIRY, RetailGenerator, infeasible
from evosyn.environments.retail.teacher import RetailTeacher
from evosyn.space import seed_space

SCOPE = "scope_or_escalation_boundary"
TRANSFER = "transfer_to_human_agents"


@pytest.mark.parametrize("family", [f for f in FAMILIES if f != INQUIRY])
def test_an_order_refusal_on_the_scope_focus_is_transferred(family: str) -> None:
    bp = hand_blueprint(family, "refuse", focus=(SCOPE,), patterns=("authenticate_then_act",))
    task = RetailGenerator().generate(bp, seed=3)
    actions = task.task.evaluation_criteria.actions
    assert [a.name for a in actions][-1] == TRANSFER
    # The agent checked the order it refuses before handing the caller over.
    assert "get_order_details" in [a.name for a in actions]
    assert task.task.description.notes  # why policy forbids the request
    assert "human agent" in task.task.user_scenario.instructions.task_instructions
    verdict, messages = verified_rollout(task, RetailTeacher(), ReplayVerifier("retail"))
    assert verdict.realized["num_write"] == "0"
    assert verdict.realized["num_transfer"] == "1"
    assert messages[-1].content == "###TRANSFER###"
    assert stock_reward("retail", task.task, messages) == 1.0


def test_the_feasibility_rule_counts_the_hand_off() -> None:
    # Authentication, two or more look-ups and the transfer: four calls, over easy's three.
    asked = {
        "task_family": ["order_cancellation"],
        "expected_outcome": ["refuse"],
        "num_read": ["3-4"],
        "difficulty_profile": ["easy"],
    }
    assert infeasible(asked) is None
    reason = infeasible(asked | {"policy_or_constraint_focus": [SCOPE]})
    assert reason is not None and "difficulty_profile=easy" in reason


def test_synthesis_at_an_untuned_seed_makes_verified_transfers() -> None:
    # The blueprints `evosyn synth --n 200 --seed 777` plans: no inquiry refusal on the scope
    # focus among them, only order refusals.
    plugin = domain_plugin("retail")
    space = seed_space("retail", "shapes", round=1)
    direction = exploration(space, 200, direction_id="r1-uniform", campaign_id="shapes")
    planned = ProgrammaticPlanner(plugin.infeasible).plan(space, direction, 777)
    scoped = [
        b
        for b in planned
        if b.selections["expected_outcome"] == ["refuse"]
        and SCOPE in b.selections["policy_or_constraint_focus"]
    ]
    assert scoped and all(b.selections["task_family"] != [INQUIRY] for b in scoped)
    verifier = ReplayVerifier("retail")
    batch = synthesize(scoped, plugin.generator(), plugin.teacher(), verifier, 777)
    tasks = {t.task_id: t.task for t in batch.tasks}
    passed = {v.task_id for v in batch.verified}
    transferred = 0
    for trajectory in batch.trajectories:
        if trajectory.task_id not in passed:
            continue
        task = tasks[trajectory.task_id]
        assert stock_reward("retail", task, trajectory.messages) == 1.0
        calls = [
            c.name
            for m in trajectory.messages
            if isinstance(m, AssistantMessage)
            for c in m.tool_calls or []
        ]
        transferred += calls[-1:] == [TRANSFER]
    assert transferred == len(scoped), [r.reason for r in batch.rejections]
