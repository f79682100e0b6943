"""The programmatic telecom Generator: tasks that verify, realize their blueprint and are new.

The controllability figures are measured as on airline and retail: the seed space plus the
factors the Reflector may promote (``num_write``, ``num_read``, ``computation``), planned with
the Generator's feasibility rule, realized values recomputed from the verified trajectories.
Telecom's ``tool_use_pattern`` vocabulary is read here from the tool calls (the shared feature
extraction derives airline's only).
"""

from __future__ import annotations

import functools
import json
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
from tau2.data_model.message import AssistantMessage, ToolMessage, UserMessage
from tau2.data_model.tasks import Task

from evosyn.agents.generator.base import GeneratorRejection
from evosyn.agents.verifier import ReplayVerifier
from evosyn.agents.verifier.reference import stock_reward
from evosyn.environments import FunctionalSymbol, get_domain
from evosyn.environments.registry import domain_plugin
from evosyn.environments.telecom import policy
from evosyn.environments.telecom.generator import (
    FAMILIES,
    HANDOFF_FAMILIES,
    TelecomGenerator,
    infeasible,
)
from evosyn.environments.telecom.teacher import TelecomTeacher

MEASURED = ("task_family", "difficulty_profile", *PROMOTED)


@pytest.fixture(scope="module")
def generator() -> TelecomGenerator:
    return TelecomGenerator()


@pytest.fixture(scope="module")
def teacher() -> TelecomTeacher:
    return TelecomTeacher()


@pytest.fixture(scope="module")
def verifier() -> ReplayVerifier:
    return ReplayVerifier("telecom")


def _values(arguments: dict[str, Any]) -> set[str]:
    keys = get_domain("telecom").knowledge.entity_keys
    return {str(v) for k, v in arguments.items() if k in keys}


def shown_patterns(messages: list[Any]) -> set[str]:
    """Telecom ``tool_use_pattern`` values a trajectory shows, from its tool calls.

    A write on a record an earlier read looked up; the call right before a write a read of
    its record; a user turn right before a write; a write picking one of the bills a read
    listed; a check on the phone before a fix on it; a customer -> line -> plan or device
    chain of look-ups. The first four need an agent write.
    """
    domain = get_domain("telecom")
    shown: set[str] = set()
    looked_up: set[str] = set()
    listed: list[set[str]] = []
    previous_call: Any = None
    previous: Any = None
    user_read = line_read = False
    pending: dict[str, Any] = {}
    for message in messages:
        if isinstance(message, ToolMessage) and message.id in pending:
            call = pending.pop(message.id)
            content = message.content or ""
            if call.name == "get_bills_for_customer" and content.startswith("["):
                bills = {row["bill_id"] for row in json.loads(content)}
                if len(bills) >= 2:
                    listed.append(bills)
        for call in getattr(message, "tool_calls", None) or []:
            pending[call.id] = call
            symbol = domain.symbol(call.name, call.requestor)
            values = _values(call.arguments)
            if call.requestor == "user":
                if symbol == FunctionalSymbol.READ:
                    user_read = True
                elif symbol == FunctionalSymbol.WRITE and user_read:
                    shown.add("diagnose_then_resolve")
            elif symbol == FunctionalSymbol.READ:
                looked_up |= values
                target = str(call.arguments.get("id", ""))
                if call.name == "get_details_by_id" and target.startswith("L"):
                    line_read = True
                if call.name == "get_details_by_id" and target[:1] in ("P", "D") and line_read:
                    shown.add("multi_hop_retrieval")
            elif symbol == FunctionalSymbol.WRITE:
                if values & looked_up:
                    shown.add("lookup_then_update")
                before = previous_call
                if (
                    before is not None
                    and before.requestor == "assistant"
                    and domain.symbol(before.name) == FunctionalSymbol.READ
                    and _values(before.arguments) & values
                ):
                    shown.add("verify_before_action")
                if isinstance(previous, UserMessage) and previous.content:
                    shown.add("state_change_with_confirmation")
                bill = str(call.arguments.get("bill_id", ""))
                if any(bill in bills for bills in listed):
                    shown.add("compare_options_then_apply")
            previous_call = call
        previous = message
    return shown


