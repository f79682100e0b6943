"""The programmatic Generators cause no interaction challenge their blueprint did not request.

A caller left without an id the agent asks them for says they lack it, which reads as
``missing_information``; a reason for calling worded as upset or urgent reads as
``emotional_pressure``. So, over planned blueprints of each domain: a task without
``missing_information`` names no id in its unknown info and gives the caller the id of every
reservation or order its writes (or the write it refuses) act on; a reason for calling presses
only where ``emotional_pressure`` is requested; and the verified dialogues act out no
challenge beyond those requested (issue 30 item 5).
"""

from __future__ import annotations

import functools

import pytest
from synthesis_checks import exploration

from evosyn.agents.generator.contract import unknown_info_problem
from evosyn.agents.planner.programmatic import ProgrammaticPlanner
from evosyn.agents.synthesis import SynthesisBatch, generate, roll_out
from evosyn.agents.verifier import ReplayVerifier
from evosyn.environments.base import FunctionalSymbol
from evosyn.environments.dialogue_acts_turns import presses
from evosyn.environments.registry import domain_plugin, get_domain
from evosyn.records import Blueprint, SynthTask
from evosyn.space import seed_space

DOMAINS = ["airline", "retail", "telecom"]
#: Blueprints planned per domain, and the seed of their plan and synthesis.
BLUEPRINTS = 30
SEED = 90210
#: The ids a caller names a record of theirs by (a customer id, say, is looked up instead).
NAMED_BY_CALLER = ("reservation_id", "order_id")


@functools.cache
def _blueprints(domain: str) -> list[Blueprint]:
    plugin = domain_plugin(domain)
    space = seed_space(domain, "unrequested", round=1)
    direction = exploration(space, BLUEPRINTS, direction_id="r1-uniform")
    return ProgrammaticPlanner(plugin.infeasible).plan(space, direction, SEED)


@functools.cache
def _tasks(domain: str) -> SynthesisBatch:
    return generate(_blueprints(domain), domain_plugin(domain).generator(), SEED)


def _requests(task: SynthTask, challenge: str) -> bool:
    return challenge in task.requested.get("interaction_challenge", [])


@pytest.mark.parametrize("domain", DOMAINS)
def test_without_missing_information_no_id_is_left_unknown(domain: str) -> None:
    # The rule the LLM Generator's tasks are checked by (its contract).
    blueprints = {b.blueprint_id: b for b in _blueprints(domain)}
    tasks = [t for t in _tasks(domain).tasks if not _requests(t, "missing_information")]
    assert tasks
    for task in tasks:
        problem = unknown_info_problem(task.task, blueprints[task.blueprint_id])
        assert problem is None, (task.task_id, problem)


@pytest.mark.parametrize("domain", DOMAINS)
def test_without_missing_information_the_caller_knows_the_records_acted_on(domain: str) -> None:
    tools = get_domain(domain)
    for task in _tasks(domain).tasks:
        if _requests(task, "missing_information"):
            continue
        instructions = task.task.user_scenario.instructions
        told = f"{instructions.known_info} {instructions.reason_for_call}"  # type: ignore[union-attr]
        criteria = task.task.evaluation_criteria
        actions = [*((criteria.actions if criteria else None) or []), *task.refused]
        for action in actions:
            if tools.symbol(action.name, action.requestor) == FunctionalSymbol.READ:
                continue
            for key in NAMED_BY_CALLER:
                value = action.arguments.get(key)
                assert not isinstance(value, str) or value in told, (task.task_id, key, value)


@pytest.mark.parametrize("domain", DOMAINS)
def test_a_reason_for_calling_presses_only_under_emotional_pressure(domain: str) -> None:
    for task in _tasks(domain).tasks:
        reason = task.task.user_scenario.instructions.reason_for_call  # type: ignore[union-attr]
        assert _requests(task, "emotional_pressure") or not presses(reason), (task.task_id, reason)


def test_an_airline_compensation_reason_is_neutral() -> None:
    # The compensation family may not be among the planned blueprints; asked for directly.
    blueprint = _blueprints("airline")[0].model_copy(
        update={
            "blueprint_id": "compensation",
            "selections": {
                "task_family": ["refund_or_compensation"],
                "expected_outcome": ["fulfill"],
                "policy_or_constraint_focus": ["compensation_eligibility"],
                "tool_use_pattern": ["lookup_verify_then_modify"],
                "interaction_challenge": [],
                "difficulty_profile": ["medium"],
            },
        }
    )
    task = domain_plugin("airline").generator().generate(blueprint, SEED)
    reason = task.task.user_scenario.instructions.reason_for_call  # type: ignore[union-attr]
    assert "compensation" in reason and not presses(reason)


@pytest.mark.parametrize("domain", DOMAINS)
def test_verified_dialogues_act_out_only_requested_challenges(domain: str) -> None:
    plugin = domain_plugin(domain)
    tasks = _tasks(domain).tasks
    batch = roll_out(tasks, plugin.teacher(), ReplayVerifier(domain), SEED)
    requested = {t.task_id: set(t.requested.get("interaction_challenge", [])) for t in tasks}
    assert batch.verified
    for verdict in batch.verified:
        acted = set(verdict.realized["interaction_challenges"].split(";")) - {"none"}
        assert acted <= requested[verdict.task_id], (verdict.task_id, acted)
