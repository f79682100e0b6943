"""The replay verifier agrees with τ²-bench's own evaluators on synthesized dialogues.

The new dialogues (agent greeting first, answers asked and said in context, challenges acted
out, seeded slips) are scored by both; a copy without the agent's answer turns must fail in
both wherever the task asks for an answer.
"""

from __future__ import annotations

import pytest
from tau2.data_model.message import AssistantMessage

from evosyn.agents.planner.programmatic import ProgrammaticPlanner
from evosyn.agents.synthesis import synthesize
from evosyn.agents.verifier.reference import stock_reward
from evosyn.agents.verifier.replay import ReplayVerifier
from evosyn.environments import quality
from evosyn.environments.registry import domain_plugin, list_domains
from evosyn.records import Direction
from evosyn.space import seed_space


@pytest.mark.parametrize("domain", list_domains())
def test_synthesized_verdicts_equal_tau2(domain: str) -> None:
    plugin = domain_plugin(domain)
    space = seed_space(domain, "x", round=1)
    direction = Direction(
        campaign_id="x",
        round=1,
        direction_id="r1-uniform",
        space_version=1,
        objective="exploration",
        budget=12,
    )
    blueprints = ProgrammaticPlanner(plugin.infeasible).plan(space, direction, seed=9)
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