def procedure_violation(messages: list[Any]) -> str | None:
    """The first procedure rule a conversation breaks: identify first, confirm every write."""
    domain = get_domain("telecom")
    identified = False
    for before, message in zip([None, *messages], messages, strict=False):
        if not isinstance(message, AssistantMessage):
            continue
        for call in message.tool_calls or []:
            if call.name in policy.IDENTIFY_TOOLS:
                identified = True
            elif not identified:
                return f"{call.name} before the customer was identified"
            elif domain.symbol(call.name) == FunctionalSymbol.WRITE:
                said = (before.content or "").lower() if isinstance(before, UserMessage) else ""
                if not said.startswith("yes"):
                    return f"{call.name} without the user's confirmation right before it"
    return None


def _pattern_rate(run: Run) -> tuple[int, int]:
    """Verified samples whose requested patterns all show, of those requesting any."""
    matched = total = 0
    for wanted, messages in run.requested_patterns():
        if wanted:
            total += 1
            matched += wanted <= shown_patterns(messages)
    return matched, total


def synthesize_report(count: int, seed: int, promoted: bool = True) -> dict[str, Any]:
    """Plan ``count`` blueprints, synthesize them, and the figures as a dict (printed)."""
    measured = MEASURED if promoted else MEASURED[:2]
    generator = TelecomGenerator()
    run = plan_and_synthesize(
        "telecom",
        count,
        seed,
        promoted=promoted,
        infeasible=infeasible,
        generator=generator,
        teacher=TelecomTeacher(),
    )
    matched, total = _pattern_rate(run)
    report = {
        **run.outcome_figures(),
        "tool_use_pattern": f"{matched}/{total}",
        **run.yield_figures(generator.skips),
    }
    print(report)
    assert total > 0 and matched / total >= MIN_RATE, report["tool_use_pattern"]
    for trajectory in run.batch.trajectories:
        assert procedure_violation(trajectory.messages) is None
    run.check(report, measured, ("none", "aggregate", "constrained_opt") if promoted else ())
    return report


def test_80_blueprints_realize_every_requested_factor() -> None:
    report = synthesize_report(80, seed=11)
    # Requested challenges a task gives no occasion for (a change of mind where nothing is
    # proposed) are rejected at "realize"; 0.89 measured on this seed.
    assert report["verified_share_of_blueprints"] >= 0.85


@pytest.mark.slow
def test_1000_blueprints_realize_every_requested_factor() -> None:
    report = synthesize_report(1000, seed=0)
    # Telecom's database holds a few hundred distinct tasks: past them a blueprint can only
    # repeat a kept one (rejected as a duplicate), so the share counts the other blueprints.
    assert report["verified_share_of_fresh_blueprints"] >= 0.85  # realize rejections included
    assert report["distinct_decisive_signatures"] >= 50


@pytest.mark.slow
def test_1000_seed_space_blueprints_realize_every_requested_factor() -> None:
    report = synthesize_report(1000, seed=2024, promoted=False)
    assert report["verified_share_of_fresh_blueprints"] >= 0.85  # as above


