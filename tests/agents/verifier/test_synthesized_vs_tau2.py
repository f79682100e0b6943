"""The replay verifier agrees with τ²-bench's own evaluators on synthesized dialogues.

The new dialogues (agent greeting first, answers asked and said in context, challenges acted
out, seeded slips) are scored by both; a copy without the agent's answer turns must fail in
both wherever the task asks for an answer.
"""

from __future__ import annotations

import pytest
from synthesis_checks import exploration
from tau2.data_model.message import AssistantMessage, Message
from tau2.data_model.tasks import Task

from evosyn.agents.planner.programmatic import ProgrammaticPlanner
from evosyn.agents.synthesis import synthesize
from evosyn.agents.verifier.reference import stock_reward
from evosyn.agents.verifier.replay import ReplayVerifier
from evosyn.environments import quality
from evosyn.environments.kit.acting import method_words
from evosyn.environments.registry import domain_plugin, domains_offering, get_domain
from evosyn.environments.retail import policy as retail_policy
from evosyn.records import Blueprint
from evosyn.space import seed_space

pytestmark = pytest.mark.heavy


def _planned(domain: str, budget: int, seed: int) -> list[Blueprint]:
    """The programmatic Planner's blueprints for one uniform direction over the seed space."""
    space = seed_space(domain, "x", round=1)
    direction = exploration(space, budget, direction_id="r1-uniform")
    return ProgrammaticPlanner(domain_plugin(domain).infeasible).plan(space, direction, seed=seed)


@pytest.mark.parametrize(
    "domain", [d for d in domains_offering("generator") if domain_plugin(d).offers("teacher")]
)
def test_synthesized_verdicts_equal_tau2(domain: str) -> None:
    plugin = domain_plugin(domain)
    blueprints = _planned(domain, budget=12, seed=9)
    verifier = ReplayVerifier(domain)
    batch = synthesize(
        blueprints, plugin.generator(), plugin.teacher(mistake_rate=0.3), verifier, 9
    )
    tasks = {t.task_id: t.task for t in batch.tasks}
    answered = 0
    for trajectory in batch.trajectories:
        task = tasks[trajectory.task_id]
        ours = verifier.verify(task, trajectory.messages)
        assert ours.passed == (stock_reward(domain, task, trajectory.messages) == 1.0)
        if not quality.expected_answers(task):
            continue
        answered += 1
        silent = [
            m
            for m in trajectory.messages
            if not (isinstance(m, AssistantMessage) and m.content and not m.tool_calls)
        ]
        assert not verifier.verify(task, silent).passed
        assert stock_reward(domain, task, silent) != 1.0
    assert batch.verified and answered


@pytest.mark.parametrize(
    ("domain", "challenge"),
    [
        ("retail", "preference_change"),
        ("retail", "constraint_hidden_until_late"),
        ("telecom", "preference_change"),
    ],
)
def test_a_detail_left_open_is_proposed_within_policy_changed_and_verified_by_tau2(
    domain: str, challenge: str
) -> None:
    plugin = domain_plugin(domain)
    planned = _planned(domain, budget=200, seed=21)
    blueprints = [b for b in planned if challenge in b.selections["interaction_challenge"]][:3]
    assert blueprints, f"the Planner never asks for {challenge} in {domain}"
    verifier = ReplayVerifier(domain)
    batch = synthesize(blueprints, plugin.generator(), plugin.teacher(), verifier, 21)
    tasks = {t.task_id: t.task for t in batch.tasks}
    assert len(batch.verified) == len(blueprints), [r.reason for r in batch.rejections]
    for trajectory, verdict in zip(batch.trajectories, batch.verifications, strict=True):
        task = tasks[trajectory.task_id]
        assert challenge in verdict.realized["interaction_challenges"].split(";")
        assert stock_reward(domain, task, trajectory.messages) == 1.0
        if domain == "retail":
            _first_proposal_is_within_policy(task, trajectory.messages)


def _first_proposal_is_within_policy(task: Task, messages: list[Message]) -> None:
    """The payment method a retail agent first proposed is one policy allows for the write."""
    write = next(a for a in task.evaluation_criteria.actions if "payment_method_id" in a.arguments)
    gold = write.arguments["payment_method_id"]
    proposals = [
        m.content
        for m in messages
        if isinstance(m, AssistantMessage)
        and m.content
        and write.arguments["order_id"] in m.content
    ]
    db = get_domain("retail").initial_state(task).env.tools.db
    owner = db.users[db.orders[write.arguments["order_id"]].user_id]
    # Methods are proposed as the customer knows them ("the Visa card ending in 1234").
    offered = {
        key
        for key, method in owner.payment_methods.items()
        if any(method_words(method.model_dump(), "your") in p for p in proposals)
    }
    assert offered - {gold}, "no other method was proposed first"
    for method in offered - {gold}:
        arguments = {**write.arguments, "payment_method_id": method}
        assert retail_policy.broken_rule(db, write.name, arguments) is None, method
