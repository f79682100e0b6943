"""The programmatic telecom Generator: tasks that verify, realize their blueprint and are new.

The controllability figures are measured as on airline and retail: the seed space plus the
factors the Reflector may promote (``num_write``, ``num_read``, ``computation``), planned with
the Generator's feasibility rule, realized values recomputed from the verified trajectories.
Telecom's ``tool_use_pattern`` vocabulary is read here from the tool calls (the shared feature
extraction derives airline's only).
"""

from __future__ import annotations

import collections
import json
import time
from typing import Any

import pytest
from tau2.data_model.message import AssistantMessage, ToolMessage, UserMessage
from tau2.data_model.tasks import Task

from evosyn.agents.generator.base import GeneratorRejection
from evosyn.agents.generator.telecom import FAMILIES, HANDOFF_FAMILIES, TelecomGenerator, infeasible
from evosyn.agents.planner.programmatic import ProgrammaticPlanner
from evosyn.agents.reflector import REALIZABLE
from evosyn.agents.roles import programmatic_synthesis
from evosyn.agents.synthesis import controllability, synthesize
from evosyn.agents.teacher.telecom import TelecomTeacher
from evosyn.agents.verifier import ReplayVerifier
from evosyn.agents.verifier.reference import stock_reward
from evosyn.environments import FunctionalSymbol, get_domain
from evosyn.environments.telecom import policy
from evosyn.records import Blueprint, Direction, SynthesisSpace
from evosyn.space import add_factor, seed_space

PROMOTED = ("num_write", "num_read", "computation")
MEASURED = ("task_family", "difficulty_profile", *PROMOTED)
MIN_RATE = 0.99


@pytest.fixture(scope="module")
def generator() -> TelecomGenerator:
    return TelecomGenerator()


@pytest.fixture(scope="module")
def teacher() -> TelecomTeacher:
    return TelecomTeacher()


@pytest.fixture(scope="module")
def verifier() -> ReplayVerifier:
    return ReplayVerifier("telecom")


def promoted_space() -> SynthesisSpace:
    space = seed_space("telecom", "ctl")
    for round_, name in enumerate(PROMOTED, start=1):
        space = add_factor(space, REALIZABLE[name], round=round_)
    return space


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


def _pattern_rate(blueprints: list[Blueprint], batch: Any) -> tuple[int, int]:
    """Verified samples whose requested patterns all show, of those requesting any."""
    by_task = {t.task_id: t.blueprint_id for t in batch.tasks}
    by_id = {b.blueprint_id: b for b in blueprints}
    trajectories = {t.trajectory_id: t for t in batch.trajectories}
    matched = total = 0
    for verdict in batch.verified:
        wanted = set(by_id[by_task[verdict.task_id]].selections.get("tool_use_pattern", []))
        if wanted:
            total += 1
            matched += wanted <= shown_patterns(trajectories[verdict.trajectory_id].messages)
    return matched, total


def synthesize_report(count: int, seed: int, promoted: bool = True) -> dict[str, Any]:
    """Plan ``count`` blueprints, synthesize them, and the figures as a dict (printed)."""
    space = promoted_space() if promoted else seed_space("telecom", "ctl")
    measured = MEASURED if promoted else MEASURED[:2]
    direction = Direction(
        campaign_id="ctl",
        round=1,
        direction_id="explore",
        space_version=space.version,
        objective="exploration",
        budget=count,
    )
    blueprints = ProgrammaticPlanner(infeasible).plan(space, direction, seed)
    generator = TelecomGenerator()
    start = time.perf_counter()
    batch = synthesize(
        blueprints,
        generator,
        TelecomTeacher(),
        ReplayVerifier("telecom"),
        seed=seed,
        contamination=generator.contamination_reason,
    )
    seconds = time.perf_counter() - start
    stages = collections.Counter(r.stage for r in batch.rejections)
    verified = batch.verified
    rates = {c.factor: c for c in controllability(blueprints, batch)}
    matched, total = _pattern_rate(blueprints, batch)
    report = {
        "blueprints": len(blueprints),
        "verified": len(verified),
        "verified_share_of_blueprints": len(verified) / len(blueprints),
        "rejections": dict(stages),
        "controllability": {
            name: f"{c.rate:.4f} ({c.matched}/{c.total}, {c.underivable} underivable)"
            for name, c in sorted(rates.items())
        },
        "tool_use_pattern": f"{matched}/{total}",
        "distinct_decisive_signatures": len({v.realized["decisive_signature"] for v in verified}),
        "contamination_rejections": stages.get("contamination", 0),
        "contamination_candidates_skipped": generator.contamination_skips,
        "computation_mix": dict(collections.Counter(v.realized["computation"] for v in verified)),
        "verified_tasks_per_second": len(verified) / seconds,
    }
    print(report)
    assert set(measured) <= set(rates), sorted(rates)
    for name in measured:
        assert rates[name].total > 0, name
        assert rates[name].rate >= MIN_RATE, (name, report["controllability"][name])
    assert total > 0 and matched / total >= MIN_RATE, report["tool_use_pattern"]
    for trajectory in batch.trajectories:
        assert procedure_violation(trajectory.messages) is None
    for value in ("none", "aggregate", "constrained_opt") if promoted else ():
        assert report["computation_mix"].get(value, 0) > 0, value
    assert stages.get("verify", 0) == 0, [r.reason for r in batch.rejections][:5]
    assert all(r.reason.strip() and "\n" not in r.reason for r in batch.rejections)
    return report