#: A hand-built blueprint for one family and outcome.
blueprint = functools.partial(
    hand_blueprint, focus=("eligibility_check",), patterns=("multi_hop_retrieval",)
)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("outcome", ["fulfill", "refuse"])
def test_every_family_and_outcome_verifies(
    family: str,
    outcome: str,
    generator: TelecomGenerator,
    teacher: TelecomTeacher,
    verifier: ReplayVerifier,
) -> None:
    bp = blueprint(family, outcome, difficulty="hard")
    if outcome == "fulfill" and family in HANDOFF_FAMILIES:
        assert infeasible(bp.selections) is not None
        with pytest.raises(GeneratorRejection, match="no telecom tool"):
            generator.generate(bp, seed=3)
        return
    task = generator.generate(bp, seed=3)
    verdict, messages = verified_rollout(task, teacher, verifier)
    loaded = Task.model_validate_json(task.task.model_dump_json())
    assert stock_reward("telecom", loaded, messages) == 1.0
    assert "multi_hop_retrieval" in shown_patterns(messages)
    if outcome == "refuse":
        # The agent writes nothing; the user may fix the phone first (a locked SIM's call).
        env = get_domain("telecom")
        agent = [a for a in task.task.evaluation_criteria.actions if a.requestor == "assistant"]
        assert all(env.symbol(a.name) != FunctionalSymbol.WRITE for a in agent)
        if verdict.realized["num_write"] != "0":
            assert verdict.realized["task_family"] == family
    else:
        assert verdict.realized["task_family"] == family
    first = task.task.evaluation_criteria.actions[0]
    assert first.name in policy.IDENTIFY_TOOLS
    # The phone is one of the caller's lines, never the line of the official tasks.
    phone = task.task.initial_state.initialization_actions[0].arguments["phone_number"]
    assert phone not in generator._official_lines


@pytest.mark.parametrize(
    ("family", "focus", "rule"),
    [
        ("plan_change", "eligibility_check", "at most 2 GB"),
        ("billing_issue", "billing_or_payment_constraint", "only for overdue bills"),
        ("line_management", "contract_or_fee_constraint", "contract of the line"),
        ("line_management", "billing_or_payment_constraint", "is overdue"),
        ("service_troubleshooting", "identity_or_authorization_constraint", "not on your account"),
    ],
)
def test_refusals_hinge_on_the_policy_rule(
    family: str,
    focus: str,
    rule: str,
    generator: TelecomGenerator,
    teacher: TelecomTeacher,
    verifier: ReplayVerifier,
) -> None:
    task = generator.generate(blueprint(family, "refuse", focus=(focus,)), seed=5)
    assert rule in (task.task.description.notes or "")
    verdict, _ = verified_rollout(task, teacher, verifier)
    assert verdict.realized["num_write"] == "0"


@pytest.mark.parametrize("family", sorted(HANDOFF_FAMILIES))
def test_out_of_scope_request_is_transferred(
    family: str, generator: TelecomGenerator, teacher: TelecomTeacher, verifier: ReplayVerifier
) -> None:
    task = generator.generate(blueprint(family, "refuse", patterns=()), seed=2)
    verdict, messages = verified_rollout(task, teacher, verifier)
    assert verdict.realized["num_transfer"] == "1"
    assert "TRANSFERRED TO A HUMAN" in (messages[-2].content or "")
    assert messages[-1].content == "###TRANSFER###"  # the user's end of a transfer in τ²-bench


@pytest.mark.parametrize("writes", ["1", "2", "3-4", "5+"])
def test_composition_reaches_the_requested_writes(
    writes: str, generator: TelecomGenerator, teacher: TelecomTeacher, verifier: ReplayVerifier
) -> None:
    for family in ("plan_change", "billing_issue", "line_management", "service_troubleshooting"):
        bp = blueprint(family, "fulfill", controls={"num_write": writes}, difficulty="hard")
        verdict, _ = verified_rollout(generator.generate(bp, seed=7), teacher, verifier)
        assert verdict.realized["num_write"] == writes
        assert verdict.realized["task_family"] == family


@pytest.mark.parametrize(
    ("family", "kind"),
    [
        ("plan_change", "none"),
        ("plan_change", "aggregate"),
        ("billing_issue", "none"),
        ("billing_issue", "constrained_opt"),
        ("line_management", "constrained_opt"),
    ],
)
def test_computation_is_realized(
    family: str,
    kind: str,
    generator: TelecomGenerator,
    teacher: TelecomTeacher,
    verifier: ReplayVerifier,
) -> None:
    bp = blueprint(family, "fulfill", controls={"computation": kind}, difficulty="hard")
    verdict, _ = verified_rollout(generator.generate(bp, seed=1), teacher, verifier)
    assert verdict.realized["computation"] == kind


