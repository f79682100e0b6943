"""The programmatic retail Generator: tasks that verify, realize their blueprint and are new.

The controllability figures are measured as on airline: the seed space plus the factors the
Reflector may promote (``num_write``, ``num_read``, ``computation``), planned with the
Generator's feasibility rule, realized values recomputed from the verified trajectories.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest
from synthesis_checks import (
    MIN_RATE,
    PROMOTED,
    Run,
    hand_blueprint,
    plan_and_synthesize,
    verified_rollout,
)
from tau2.data_model.message import AssistantMessage, UserMessage
from tau2.data_model.tasks import Task

from evosyn.agents.generator.base import GeneratorRejection
from evosyn.agents.verifier import ReplayVerifier
from evosyn.agents.verifier.reference import stock_reward
from evosyn.environments import FunctionalSymbol, get_domain
from evosyn.environments.retail import policy
from evosyn.environments.retail.generator import FAMILIES, RetailGenerator, infeasible
from evosyn.environments.retail.teacher import RetailTeacher

MEASURED = ("task_family", "difficulty_profile", *PROMOTED)


@pytest.fixture(scope="module")
def generator() -> RetailGenerator:
    return RetailGenerator()


@pytest.fixture(scope="module")
def teacher() -> RetailTeacher:
    return RetailTeacher()


@pytest.fixture(scope="module")
def verifier() -> ReplayVerifier:
    return ReplayVerifier("retail")


def shown_patterns(messages: list[Any]) -> set[str]:
    """Retail ``tool_use_pattern`` values a trajectory shows, from its tool calls.

    The shared feature extraction derives airline's pattern vocabulary only, so the retail
    one is read here: authentication first, a write on an entity read before, a user turn
    right before a write, reads of two orders or two products, a write on two or more items,
    a calculation. ``policy_check_before_action`` is the agent's reasoning: never shown.
    """
    domain = get_domain("retail")
    keys = domain.knowledge.entity_keys
    shown: set[str] = set()
    looked_up: set[tuple[str, str]] = set()
    reads: list[str] = []
    previous: Any = None
    first = True
    for message in messages:
        for call in getattr(message, "tool_calls", None) or []:
            symbol = domain.symbol(call.name)
            if first and call.name.startswith("find_user_id_by_"):
                shown.add("authenticate_then_act")
            first = False
            touched = {(k, str(v)) for k, v in call.arguments.items() if k in keys}
            if symbol == FunctionalSymbol.READ:
                looked_up |= touched
                reads.append(call.name)
            elif symbol == FunctionalSymbol.COMPUTE:
                shown.add("price_or_refund_calculation")
            elif symbol == FunctionalSymbol.WRITE:
                if touched & looked_up:
                    shown.add("lookup_verify_then_modify")
                if isinstance(previous, UserMessage) and previous.content:
                    shown.add("state_change_with_confirmation")
                if len(call.arguments.get("item_ids") or []) >= 2:
                    shown.add("batched_multi_item_action")
        previous = message
    if max(reads.count("get_order_details"), reads.count("get_product_details"), 0) >= 2:
        shown.add("multi_entity_retrieval")
    return shown


def _procedure(messages: list[Any]) -> list[tuple[str, str, bool]]:
    """(tool, symbol, confirmed by the turn before) per assistant call."""
    domain = get_domain("retail")
    out = []
    for before, message in zip([None, *messages], messages, strict=False):
        confirmed = isinstance(before, UserMessage) and "yes" in (before.content or "").lower()
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls or []:
                out.append((call.name, domain.symbol(call.name).value, confirmed))
    return out


def _pattern_rate(run: Run) -> tuple[int, int]:
    """Verified samples whose requested (derivable) patterns all show, of those requesting."""
    matched = total = 0
    for wanted, messages in run.requested_patterns():
        wanted.discard("policy_check_before_action")
        if wanted:
            total += 1
            matched += wanted <= shown_patterns(messages)
    return matched, total


def synthesize_report(count: int, seed: int, promoted: bool = True) -> dict[str, Any]:
    """Plan ``count`` blueprints, synthesize them, and the figures as a dict (printed)."""
    measured = MEASURED if promoted else MEASURED[:2]
    generator = RetailGenerator()
    run = plan_and_synthesize(
        "retail",
        count,
        seed,
        promoted=promoted,
        infeasible=infeasible,
        generator=generator,
        teacher=RetailTeacher(),
    )
    report = {
        **run.outcome_figures(),
        **run.yield_figures(generator.skips),
        "tool_use_pattern": "{}/{}".format(*_pattern_rate(run)),
    }
    print(report)
    # Every conversation authenticates first and confirms every write (the procedure rules).
    for trajectory in run.batch.trajectories:
        assert policy.procedure_violation(_procedure(trajectory.messages)) is None
    matched, total = _pattern_rate(run)
    assert total > 0 and matched / total >= MIN_RATE, report["tool_use_pattern"]
    run.check(report, measured, ("none", "aggregate", "conditional") if promoted else ())
    return report


def test_100_blueprints_realize_every_requested_factor() -> None:
    report = synthesize_report(100, seed=11)
    # Requested challenges a task gives no occasion for (a change of mind where nothing is
    # proposed) are rejected at "realize"; 0.91 measured on this seed.
    assert report["verified_share_of_blueprints"] >= 0.85


@pytest.mark.slow
def test_1000_blueprints_realize_every_requested_factor() -> None:
    report = synthesize_report(1000, seed=0)
    assert report["verified_share_of_blueprints"] >= 0.85  # realize rejections included
    assert report["distinct_decisive_signatures"] >= 50


@pytest.mark.slow
def test_1000_seed_space_blueprints_realize_every_requested_factor() -> None:
    report = synthesize_report(1000, seed=2024, promoted=False)
    assert report["verified_share_of_blueprints"] >= 0.85  # realize rejections included


#: A hand-built blueprint for one family and outcome.
blueprint = functools.partial(
    hand_blueprint, focus=("order_status_precondition",), patterns=("authenticate_then_act",)
)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("outcome", ["fulfill", "refuse"])
def test_every_family_and_outcome_verifies(
    family: str,
    outcome: str,
    generator: RetailGenerator,
    teacher: RetailTeacher,
    verifier: ReplayVerifier,
) -> None:
    task = generator.generate(blueprint(family, outcome), seed=3)
    verdict, messages = verified_rollout(task, teacher, verifier)
    loaded = Task.model_validate_json(task.task.model_dump_json())
    assert stock_reward("retail", loaded, messages) == 1.0
    if outcome == "refuse":
        assert verdict.realized["num_write"] == "0"
    elif family != "profile_or_inquiry":
        assert verdict.realized["task_family"] == family
    first = task.task.evaluation_criteria.actions[0]
    assert first.name.startswith("find_user_id_by_")


@pytest.mark.parametrize(
    ("family", "focus", "rule"),
    [
        ("order_cancellation", "cancellation_reason_validity", "not acceptable"),
        ("order_cancellation", "once_per_order_action_lock", "already had its items modified"),
        ("order_item_modification", "product_variant_match", "same product"),
        ("order_item_modification", "payment_or_giftcard_balance", "balance"),
        ("order_logistics_modification", "once_per_order_action_lock", "already had its items"),
        ("return_delivered_order", "payment_or_giftcard_balance", "original payment method"),
        ("exchange_delivered_order", "product_variant_match", "same product"),
    ],
)
def test_refusals_hinge_on_the_focused_rule(
    family: str,
    focus: str,
    rule: str,
    generator: RetailGenerator,
    teacher: RetailTeacher,
    verifier: ReplayVerifier,
) -> None:
    task = generator.generate(blueprint(family, "refuse", focus=(focus,)), seed=5)
    assert rule in (task.task.description.notes or "")
    verified_rollout(task, teacher, verifier)
    if focus == "once_per_order_action_lock":
        # The lock is real: the task's initial state has the order already modified.
        state = get_domain("retail").initial_state(task.task)
        order_id = next(
            a.arguments["order_id"]
            for a in task.task.evaluation_criteria.actions
            if a.name == "get_order_details"
        )
        assert state.env.tools.db.orders[order_id].status == "pending (item modified)"


def test_out_of_scope_request_is_transferred(
    generator: RetailGenerator, teacher: RetailTeacher, verifier: ReplayVerifier
) -> None:
    bp = blueprint("profile_or_inquiry", "refuse", focus=("scope_or_escalation_boundary",))
    task = generator.generate(bp, seed=2)
    verdict, messages = verified_rollout(task, teacher, verifier)
    assert verdict.realized["num_transfer"] == "1"
    assert "TRANSFERRED TO A HUMAN" in (messages[-2].content or "")
    assert messages[-1].content == "###TRANSFER###"  # the user's end of a transfer in τ²-bench


@pytest.mark.parametrize("writes", ["2", "3-4", "5+"])
def test_composition_reaches_the_requested_writes(
    writes: str, generator: RetailGenerator, teacher: RetailTeacher, verifier: ReplayVerifier
) -> None:
    for family in ("exchange_delivered_order", "order_cancellation"):
        bp = blueprint(family, "fulfill", controls={"num_write": writes}, difficulty="hard")
        task = generator.generate(bp, seed=7)
        verdict, _ = verified_rollout(task, teacher, verifier)
        assert verdict.realized["num_write"] == writes
        assert verdict.realized["task_family"] == family


def test_computation_is_realized(
    generator: RetailGenerator, teacher: RetailTeacher, verifier: ReplayVerifier
) -> None:
    for kind in ("none", "aggregate", "conditional"):
        bp = blueprint("return_delivered_order", "fulfill", controls={"computation": kind})
        verdict, _ = verified_rollout(generator.generate(bp, seed=1), teacher, verifier)
        assert verdict.realized["computation"] == kind


@pytest.mark.parametrize(
    ("selections", "needle"),
    [
        ({"num_read": ["0"]}, "num_read=0"),
        ({"expected_outcome": ["refuse"], "num_write": ["1"]}, "refusal"),
        ({"num_write": ["0"]}, "needs a write"),
        ({"computation": ["constrained_opt"]}, "constrained_opt"),
        ({"task_family": ["profile_or_inquiry"], "num_write": ["2"]}, "at most one write"),
        ({"difficulty_profile": ["easy"], "num_write": ["3-4"]}, "difficulty_profile=easy"),
        ({"task_family": ["exchange_delivered_order"], "num_read": ["2"]}, "num_read=2"),
        (
            {"expected_outcome": ["refuse"], "tool_use_pattern": ["lookup_verify_then_modify"]},
            "needs a write",
        ),
        ({"tool_use_pattern": ["batched_multi_item_action"]}, "needs an item list"),
        (
            {"tool_use_pattern": ["price_or_refund_calculation"], "computation": ["none"]},
            "conflicts with computation=none",
        ),
    ],
)
def test_infeasible_names_impossible_combinations(
    selections: dict[str, list[str]], needle: str
) -> None:
    base = {"task_family": ["order_cancellation"], "expected_outcome": ["fulfill"]}
    reason = infeasible(base | selections)
    assert reason is not None and needle in reason
    assert infeasible(base | {"num_write": ["1"], "difficulty_profile": ["easy"]}) is None


def test_unrealizable_blueprint_is_rejected_with_reason(generator: RetailGenerator) -> None:
    bp = blueprint("profile_or_inquiry", "fulfill", controls={"num_write": "2"})
    with pytest.raises(GeneratorRejection, match="at most one write"):
        generator.generate(bp, seed=0)
    many = blueprint("order_logistics_modification", "fulfill", controls={"num_write": "5+"})
    many = many.model_copy(update={"selections": many.selections | {"num_read": ["2"]}})
    with pytest.raises(GeneratorRejection, match="num_read=2"):
        generator.generate(many, seed=0)


def test_generation_is_deterministic_and_varies_by_seed(generator: RetailGenerator) -> None:
    bp = blueprint("order_item_modification", "fulfill")
    one = generator.generate(bp, seed=4).task.model_dump_json()
    assert one == generator.generate(bp, seed=4).task.model_dump_json()
    others = {generator.generate(bp, seed=s).task.model_dump_json() for s in range(5, 9)}
    assert len(others - {one}) >= 3


def test_official_tasks_count_as_contamination(generator: RetailGenerator) -> None:
    official = get_domain("retail").tasks()[:10]
    assert all(generator.contamination_reason(t) for t in official)
    fresh = generator.generate(blueprint("order_cancellation", "fulfill"), seed=0)
    assert generator.contamination_reason(fresh) is None