def test_80_blueprints_realize_every_requested_factor() -> None:
    report = synthesize_report(80, seed=11)
    assert report["verified_share_of_blueprints"] >= 0.95


@pytest.mark.slow
def test_1000_blueprints_realize_every_requested_factor() -> None:
    report = synthesize_report(1000, seed=0)
    assert report["verified_share_of_blueprints"] >= 0.98
    assert report["distinct_decisive_signatures"] >= 50


@pytest.mark.slow
def test_1000_seed_space_blueprints_realize_every_requested_factor() -> None:
    report = synthesize_report(1000, seed=2024, promoted=False)
    assert report["verified_share_of_blueprints"] >= 0.98


def blueprint(
    family: str,
    outcome: str,
    *,
    focus: tuple[str, ...] = ("eligibility_check",),
    patterns: tuple[str, ...] = ("multi_hop_retrieval",),
    challenges: tuple[str, ...] = (),
    controls: dict[str, str] | None = None,
    difficulty: str = "medium",
    index: int = 0,
) -> Blueprint:
    """A hand-built blueprint for one family and outcome."""
    controls = controls or {}
    selections = {
        "task_family": [family],
        "expected_outcome": [outcome],
        "policy_or_constraint_focus": list(focus),
        "tool_use_pattern": list(patterns),
        "interaction_challenge": list(challenges),
        "difficulty_profile": [difficulty],
    } | {k: [v] for k, v in controls.items()}
    return Blueprint(
        campaign_id="test",
        round=1,
        blueprint_id=f"bp-{family}-{outcome}-{index}",
        direction_id="d0",
        space_version=1,
        selections=selections,
        intent="test",
        difficulty_controls={k: v for k, v in controls.items() if k in ("num_write", "num_read")},
        seed=0,
    )


def _verify(task: Any, teacher: TelecomTeacher, verifier: ReplayVerifier) -> Any:
    messages = teacher.rollout(task, seed=1).messages
    verdict = verifier.verify(task.task, messages)
    assert verdict.passed, verdict.reasons
    return verdict, messages


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
    verdict, messages = _verify(task, teacher, verifier)
    loaded = Task.model_validate_json(task.task.model_dump_json())
    assert stock_reward("telecom", loaded, messages) == 1.0
    assert "multi_hop_retrieval" in shown_patterns(messages)
    if outcome == "refuse":
        assert verdict.realized["num_write"] == "0"
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
        ("line_management", "contract_or_fee_constraint", "contract of line"),
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
    verdict, _ = _verify(task, teacher, verifier)
    assert verdict.realized["num_write"] == "0"


@pytest.mark.parametrize("family", sorted(HANDOFF_FAMILIES))
def test_out_of_scope_request_is_transferred(
    family: str, generator: TelecomGenerator, teacher: TelecomTeacher, verifier: ReplayVerifier
) -> None:
    task = generator.generate(blueprint(family, "refuse", patterns=()), seed=2)
    verdict, messages = _verify(task, teacher, verifier)
    assert verdict.realized["num_transfer"] == "1"
    assert "TRANSFERRED TO A HUMAN" in (messages[-1].content or "")


@pytest.mark.parametrize("writes", ["1", "2", "3-4", "5+"])
def test_composition_reaches_the_requested_writes(
    writes: str, generator: TelecomGenerator, teacher: TelecomTeacher, verifier: ReplayVerifier
) -> None:
    for family in ("plan_change", "billing_issue", "line_management", "service_troubleshooting"):
        bp = blueprint(family, "fulfill", controls={"num_write": writes}, difficulty="hard")
        verdict, _ = _verify(generator.generate(bp, seed=7), teacher, verifier)
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
    verdict, _ = _verify(generator.generate(bp, seed=1), teacher, verifier)
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
        _, messages = _verify(generator.generate(bp, seed=2), teacher, verifier)
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
    assert infeasible(base | {"num_write": ["1"], "difficulty_profile": ["easy"]}) is None


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
    generator_cls, teacher_cls, feasible = programmatic_synthesis("telecom")
    assert generator_cls is TelecomGenerator and teacher_cls is TelecomTeacher
    assert feasible is infeasible