@pytest.mark.parametrize(
    "patterns",
    [
        ("lookup_then_update", "verify_before_action", "state_change_with_confirmation"),
        ("compare_options_then_apply", "diagnose_then_resolve"),
        ("multi_hop_retrieval", "diagnose_then_resolve", "verify_before_action"),
    ],
)
def test_requested_patterns_show(
    patterns: tuple[str, ...],
    generator: TelecomGenerator,
    teacher: TelecomTeacher,
    verifier: ReplayVerifier,
) -> None:
    for family in ("billing_issue", "line_management"):
        bp = blueprint(family, "fulfill", patterns=patterns, difficulty="hard")
        _, messages = verified_rollout(generator.generate(bp, seed=2), teacher, verifier)
        assert set(patterns) <= shown_patterns(messages)


@pytest.mark.parametrize(
    ("selections", "needle"),
    [
        ({"num_read": ["0"]}, "num_read=0"),
        ({"computation": ["conditional"]}, "no calculate tool"),
        ({"expected_outcome": ["refuse"], "num_write": ["1"]}, "num_write=1"),
        ({"task_family": ["device_upgrade"]}, "no telecom tool"),
        ({"computation": ["constrained_opt"]}, "computation=constrained_opt"),
        ({"difficulty_profile": ["easy"], "num_write": ["3-4"]}, "difficulty_profile=easy"),
        (
            {"expected_outcome": ["refuse"], "tool_use_pattern": ["verify_before_action"]},
            "needs an agent write",
        ),
        (
            {"task_family": ["service_troubleshooting"], "num_write": ["0"]},
            "num_write=0",
        ),
        ({"tool_use_pattern": ["compare_options_then_apply"]}, "no options"),
    ],
)
def test_infeasible_names_impossible_combinations(
    selections: dict[str, list[str]], needle: str
) -> None:
    base = {"task_family": ["plan_change"], "expected_outcome": ["fulfill"]}
    reason = infeasible(base | selections)
    assert reason is not None and needle in reason
    # A refuel reads the customer, the line (its record names the caller's number) and the
    # data usage: four calls at least, so plan_change is never easy.
    assert infeasible(base | {"num_write": ["1"], "difficulty_profile": ["medium"]}) is None
    assert infeasible(base | {"difficulty_profile": ["easy"]}) is not None


def test_unrealizable_blueprint_is_rejected_with_reason(generator: TelecomGenerator) -> None:
    bp = blueprint("plan_change", "fulfill", controls={"computation": "conditional"})
    with pytest.raises(GeneratorRejection, match="calculate"):
        generator.generate(bp, seed=0)


def test_generation_is_deterministic_and_varies_by_seed(generator: TelecomGenerator) -> None:
    bp = blueprint("service_troubleshooting", "fulfill", difficulty="hard")
    one = generator.generate(bp, seed=4).task.model_dump_json()
    assert one == generator.generate(bp, seed=4).task.model_dump_json()
    others = {generator.generate(bp, seed=s).task.model_dump_json() for s in range(5, 9)}
    assert len(others - {one}) >= 3


def test_official_tasks_count_as_contamination(generator: TelecomGenerator) -> None:
    official = get_domain("telecom").tasks()[:10]
    assert all(generator.contamination_reason(t) for t in official)
    fresh = generator.generate(blueprint("service_troubleshooting", "fulfill"), seed=0)
    assert generator.contamination_reason(fresh) is None


def test_roles_load_the_telecom_synthesis() -> None:
    plugin = domain_plugin("telecom")
    assert plugin.generator is TelecomGenerator and plugin.teacher is TelecomTeacher
    assert plugin.infeasible == infeasible
