"""Designer, Planner, Generator and Reflector as LLM agents, against the test server over HTTP.

Each role gets the same four answers (clean JSON, JSON wrapped in prose, JSON cut off, JSON with
a key outside the space) and must accept the first two at once, repair the third with one turn
that quotes the error, and reject the fourth after its one repair turn, with the reason. Then
the role-specific rules: budgets, cardinalities, hard constraints, executable gold actions,
and a Reflector that may never rename, delete or deprecate a seed factor.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from openai_server import OpenAIServer, Reply

from evosyn.agents.designer import LLMDesigner
from evosyn.agents.designer.llm import parse_plan
from evosyn.agents.gateway import Gateway
from evosyn.agents.generator.base import GeneratorRejection
from evosyn.agents.generator.llm import LLMGenerator
from evosyn.agents.llm_output import OutputRejected, ask_json
from evosyn.agents.planner import LLMPlanner, PartialPlanningError
from evosyn.agents.planner.llm import parse_blueprint
from evosyn.agents.reflector import REALIZABLE, LLMReflector
from evosyn.agents.roles import build_roles
from evosyn.agents.verifier import ReplayVerifier
from evosyn.buckets import in_bucket
from evosyn.config import CampaignConfig, ConfigError, ModelSettings
from evosyn.environments.airline.generator import AirlineGenerator
from evosyn.environments.airline.teacher import AirlineTeacher
from evosyn.environments.contamination import contamination_reason
from evosyn.environments.feasibility import Conflict
from evosyn.environments.registry import domain_plugin
from evosyn.records import (
    Blueprint,
    Direction,
    FactorStatus,
    Feedback,
    GenerationPlan,
    LLMCall,
    Probe,
    SynthesisSpace,
    SynthTask,
)
from evosyn.space import add_factor, check_revision, seed_space
from evosyn.storage import Lake
from evosyn.tasks.lake_step import Calls, flush_calls

REPAIR_MARK = "Your previous answer cannot be used"


@pytest.fixture
def cfg(
    server: OpenAIServer, tmp_path: Path, make_config: Callable[..., CampaignConfig]
) -> CampaignConfig:
    return make_config(server, tmp_path)


@pytest.fixture(scope="module")
def space() -> SynthesisSpace:
    return seed_space("airline", "c")


@pytest.fixture(scope="module")
def reference(space: SynthesisSpace) -> SynthTask:
    """A task of the programmatic Generator: what a perfect Generator model would write."""
    return AirlineGenerator().generate(blueprint(space), 3)


SELECTIONS = {
    "task_family": ["flight_cancellation"],
    "expected_outcome": ["fulfill"],
    "policy_or_constraint_focus": ["fare_rule_constraint"],
    "tool_use_pattern": ["lookup_verify_then_modify"],
    "interaction_challenge": [],
    "difficulty_profile": ["medium"],
}


def blueprint(space: SynthesisSpace, **selections: list[str]) -> Blueprint:
    return Blueprint(
        campaign_id="c",
        round=1,
        blueprint_id="r1-d00-b0000",
        direction_id="r1-d00",
        space_version=space.version,
        selections={**SELECTIONS, **selections},
        intent="cancel a reservation the policy allows to cancel",
    )


def direction(space: SynthesisSpace, budget: int = 1, **constraints: Any) -> Direction:
    return Direction(
        campaign_id="c",
        round=1,
        direction_id="r1-d00",
        space_version=space.version,
        objective="under_covered",
        budget=budget,
        **constraints,
    )


def prompts(server: OpenAIServer) -> list[list[dict[str, Any]]]:
    return [r.body["messages"] for r in server.requests]


# ---------------------------------------------------------------------- one case per role


@dataclass
class Case:
    """How to call one role, a valid answer, and an answer naming a key outside the space."""

    role: str
    call: Callable[[CampaignConfig, SynthesisSpace, SynthTask], Any]
    valid: Callable[[SynthTask], dict[str, Any]]
    outside: dict[str, Any]
    accepted: Callable[[Any], bool]
    rejected: Callable[[Any], str | None]


def _design(cfg: CampaignConfig, space: SynthesisSpace, _: SynthTask) -> GenerationPlan:
    return LLMDesigner.from_config(cfg).design(space, None, "c", 1, 10)


def _plan(cfg: CampaignConfig, space: SynthesisSpace, _: SynthTask) -> Any:
    try:
        return LLMPlanner.from_config(cfg).plan(space, direction(space), seed=5)
    except PartialPlanningError as exc:
        return exc


def _generate(cfg: CampaignConfig, space: SynthesisSpace, _: SynthTask) -> Any:
    try:
        return LLMGenerator.from_config(cfg).generate(blueprint(space), 3)
    except GeneratorRejection as exc:
        return exc


def _reflect(cfg: CampaignConfig, space: SynthesisSpace, _: SynthTask) -> Any:
    feedback = Feedback(campaign_id="c", round=1)
    return LLMReflector.from_config(cfg, REALIZABLE).reflect(space, feedback, 1)


def _task_answer(reference: SynthTask) -> dict[str, Any]:
    task = reference.task
    instructions = task.user_scenario.instructions
    criteria = task.evaluation_criteria
    assert task.description is not None and criteria is not None
    # The Generator prompt lets a customer lack an id only with missing_information requested;
    # the programmatic Generator's caller who "does not know the reservation ids" without it is
    # what issue 30 calls an unrequested challenge.
    lacking = "missing_information" in reference.requested.get("interaction_challenge", [])
    return {
        "purpose": task.description.purpose,
        "reason_for_call": instructions.reason_for_call,  # type: ignore[union-attr]
        "known_info": instructions.known_info,  # type: ignore[union-attr]
        "unknown_info": instructions.unknown_info if lacking else None,  # type: ignore[union-attr]
        "task_instructions": instructions.task_instructions,  # type: ignore[union-attr]
        "gold_actions": [
            {"name": a.name, "arguments": a.arguments} for a in criteria.actions or []
        ],
        "communicate_info": criteria.communicate_info or [],
    }


CASES = [
    Case(
        "designer",
        _design,
        lambda _: {
            "directions": [
                {"objective_type": "exploration", "budget": 4},
                {
                    "objective_type": "under_covered",
                    "preferred": {"task_family": ["flight_booking"]},
                    "budget": 6,
                },
            ]
        },
        {
            "directions": [
                {"objective_type": "exploration", "allowed": {"mood": ["x"]}, "budget": 10}
            ]
        },
        lambda plan: all("rejected" not in d.rationale for d in plan.directions),
        lambda plan: next(
            (d.rationale for d in plan.directions if "rejected" in d.rationale), None
        ),
    ),
    Case(
        "planner",
        _plan,
        lambda _: {"selections": SELECTIONS, "intent": "cancel an eligible reservation"},
        {"selections": {**SELECTIONS, "mood": ["calm"]}, "intent": "x"},
        lambda out: isinstance(out, list) and len(out) == 1,
        lambda out: (
            out.rejected.get("r1-d00-b0000") if isinstance(out, PartialPlanningError) else None
        ),
    ),
    Case(
        "generator",
        _generate,
        _task_answer,
        {**{"purpose": "p", "reason_for_call": "r", "gold_actions": []}, "mood": "calm"},
        lambda out: isinstance(out, SynthTask),
        lambda out: str(out) if isinstance(out, GeneratorRejection) else None,
    ),
    Case(
        "reflector",
        _reflect,
        lambda _: {"reviews": [], "proposal": {"action": "no_change"}, "summary": "nothing new"},
        {"reviews": [{"factor": "mood", "decision": "keep"}], "proposal": {"action": "no_change"}},
        lambda out: out[0].rationale == "nothing new",
        lambda out: out[0].rationale if "rejected" in out[0].rationale else None,
    ),
]
IDS = [c.role for c in CASES]


@pytest.mark.parametrize("case", CASES, ids=IDS)
@pytest.mark.parametrize(
    "wrap",
    [
        lambda text: text,
        lambda text: f"Sure! Here is my answer:\n```json\n{text}\n```\nLet me know if it helps.",
    ],
    ids=["clean", "prose"],
)
def test_clean_and_prose_wrapped_answers_are_accepted_at_once(
    case: Case,
    wrap: Callable[[str], str],
    server: OpenAIServer,
    cfg: CampaignConfig,
    space: SynthesisSpace,
    reference: SynthTask,
) -> None:
    server.script(Reply.text(wrap(json.dumps(case.valid(reference)))))
    out = case.call(cfg, space, reference)
    assert case.accepted(out), out
    assert server.request_count == 1
    assert server.requests[0].body["model"] == f"{case.role}-model"


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_truncated_answer_is_repaired_with_one_turn_quoting_the_error(
    case: Case,
    server: OpenAIServer,
    cfg: CampaignConfig,
    space: SynthesisSpace,
    reference: SynthTask,
) -> None:
    text = json.dumps(case.valid(reference))
    server.script(Reply.text(text[: len(text) // 2], finish_reason="length"), Reply.text(text))
    out = case.call(cfg, space, reference)
    assert case.accepted(out), out
    first, repair = prompts(server)
    assert repair[:-2] == first and repair[-2]["role"] == "assistant"
    turn = repair[-1]["content"]
    assert turn.startswith(REPAIR_MARK) and "truncated JSON" in turn and "cut off" in turn


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_key_outside_the_space_is_rejected_after_one_repair_turn(
    case: Case,
    server: OpenAIServer,
    cfg: CampaignConfig,
    space: SynthesisSpace,
    reference: SynthTask,
) -> None:
    wrong = Reply.text(json.dumps(case.outside))
    server.script(wrong, wrong, Reply.text(json.dumps(case.valid(reference))))
    out = case.call(cfg, space, reference)
    reason = case.rejected(out)
    assert reason is not None, out
    assert "mood" in reason
    assert server.request_count == 2  # one repair turn, no third request
    assert "mood" in prompts(server)[1][-1]["content"]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_failed_model_call_is_a_recorded_rejection(
    case: Case,
    server: OpenAIServer,
    cfg: CampaignConfig,
    space: SynthesisSpace,
    reference: SynthTask,
) -> None:
    server.script(Reply.unauthorized())
    reason = case.rejected(case.call(cfg, space, reference))
    assert reason is not None and "model call failed: AuthenticationError" in reason
    assert "sk-test" not in reason


# ---------------------------------------------------------------------- Designer


def test_designer_prompt_carries_the_steering_signal(
    server: OpenAIServer, cfg: CampaignConfig, space: SynthesisSpace
) -> None:
    designer = LLMDesigner.from_config(cfg)
    cold = designer.prompt(space, None, 1, 10)
    assert "COLD START" in cold and "LEARNER FEEDBACK" not in cold
    assert "cancel_reservation" in cold and "add up to exactly\n  10" in cold
    grown = add_factor(space, REALIZABLE["num_write"], round=2)
    feedback = Feedback(campaign_id="c", round=1)
    signal = designer.prompt(grown, feedback, 2, 10)
    assert "NEWLY ADDED FACTOR" in signal and "num_write with values 0, 1, 2, 3-4, 5+" in signal


def test_designer_budgets_must_sum_to_the_round_budget(
    server: OpenAIServer, cfg: CampaignConfig, space: SynthesisSpace
) -> None:
    short = {"directions": [{"objective_type": "exploration", "budget": 9}]}
    good = {
        "directions": [
            {"objective_type": "exploration", "budget": 7, "rationale": "spread"},
            {
                "objective_type": "failure_targeted",
                "allowed": {"task_family": ["flight_change"]},
                "forbidden": {"expected_outcome": ["refuse"]},
                "avoid_patterns": [
                    "difficulty_profile=easy & interaction_challenge=emotional_pressure"
                ],
                "budget": 3,
                "target": "changes",
            },
        ]
    }
    server.script(Reply.text(json.dumps(short)), Reply.text(json.dumps(good)))
    plan = LLMDesigner.from_config(cfg).design(space, None, "c", 1, 10)
    assert "sum to 9, but they must sum to 10" in prompts(server)[1][-1]["content"]
    assert [d.direction_id for d in plan.directions] == ["r1-d00", "r1-d01"]
    assert [d.budget for d in plan.directions] == [7, 3] and plan.total_budget == 10
    assert plan.directions[1].allowed == {"task_family": ["flight_change"]}
    # The target reaches the Planner in its own field, not glued into the rationale.
    assert (plan.directions[1].target, plan.directions[1].rationale) == ("changes", "")
    assert (plan.directions[0].target, plan.directions[0].rationale) == ("", "spread")
    assert server.requests[0].body["temperature"] == 1.0


def test_designer_refuses_directions_no_blueprint_can_satisfy(space: SynthesisSpace) -> None:
    rule = domain_plugin("airline").checks.conflicts
    dead = {
        "objective_type": "under_covered",
        "allowed": {
            "expected_outcome": ["refuse"],
            "tool_use_pattern": ["lookup_verify_then_modify"],
        },
        "budget": 4,
    }
    alive = {"objective_type": "exploration", "budget": 6}
    answer = {
        "directions": [
            alive,
            dead,
            {
                **dead,
                "allowed": {
                    "task_family": ["loyalty_or_membership_service"],
                    "tool_use_pattern": ["state_change_with_confirmation"],
                },
            },
        ]
    }
    with pytest.raises(ValueError) as info:
        parse_plan(answer, space, "c", 1, 14, rule)
    message = str(info.value)
    assert "direction 1:" in message and "direction 2:" in message
    assert "direction 0:" not in message
    assert message.count("no feasible blueprint") == 2 and "needs a write" in message
    # Every draw of a refusal with a write pattern breaks that rule, whatever else it breaks.
    assert message.count("needs a write; ") == 2 and "(100% of draws)" in message
    # Without the domain's rule (or with directions it permits) the plan stands.
    assert len(parse_plan(answer, space, "c", 1, 14).directions) == 3
    plan = parse_plan({"directions": [alive, {**dead, "allowed": {}}]}, space, "c", 1, 10, rule)
    assert [d.budget for d in plan.directions] == [6, 4]


@pytest.mark.parametrize(
    ("direction_out", "error"),
    [
        (
            {
                "allowed": {"task_family": ["flight_change"]},
                "forbidden": {"task_family": ["flight_change"]},
            },
            "leaves []",
        ),
        (
            {"preferred": {"task_family": ["spaceship_rental"]}},
            "'spaceship_rental'] are not values",
        ),
        ({"avoid_patterns": ["difficulty_profile=extreme"]}, "'extreme' is not a value"),
        ({"avoid_patterns": ["easy and hard"]}, "is not 'factor=value"),
        ({"objective_type": "world_domination"}, "objective_type"),
    ],
)
def test_designer_directions_are_checked_against_the_space(
    direction_out: dict[str, Any],
    error: str,
    server: OpenAIServer,
    cfg: CampaignConfig,
    space: SynthesisSpace,
) -> None:
    bad = {"directions": [{"objective_type": "exploration", "budget": 10, **direction_out}]}
    server.script(Reply.text(json.dumps(bad)), Reply.text(json.dumps(bad)))
    designer = LLMDesigner.from_config(cfg)
    plan = designer.design(space, None, "c", 1, 10)
    assert error in designer.rejections[("c", 1)]
    assert error in prompts(server)[1][-1]["content"]
    # The round still runs: on the fallback plan, which records the rejection.
    assert sum(d.budget for d in plan.directions) == 10
    assert all(d.rationale.startswith("llm designer output rejected") for d in plan.directions)


# ---------------------------------------------------------------------- Planner


def test_planner_normalises_and_checks_a_blueprint(
    server: OpenAIServer, cfg: CampaignConfig, space: SynthesisSpace
) -> None:
    answer = {
        "selections": {
            **SELECTIONS,
            "task_family": "flight_cancellation",
            "tool_use_pattern": ["state_change_with_confirmation", "lookup_verify_then_modify"],
        },
        "intent": "cancel an eligible reservation",
        "difficulty_controls": {"expected_tool_calls": 4, "requires_state_change": True},
    }
    server.script(*[Reply.text(json.dumps(answer))] * 3)
    planner = LLMPlanner.from_config(cfg)
    # Two calls at once: blueprints 0 and 1 are one wave, blueprint 2 the next.
    planner.gateway.settings = planner.gateway.settings.model_copy(update={"concurrency": 2})
    d = direction(space, budget=3, preferred={"task_family": ["flight_cancellation"]})
    first, second, third = planner.plan(space, d, seed=5)
    assert [b.blueprint_id for b in (first, second, third)] == [
        "r1-d00-b0000",
        "r1-d00-b0001",
        "r1-d00-b0002",
    ]
    assert first.selections["task_family"] == ["flight_cancellation"]
    # Values keep the factor's order, so equal selections compare equal.
    assert first.selections["tool_use_pattern"] == [
        "lookup_verify_then_modify",
        "state_change_with_confirmation",
    ]
    assert first.difficulty_controls == {"expected_tool_calls": 4, "requires_state_change": "true"}
    # The first wave sees no blueprint and each of its prompts names a different factor to
    # vary; the second wave's prompt shows the first wave's blueprints.
    texts = [p[0]["content"] for p in prompts(server)]
    first_wave = [t for t in texts if "already planned" not in t]
    assert len(first_wave) == 2
    varied = {re.search(r'above all in "(\w+)"', t).group(1) for t in first_wave}  # type: ignore[union-attr]
    assert len(varied) == 2
    (later,) = [t for t in texts if "already planned" in t]
    assert later.count("cancel an eligible reservation") == 2


OUTCOME = {"expected_outcome": ["refuse"]}


@pytest.mark.parametrize(
    ("change", "constraints", "error", "fixed"),
    [
        ({"expected_outcome": []}, {}, "expected_outcome takes 1..1 values, not 0", {}),
        ({"tool_use_pattern": ["lookup_verify_then_modify"] * 2}, {}, "repeats a value", {}),
        ({"difficulty_profile": ["extreme"]}, {}, "['extreme'] are not values", {}),
        (
            {},
            {"allowed": {"task_family": ["flight_booking"]}},
            "outside the direction's allowed",
            {"task_family": ["flight_booking"]},
        ),
        (
            {},
            {"forbidden": {"difficulty_profile": ["medium"]}},
            "forbidden by the direction",
            {"difficulty_profile": ["hard"]},
        ),
        (
            {},
            {"avoid_patterns": ["task_family=flight_cancellation & expected_outcome=fulfill"]},
            "avoid pattern",
            OUTCOME,
        ),
    ],
)
def test_planner_rejects_selections_that_break_the_space_or_the_direction(
    change: dict[str, list[str]],
    constraints: dict[str, Any],
    error: str,
    fixed: dict[str, list[str]],
    server: OpenAIServer,
    cfg: CampaignConfig,
    space: SynthesisSpace,
) -> None:
    bad = Reply.text(json.dumps({"selections": {**SELECTIONS, **change}, "intent": "x"}))
    good = Reply.text(json.dumps({"selections": {**SELECTIONS, **fixed}, "intent": "y"}))
    server.script(bad, bad, good)
    d = direction(space, budget=2, **constraints)
    planner = LLMPlanner.from_config(cfg)
    # One call at a time, so the scripted replies meet the blueprints in order.
    planner.gateway.settings = planner.gateway.settings.model_copy(update={"concurrency": 1})
    with pytest.raises(PartialPlanningError) as info:
        planner.plan(space, d, seed=5)
    assert error in info.value.rejected["r1-d00-b0000"]
    assert "1 of 2 blueprints rejected" in str(info.value)
    # The next blueprint is planned on its own; only the broken one is lost.
    [kept] = info.value.blueprints
    assert kept.blueprint_id == "r1-d00-b0001" and kept.intent == "y"


def test_planner_applies_the_domain_feasibility_rule(
    server: OpenAIServer, cfg: CampaignConfig, space: SynthesisSpace
) -> None:
    answer = Reply.text(json.dumps({"selections": SELECTIONS, "intent": "x"}))
    server.script(answer, answer)
    planner = LLMPlanner.from_config(
        cfg, conflicts=lambda s: [Conflict("closed", "no cancellations today")]
    )
    with pytest.raises(PartialPlanningError, match="no cancellations today"):
        planner.plan(space, direction(space), seed=5)


def test_planner_repair_turn_names_every_domain_conflict_at_once(
    server: OpenAIServer, cfg: CampaignConfig, space: SynthesisSpace
) -> None:
    # Two independent airline rules: a cancellation leaves no payment method for a late
    # condition to change, and has no flight search to compare.
    broken = {
        **SELECTIONS,
        "tool_use_pattern": ["search_compare_then_book"],
        "interaction_challenge": ["constraint_hidden_until_late"],
    }
    server.script(
        Reply.text(json.dumps({"selections": broken, "intent": "x"})),
        Reply.text(json.dumps({"selections": SELECTIONS, "intent": "y"})),
    )
    [kept] = build_roles(cfg).planner.plan(space, direction(space), seed=5)
    repair = prompts(server)[1][-1]["content"]
    assert "constraint_hidden_until_late answers a proposal" in repair
    assert "search_compare_then_book needs a flight search" in repair
    assert kept.intent == "y"


def test_planner_reports_every_conflict_at_once(space: SynthesisSpace) -> None:
    answer = {
        "selections": {
            **SELECTIONS,
            "mood": ["calm"],
            "difficulty_profile": ["extreme"],
            "task_family": ["flight_booking"],
            "tool_use_pattern": [],
        },
        "intent": "x",
    }
    d = direction(space, forbidden={"task_family": ["flight_booking"]})
    with pytest.raises(ValueError) as info:
        parse_blueprint(
            answer, space, d, 0, 5, conflicts=lambda s: [Conflict("asked", "never asked")]
        )
    problems = str(info.value).split("; ")
    assert [p.split(" ")[0] for p in problems] == [
        "selections",
        "tool_use_pattern",
        "difficulty_profile:",
        "task_family:",
    ]
    assert "never asked" not in str(info.value)  # the domain rule is asked of a sound selection


# ---------------------------------------------------------------------- Generator


def test_generator_task_is_grounded_and_verifies(
    server: OpenAIServer, cfg: CampaignConfig, space: SynthesisSpace, reference: SynthTask
) -> None:
    server.script(Reply.text(json.dumps(_task_answer(reference))))
    generator = LLMGenerator.from_config(cfg)
    synth = generator.generate(blueprint(space), 3)
    assert (synth.task_id, synth.generator) == ("r1-d00-b0000-task", "llm")
    assert synth.requested == blueprint(space).selections
    prompt = prompts(server)[0][0]["content"]
    assert "[users " in prompt and "cancel_reservation [write]" in prompt
    assert '"flight_cancellation"' in prompt
    # The gold actions are the reference's, so the programmatic teacher's rollout verifies.
    gold = synth.task.evaluation_criteria
    assert gold is not None and [a.name for a in gold.actions or []] == [
        a.name
        for a in reference.task.evaluation_criteria.actions or []  # type: ignore[union-attr]
    ]
    messages = AirlineTeacher().messages(synth.task, seed=1)
    verdict = ReplayVerifier("airline").verify(synth.task, messages)
    assert verdict.passed, verdict.reasons
    assert contamination_reason(synth) is None


@pytest.mark.parametrize(
    ("actions", "selections", "error"),
    [
        ([{"name": "teleport", "arguments": {}}], {}, "'teleport' is not an agent tool"),
        ([{"name": "get_user_details", "arguments": {}}], {}, "missing arguments ['user_id']"),
        (
            [{"name": "get_reservation_details", "arguments": {"reservation_id": "ZZZZZZ"}}],
            {},
            "fails on the database",
        ),
        (
            [{"name": "cancel_reservation", "arguments": {"reservation_id": "ZZZZZZ"}}],
            {"expected_outcome": ["refuse"]},
            "expected_outcome is refuse",
        ),
    ],
)
def test_generator_rejects_tasks_it_cannot_execute(
    actions: list[dict[str, Any]],
    selections: dict[str, list[str]],
    error: str,
    server: OpenAIServer,
    cfg: CampaignConfig,
    space: SynthesisSpace,
    reference: SynthTask,
) -> None:
    bad = Reply.text(json.dumps({**_task_answer(reference), "gold_actions": actions}))
    server.script(bad, bad)
    with pytest.raises(GeneratorRejection, match="llm generator output rejected") as info:
        LLMGenerator.from_config(cfg).generate(blueprint(space, **selections), 3)
    assert error in str(info.value)
    assert error in prompts(server)[1][-1]["content"]


def test_generator_checks_a_requested_write_count(
    server: OpenAIServer, cfg: CampaignConfig, space: SynthesisSpace, reference: SynthTask
) -> None:
    grown = add_factor(space, REALIZABLE["num_write"], round=1)
    bp = blueprint(grown, num_write=["3-4"])
    bad = Reply.text(json.dumps(_task_answer(reference)))
    server.script(bad, bad)
    with pytest.raises(GeneratorRejection, match="num_write is 3-4, but the gold actions make 1"):
        LLMGenerator.from_config(cfg).generate(bp, 3)
    assert [in_bucket(n, "3-4") for n in (2, 3, 4, 5)] == [False, True, True, False]
    assert (in_bucket(7, "5+"), in_bucket(0, "0"), in_bucket(1, "few")) == (True, True, None)


def test_generator_names_every_unmet_request_at_once(
    server: OpenAIServer, cfg: CampaignConfig, space: SynthesisSpace, reference: SynthTask
) -> None:
    # The reference cancels one of four reservations it looks up (5 calls, medium, no
    # computation). Without its write it fulfils nothing, and it misses two more requests.
    answer = _task_answer(reference)
    reads = [a for a in answer["gold_actions"] if a["name"] != "cancel_reservation"]
    assert len(reads) == len(answer["gold_actions"]) - 1 == 4
    bp = blueprint(space, num_read=["1"], computation=["aggregate"])
    bad = Reply.text(json.dumps({**answer, "gold_actions": reads}))
    server.script(bad, bad)
    with pytest.raises(GeneratorRejection, match="llm generator output rejected"):
        LLMGenerator.from_config(cfg).generate(bp, 3)
    repair = prompts(server)[1][-1]["content"]
    for problem in (
        "task_family is flight_cancellation, but the writes (none) are those of "
        "loyalty_or_membership_service",
        "num_read is 1, but the gold actions make 4 read call(s)",
        "computation is aggregate (",
        "but the gold actions show none",
        "fulfilling flight_cancellation needs a write, num_write=0",
    ):
        assert problem in repair, (problem, repair)
    # The same requests, met, pass at the first answer.
    server.script(Reply.text(json.dumps(answer)))
    met = blueprint(space, num_read=["3-4"], computation=["none"])
    synth = LLMGenerator.from_config(cfg).generate(met, 3)
    assert synth.requested["num_read"] == ["3-4"] and server.request_count == 3


def test_generator_writes_must_be_the_task_familys_and_fit_the_difficulty(
    server: OpenAIServer, cfg: CampaignConfig, space: SynthesisSpace, reference: SynthTask
) -> None:
    bad = Reply.text(json.dumps(_task_answer(reference)))
    server.script(bad, bad)
    bp = blueprint(space, task_family=["flight_change"], difficulty_profile=["hard"])
    with pytest.raises(GeneratorRejection) as info:
        LLMGenerator.from_config(cfg).generate(bp, 3)
    message = str(info.value)
    assert (
        "task_family is flight_change, but the writes (cancel_reservation) are those of "
        "flight_cancellation" in message
    )
    assert "difficulty_profile is hard (6+ tool calls), but the gold actions make 5" in message


def test_generator_prompt_defines_every_factor_it_asks_for(cfg: CampaignConfig) -> None:
    space = seed_space("airline", "c")
    bp = blueprint(
        space, num_read=["2"], num_write=["1"], computation=["aggregate"], weather=["storm"]
    ).model_copy(update={"difficulty_controls": {"num_write": "1"}})
    prompt = LLMGenerator(Gateway.from_config(cfg.llm, "generator")).prompt(bp, 3)
    section = prompt.split("## What the blueprint's factors mean\n", 1)[1].split("\n\n")[0]
    defined = re.findall(r"^- (\w+): ", section, re.MULTILINE)
    assert defined == list(bp.selections)
    assert "difficulty_profile: how many gold_actions there are in all: easy 2-3 tool calls" in (
        section
    )
    assert "cancel_reservation" in section and "send_certificate" in section
    assert "conditional: a calculate call whose expression uses an amount" in section
    assert "weather: a factor added during the campaign" in section


# ---------------------------------------------------------------------- Reflector


def _probe() -> Probe:
    return Probe(
        campaign_id="c",
        round=1,
        name="num_write",
        distribution={"0": 30, "3-4": 20},
        failure_rate={"0": 0.1, "3-4": 1.0},
        coverage={"0": 0.9, "3-4": 0.0},
        cmi=0.3,
        cmi_null=0.01,
        p_value=0.001,
    )


def test_reflector_adds_a_realizable_factor_from_the_evidence(
    server: OpenAIServer, cfg: CampaignConfig, space: SynthesisSpace
) -> None:
    answer = {
        "reviews": [],
        "proposal": {
            "action": "add_factor",
            "name": "num_write",
            "values": REALIZABLE["num_write"].values,
            "origin": "failure_driven",
            "evidence": "probe num_write: cmi 0.3 nats, p 0.001",
        },
        "summary": "add num_write",
    }
    server.script(Reply.text(json.dumps(answer)))
    reflector = LLMReflector.from_config(cfg, REALIZABLE)
    feedback = Feedback(campaign_id="c", round=1, probes=[_probe()])
    decision, nxt = reflector.reflect(space, feedback, 1)
    prompt = prompts(server)[0][0]["content"]
    assert '"probe": "num_write"' in prompt and '"cmi_nats": 0.3' in prompt
    assert "- computation:" in prompt  # a realizable factor not yet in the space
    assert (decision.action, decision.next_space_version) == ("add_factor", 2)
    assert decision.new_factor is not None and decision.new_factor.round_introduced == 2
    assert decision.new_factor.status == FactorStatus.EXPERIMENTAL
    assert decision.new_factor.origin == "failure_driven"
    check_revision(space, nxt)
    assert server.requests[0].body["temperature"] == 0.0


def test_reflector_reviews_experimental_factors(
    server: OpenAIServer, cfg: CampaignConfig, space: SynthesisSpace
) -> None:
    grown = add_factor(space, REALIZABLE["num_write"], round=1)
    answer = {
        "reviews": [{"factor": "num_write", "decision": "promote", "evidence": "separates"}],
        "proposal": {"action": "no_change"},
    }
    server.script(Reply.text(json.dumps(answer)))
    decision, nxt = LLMReflector.from_config(cfg, REALIZABLE).reflect(
        grown, Feedback(campaign_id="c", round=2), 2
    )
    assert [r.action for r in decision.reviews] == ["promote"]
    assert nxt.factor("num_write").status == FactorStatus.STANDARD
    assert decision.next_space_version == nxt.version == grown.version + 1


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (
            {"proposal": {"action": "rename", "name": "task_family", "values": ["a", "b"]}},
            "never renamed, merged, deleted",
        ),
        ({"proposal": {"action": "delete", "name": "difficulty_profile"}}, "never renamed"),
        (
            {
                "reviews": [{"factor": "task_family", "decision": "deprecate"}],
                "proposal": {"action": "no_change"},
            },
            "seed factors never change",
        ),
        (
            {
                "proposal": {
                    "action": "add_factor",
                    "name": "task_family",
                    "values": ["a", "b"],
                    "origin": "coverage_gap",
                }
            },
            "already in the space",
        ),
        (
            {
                "proposal": {
                    "action": "add_factor",
                    "name": "weather",
                    "values": ["sun", "rain"],
                    "origin": "coverage_gap",
                }
            },
            "cannot be realized by the Generator",
        ),
        (
            {
                "proposal": {
                    "action": "add_factor",
                    "name": "num_write",
                    "values": ["few", "many"],
                    "origin": "failure_driven",
                }
            },
            "must have the values",
        ),
        ({"factors": [], "proposal": {"action": "no_change"}}, "factors"),
    ],
)
def test_reflector_may_not_rewrite_the_space(
    answer: dict[str, Any],
    error: str,
    server: OpenAIServer,
    cfg: CampaignConfig,
    space: SynthesisSpace,
) -> None:
    server.script(Reply.text(json.dumps(answer)), Reply.text(json.dumps(answer)))
    decision, nxt = LLMReflector.from_config(cfg, REALIZABLE).reflect(
        space, Feedback(campaign_id="c", round=1), 1
    )
    assert nxt == space and decision.next_space_version == space.version
    assert decision.action == "reallocate"
    assert decision.rationale.startswith("llm reflector output rejected")
    assert error in decision.rationale


def test_reflector_without_a_catalogue_accepts_a_measured_factor_and_probes_an_invented_one(
    server: OpenAIServer, cfg: CampaignConfig, space: SynthesisSpace
) -> None:
    # A factor a programmatic feature computes needs no definition and no labelling.
    answer = {
        "proposal": {
            "action": "add_factor",
            "name": "num_tool_calls",
            "values": ["1", "2", "3-4", "5+"],
            "origin": "coverage_gap",
            "guidance": "tool calls of the gold trajectory",
        }
    }
    server.script(Reply.text(json.dumps(answer)))
    decision, nxt = LLMReflector.from_config(cfg).reflect(
        space, Feedback(campaign_id="c", round=1), 1
    )
    assert decision.new_factor is not None and decision.new_factor.name == "num_tool_calls"
    assert nxt.factor("num_tool_calls").guidance == "tool calls of the gold trajectory"
    # An invented one is labelled on the campaign lake's diagnostic results first: this lake
    # has none, so nothing measures it and it is dropped, saying so.
    answer["proposal"] |= {
        "name": "num_passengers",
        "values": ["1", "2", "3+"],
        "definition": "passengers on the reservation the request is about",
    }
    server.script(Reply.text(json.dumps(answer)))
    decision, nxt = LLMReflector.from_config(cfg).reflect(
        space, Feedback(campaign_id="c", round=1), 1
    )
    assert nxt == space and decision.new_factor is None
    assert decision.dropped_factor is not None and decision.dropped_factor.name == "num_passengers"
    assert "no diagnostic task has a value" in decision.evidence


# ---------------------------------------------------------------------- plumbing


def test_ask_json_stops_after_one_repair(server: OpenAIServer, cfg: CampaignConfig) -> None:
    server.script(Reply.text(""), Reply.text("no json here"), Reply.text('{"ok": 1}'))
    gateway = Gateway.from_config(cfg.llm, "planner")
    with pytest.raises(OutputRejected) as info:
        ask_json(gateway, "answer", lambda data: data)
    assert (
        info.value.reason
        == "no JSON object in the reply (first reply: empty reply: expected one JSON object)"
    )
    assert server.request_count == 2


def test_roles_are_built_from_the_config_with_their_gateways(
    server: OpenAIServer, cfg: CampaignConfig, tmp_path: Path
) -> None:
    roles = build_roles(cfg)
    names = [
        type(r).__name__
        for r in (roles.designer, roles.planner, roles.generator, roles.teacher, roles.reflector)
    ]
    assert names == ["LLMDesigner", "LLMPlanner", "LLMGenerator", "LLMTeacher", "LLMReflector"]
    # The Generator's labeller checks the values it states of invented factors; the
    # Reflector's labels the tasks an invented factor is probed on.
    assert [g.role for g in roles.gateways] == [
        "designer",
        "planner",
        "generator",
        "labeller",
        "teacher",
        "user_simulator",
        "reflector",
        "labeller",
    ]
    assert build_roles(cfg.model_copy(update={"agents": type(cfg.agents)()})).gateways == ()
    mono = cfg.model_copy(deep=True)
    mono.ablations.single_agent = True
    mono.llm.roles["single_agent"] = ModelSettings(model="openai/single-model")
    roles = build_roles(mono)
    assert roles.generator is roles.teacher and roles.generator.name == "single_agent"  # type: ignore[attr-defined]
    # Every gateway flushes its llm_calls rows under its own batch key, once.
    server.script(Reply.text("{}"))
    assert "single_agent" in [g.role for g in roles.gateways]
    roles.generator.gateway.complete([{"role": "user", "content": "hi"}])  # type: ignore[attr-defined]
    lake = Lake(tmp_path / "lake")
    [key] = flush_calls(lake, Calls(roles.gateways, "c", 1, "chunk-000"))
    assert "chunk-000-single_agent" in key
    [row] = lake.read(LLMCall, "c", 1)
    assert (row.role, row.outcome) == ("single_agent", "ok")
    assert flush_calls(lake, Calls(roles.gateways, "c", 1, "chunk-000")) == []


def test_an_llm_role_without_a_model_is_a_config_error() -> None:
    cfg = CampaignConfig.model_validate({"agents": {"designer": {"kind": "llm"}}})
    with pytest.raises(ConfigError, match=r"llm\.roles\.designer\.model or llm\.default\.model"):
        build_roles(cfg)


def test_llm_roles_on_another_domain_use_its_registration(cfg: CampaignConfig) -> None:
    retail = cfg.model_copy(deep=True)
    retail.campaign.domain = "retail"
    roles = build_roles(retail)
    assert roles.generator.domain.name == "retail"  # type: ignore[attr-defined]
    assert roles.planner._conflicts == domain_plugin("retail").checks.conflicts  # type: ignore[attr-defined]


def test_generator_may_answer_that_no_record_realizes_the_blueprint(
    server: OpenAIServer, cfg: CampaignConfig, space: SynthesisSpace
) -> None:
    """The blueprint is dropped with the model's reason, as a programmatic Generator's is."""
    generator = LLMGenerator.from_config(cfg)
    bp = blueprint(space)
    assert '{"unrealizable": "<what the records shown lack>"}' in generator.prompt(bp, 3)
    server.script(Reply.text(json.dumps({"unrealizable": "no customer shown has\n two bags"})))
    with pytest.raises(GeneratorRejection) as info:
        generator.generate(bp, 3)
    assert str(info.value) == (
        "the llm generator found no record to realize it: no customer shown has two bags"
    )
    assert info.value.stage == "generate" and server.request_count == 1  # no repair turn
    # An empty reason is malformed output: the repair turn asks again.
    server.script(Reply.text(json.dumps({"unrealizable": " "})), Reply.text("{}"))
    with pytest.raises(GeneratorRejection, match="llm generator output rejected"):
        generator.generate(bp, 3)
    assert '"unrealizable" holds one sentence' in prompts(server)[2][-1]["content"]
