"""The programmatic airline Generator: tasks that verify, realize their blueprint and are new."""

from __future__ import annotations

import collections
import time
from typing import Any

import pytest
from synthesis_checks import exploration
from tau2.data_model.tasks import Task

from evosyn.agents.generator.base import GeneratorRejection
from evosyn.agents.planner.programmatic import ProgrammaticPlanner
from evosyn.agents.verifier import ReplayVerifier
from evosyn.agents.verifier.reference import stock_reward
from evosyn.buckets import DIFFICULTY_CALLS, bucket, difficulty_of
from evosyn.environments import FunctionalSymbol, get_domain
from evosyn.environments.airline import policy
from evosyn.environments.airline.generator import (
    COMPUTATIONS,
    FAMILIES,
    AirlineGenerator,
    infeasible,
)
from evosyn.environments.airline.teacher import AirlineTeacher
from evosyn.environments.contamination import official_index
from evosyn.environments.features import realized_features
from evosyn.records import Blueprint, Factor, FactorOrigin, SynthesisSpace, SynthTask
from evosyn.space import seed_space

pytestmark = pytest.mark.heavy

WRITE_FAMILIES = [f for f in FAMILIES if f != "loyalty_or_membership_service"]


@pytest.fixture(scope="module")
def generator() -> AirlineGenerator:
    return AirlineGenerator()


@pytest.fixture(scope="module")
def teacher() -> AirlineTeacher:
    return AirlineTeacher()


@pytest.fixture(scope="module")
def verifier() -> ReplayVerifier:
    return ReplayVerifier("airline")


def _default_patterns(family: str, outcome: str) -> list[str]:
    # A pattern every task of the family and outcome can show (refusals write nothing).
    if outcome == "fulfill" and family in WRITE_FAMILIES:
        return ["lookup_verify_then_modify"]
    return ["policy_check_before_action"]


def blueprint(
    family: str,
    outcome: str,
    *,
    focus: tuple[str, ...] = ("fare_rule_constraint",),
    challenges: tuple[str, ...] = (),
    controls: dict[str, int | str] | None = None,
    index: int = 0,
    difficulty: str = "medium",
    extra: dict[str, list[str]] | None = None,
    patterns: tuple[str, ...] = (),
) -> Blueprint:
    """A hand-built blueprint for one family and outcome."""
    return Blueprint(
        campaign_id="test",
        round=1,
        blueprint_id=f"bp-{family}-{outcome}-{index}",
        direction_id="d0",
        space_version=1,
        selections={
            "task_family": [family],
            "expected_outcome": [outcome],
            "policy_or_constraint_focus": list(focus),
            "tool_use_pattern": list(patterns or _default_patterns(family, outcome)),
            "interaction_challenge": list(challenges),
            "difficulty_profile": [difficulty],
            **(extra or {}),
        },
        intent=f"{family} / {outcome}",
        difficulty_controls=controls or {},
    )


def writes_of(task: Task) -> list[Any]:
    domain = get_domain("airline")
    return [
        a
        for a in task.evaluation_criteria.actions or []
        if domain.symbol(a.name) == FunctionalSymbol.WRITE
    ]


def roll(
    generator: AirlineGenerator,
    teacher: AirlineTeacher,
    verifier: ReplayVerifier,
    bp: Blueprint,
    seed: int = 3,
) -> tuple[SynthTask, Any, Any]:
    synth = generator.generate(bp, seed)
    trajectory = teacher.rollout(synth, seed)
    verdict = verifier.verify(synth.task, trajectory.messages)
    return synth, trajectory, verdict


# ------------------------------------------------------------------ each family and outcome


@pytest.mark.parametrize("outcome", ["fulfill", "refuse"])
@pytest.mark.parametrize("family", FAMILIES)
def test_family_outcome_verifies_and_realizes(
    family: str,
    outcome: str,
    generator: AirlineGenerator,
    teacher: AirlineTeacher,
    verifier: ReplayVerifier,
) -> None:
    synth, trajectory, verdict = roll(generator, teacher, verifier, blueprint(family, outcome))
    assert synth.task_id == "bp-" + f"{family}-{outcome}-0-task"
    # It is a τ²-bench task: it round-trips through tau2's own model.
    assert Task.model_validate(synth.task.model_dump()) == synth.task
    assert verdict.passed, verdict.reasons
    assert stock_reward("airline", synth.task, trajectory.messages) == 1.0
    features = realized_features(get_domain("airline"), trajectory.messages)
    if outcome == "refuse":
        assert features.num_write == 0
        assert not writes_of(synth.task)
        assert synth.task.evaluation_criteria.nl_assertions
    else:
        assert features.task_family == family
        assert (features.num_write >= 1) == (family in WRITE_FAMILIES)


def test_cancellations_follow_the_policy(generator: AirlineGenerator) -> None:
    db = generator.db
    for index in range(6):
        for outcome in ("fulfill", "refuse"):
            bp = blueprint("flight_cancellation", outcome, index=index)
            task = generator.generate(bp, index).task
            rids = [
                a.arguments["reservation_id"]
                for a in task.evaluation_criteria.actions or []
                if a.name == "get_reservation_details"
            ]
            transfers = [
                a
                for a in task.evaluation_criteria.actions or []
                if a.name == "transfer_to_human_agents"
            ]
            if outcome == "fulfill":
                writes = writes_of(task)
                cancels = [w for w in writes if w.name == "cancel_reservation"]
                # A delayed trip's cancellation may come with its certificate.
                assert cancels and {w.name for w in writes} <= {
                    "cancel_reservation",
                    "send_certificate",
                }
                for cancel in cancels:
                    reason = (cancel.info or "").split(".")[0].removeprefix("reason: ")
                    reservation = db.reservations[cancel.arguments["reservation_id"]]
                    assert policy.may_cancel(db, reservation, reason.replace(" ", "_"))[0]
            else:
                target = db.reservations[rids[-1]]
                assert not policy.may_cancel(db, target, "change_of_plan")[0]
                # A partly flown trip goes to a human agent, as the policy requires.
                assert bool(transfers) == policy.has_flown(db, target)


def test_baggage_fees_follow_the_allowance(generator: AirlineGenerator) -> None:
    db = generator.db
    for index in range(6):
        task = generator.generate(
            blueprint("seat_or_baggage_service", "fulfill", index=index), 1
        ).task
        (update,) = writes_of(task)
        reservation = db.reservations[update.arguments["reservation_id"]]
        user = db.users[reservation.user_id]
        expected = policy.nonfree_bags(
            update.arguments["total_baggages"],
            user.membership,
            reservation.cabin,
            len(reservation.passengers),
        )
        assert update.arguments["nonfree_baggages"] == expected
        assert update.arguments["total_baggages"] > reservation.total_baggages


def test_compensation_amounts(generator: AirlineGenerator) -> None:
    db = generator.db
    task = generator.generate(blueprint("refund_or_compensation", "fulfill"), 5).task
    (certificate,) = writes_of(task)
    # The gold action's note names the reservation it compensates (reads may include others).
    rid = (certificate.info or "").removeprefix("for reservation ").split(":")[0]
    assert rid in {
        a.arguments["reservation_id"]
        for a in task.evaluation_criteria.actions or []
        if a.name == "get_reservation_details"
    }
    reservation = db.reservations[rid]
    assert policy.airline_cancelled(db, reservation)
    assert certificate.arguments["amount"] == 100 * len(reservation.passengers)
    assert str(certificate.arguments["amount"]) in (task.evaluation_criteria.communicate_info or [])


# ------------------------------------------------------------------ difficulty controls


@pytest.mark.parametrize(
    ("family", "num_write", "num_read", "difficulty"),
    [
        ("flight_cancellation", "2", None, "hard"),
        ("flight_cancellation", "3-4", "5+", "hard"),
        ("seat_or_baggage_service", "2", "3-4", "medium"),
        ("flight_change", "3-4", None, "hard"),
        ("refund_or_compensation", "2", "5+", "hard"),
        ("flight_booking", "3-4", None, "hard"),
        ("flight_booking", "1", "3-4", "medium"),
        ("flight_cancellation", "5+", None, "hard"),
        ("flight_cancellation", "1", None, "easy"),
        ("loyalty_or_membership_service", None, "5+", "hard"),
    ],
)
def test_write_read_and_difficulty_controls_are_realized(
    family: str,
    num_write: str | None,
    num_read: str | None,
    difficulty: str,
    generator: AirlineGenerator,
    teacher: AirlineTeacher,
    verifier: ReplayVerifier,
) -> None:
    controls: dict[str, int | str] = {}
    if num_write is not None:
        controls["num_write"] = num_write
    if num_read is not None:
        controls["num_read"] = num_read
    bp = blueprint(family, "fulfill", controls=controls, difficulty=difficulty)
    _, trajectory, verdict = roll(generator, teacher, verifier, bp)
    assert verdict.passed, verdict.reasons
    features = realized_features(get_domain("airline"), trajectory.messages)
    if num_write is not None:
        assert bucket(features.num_write) == num_write
    assert features.task_family == family
    if num_read is not None:
        assert bucket(features.num_read) == num_read
    assert difficulty_of(features.num_tool_calls) == difficulty
    lo, hi = DIFFICULTY_CALLS[difficulty]
    assert lo <= features.num_tool_calls <= hi


@pytest.mark.parametrize(
    ("family", "computation"),
    [
        (family, c)
        for (family, outcome), kinds in sorted(COMPUTATIONS.items())
        for c in sorted(kinds)
    ]
    + [("flight_cancellation", "none")],
)
def test_computation_is_realized(
    family: str,
    computation: str,
    generator: AirlineGenerator,
    teacher: AirlineTeacher,
    verifier: ReplayVerifier,
) -> None:
    outcome = "fulfill" if (family, "fulfill") in COMPUTATIONS else "refuse"
    for index in range(3):
        bp = blueprint(
            family,
            outcome,
            index=index,
            difficulty="hard",
            extra={"computation": [computation]},
        )
        _, _, verdict = roll(generator, teacher, verifier, bp, seed=index)
        assert verdict.passed, verdict.reasons
        assert verdict.realized["computation"] == computation


@pytest.mark.parametrize(
    ("family", "outcome", "computation"),
    [
        ("flight_cancellation", "refuse", "aggregate"),
        ("seat_or_baggage_service", "fulfill", "none"),
        ("flight_booking", "fulfill", "none"),
        ("refund_or_compensation", "fulfill", "conditional"),
        ("loyalty_or_membership_service", "fulfill", "constrained_opt"),
    ],
)
def test_unrealizable_computation_is_rejected(
    family: str, outcome: str, computation: str, generator: AirlineGenerator
) -> None:
    bp = blueprint(family, outcome, extra={"computation": [computation]})
    assert infeasible(bp.selections) is not None
    with pytest.raises(GeneratorRejection, match=f"computation={computation}"):
        generator.generate(bp, 0)


@pytest.mark.parametrize(
    ("family", "outcome", "controls", "fragment"),
    [
        ("flight_cancellation", "refuse", {"num_write": "2"}, "conflicts with a refusal"),
        ("loyalty_or_membership_service", "fulfill", {"num_write": "1"}, "read-only"),
        ("flight_booking", "fulfill", {"num_write": "5+"}, "at most 3 writes"),
        ("flight_change", "fulfill", {"num_write": "0"}, "needs a write"),
        ("flight_cancellation", "fulfill", {"num_write": "2", "num_read": "1"}, "num_read=1"),
    ],
)
def test_unrealizable_controls_are_rejected_with_a_reason(
    family: str,
    outcome: str,
    controls: dict[str, int | str],
    fragment: str,
    generator: AirlineGenerator,
) -> None:
    with pytest.raises(GeneratorRejection, match=fragment):
        generator.generate(blueprint(family, outcome, controls=controls), 0)


# ------------------------------------------------------------------ determinism, novelty


def test_same_seed_same_task(generator: AirlineGenerator) -> None:
    for family in FAMILIES:
        # A new booking has no id to look up, so it takes another challenge.
        challenge = "user_false_claim" if family == "flight_booking" else "missing_information"
        bp = blueprint(family, "fulfill", challenges=(challenge,))
        first = generator.generate(bp, 11).model_dump_json()
        assert AirlineGenerator().generate(bp, 11).model_dump_json() == first
    bp = blueprint("flight_cancellation", "fulfill")
    tasks = {generator.generate(bp, s).task.model_dump_json() for s in range(5)}
    assert len(tasks) > 1


def test_official_tasks_are_flagged_and_generated_ones_are_not(
    generator: AirlineGenerator,
) -> None:
    official = get_domain("airline").tasks()
    for task in official:
        # Tasks without gold actions share one (empty) signature, so any of them may be named.
        reason = generator.contamination_reason(task)
        assert reason is not None and "official airline task" in reason
    # A generated task that is made to copy an official task's gold actions is flagged too.
    source = next(t for t in official if writes_of(t))
    mine = generator.generate(blueprint("flight_cancellation", "fulfill"), 0).task
    copy = mine.model_copy(update={"evaluation_criteria": source.evaluation_criteria})
    assert generator.contamination_reason(copy) is not None
    for family in FAMILIES:
        for outcome in ("fulfill", "refuse"):
            for seed in range(3):
                synth = generator.generate(blueprint(family, outcome), seed)
                assert generator.contamination_reason(synth) is None
                assert generator.contamination_reason(synth.task) is None


# ------------------------------------------------------------------ planner blueprints


def evolved_space() -> SynthesisSpace:
    """The seed space plus evolved num_write and num_read factors (difficulty controls)."""
    seed = seed_space("airline", "test")
    buckets = ["0", "1", "2", "3-4", "5+"]
    added = [
        Factor(name="num_write", values=buckets, origin=FactorOrigin.FAILURE_DRIVEN),
        Factor(name="num_read", values=buckets, origin=FactorOrigin.FAILURE_DRIVEN),
    ]
    return seed.model_copy(update={"version": 2, "factors": [*seed.factors, *added]})


def run_planned(
    count: int,
    seed: int,
    generator: AirlineGenerator,
    teacher: AirlineTeacher,
    verifier: ReplayVerifier,
    space: SynthesisSpace | None = None,
    planner: ProgrammaticPlanner | None = None,
) -> dict[str, Any]:
    """Generate, roll out and verify ``count`` planner blueprints; the report as a dict."""
    space = space or seed_space("airline", "test")
    direction = exploration(space, count, campaign_id="test")
    blueprints = (planner or ProgrammaticPlanner(infeasible)).plan(space, direction, seed)
    rejections: collections.Counter[str] = collections.Counter()
    failures: list[tuple[str, list[str]]] = []
    contaminated = 0
    family_hits = collections.Counter[str]()
    family_total = collections.Counter[str]()
    outcome_hits = collections.Counter[str]()
    raw_hits = collections.Counter[str]()
    control_hits = collections.Counter[str]()
    control_total = collections.Counter[str]()
    raw_total = collections.Counter[str]()
    outcome_total = collections.Counter[str]()
    combinations = collections.Counter[frozenset[str]]()
    verified = 0
    start = time.perf_counter()
    for bp in blueprints:
        try:
            synth = generator.generate(bp, seed)
        except GeneratorRejection as exc:
            rejections[str(exc)] += 1
            continue
        if generator.contamination_reason(synth.task) is not None:
            contaminated += 1
        trajectory = teacher.rollout(synth, seed)
        verdict = verifier.verify(synth.task, trajectory.messages)
        if not verdict.passed:
            failures.append((bp.blueprint_id, verdict.reasons))
            continue
        verified += 1
        combinations[frozenset(a.name for a in writes_of(synth.task))] += 1
        features = realized_features(verifier.domain, trajectory.messages)
        family = bp.selections["task_family"][0]
        outcome = bp.selections["expected_outcome"][0]
        raw_total[family] += 1
        raw_hits[family] += features.task_family == family
        # A refusal writes nothing, so only fulfilled requests show their family in writes.
        if outcome == "fulfill":
            family_total[family] += 1
            family_hits[family] += features.task_family == family
        for name, value in bp.difficulty_controls.items():
            control_total[name] += 1
            control_hits[name] += features.as_values()[name] == value
        expect_write = outcome == "fulfill" and family != "loyalty_or_membership_service"
        outcome_total[outcome] += 1
        outcome_hits[outcome] += (features.num_write >= 1) == expect_write
    seconds = time.perf_counter() - start
    generated = verified + len(failures)
    report = {
        "blueprints": len(blueprints),
        "generated": generated,
        "verified": verified,
        "verified_share": verified / generated if generated else 0.0,
        "failures": failures,
        "rejections": dict(rejections),
        "rejection_kinds": dict(
            collections.Counter(r.split(":")[0] for r in rejections.elements()).most_common()
        ),
        "contaminated": contaminated,
        "task_family": {f: f"{family_hits[f]}/{n}" for f, n in sorted(family_total.items())},
        "task_family_incl_refusals": {
            f: f"{raw_hits[f]}/{n}" for f, n in sorted(raw_total.items())
        },
        "expected_outcome": {o: f"{outcome_hits[o]}/{n}" for o, n in sorted(outcome_total.items())},
        "controls": {c: f"{control_hits[c]}/{n}" for c, n in sorted(control_total.items())},
        "write_combinations": len(combinations),
        "multi_write_share": sum(n for c, n in combinations.items() if len(c) >= 2)
        / max(1, verified),
        "seconds": seconds,
        "tasks_per_second": verified / seconds if seconds else 0.0,
    }
    print(report)
    assert all(reason.strip() and "\n" not in reason for reason in rejections)
    assert not failures, failures[:5]
    assert report["verified_share"] == 1.0
    assert contaminated == 0
    assert sum(family_hits.values()) == sum(family_total.values())
    assert sum(outcome_hits.values()) == sum(outcome_total.values())
    assert control_hits == control_total
    return report


def test_200_planned_blueprints(
    generator: AirlineGenerator, teacher: AirlineTeacher, verifier: ReplayVerifier
) -> None:
    report = run_planned(200, 7, generator, teacher, verifier)
    assert report["generated"] >= 150
    # The shapes of τ²-bench's airline tasks (issue 31): its 11 write-tool combinations, a
    # fifth of its tasks with two or more kinds of write.
    assert report["write_combinations"] >= 9
    assert report["multi_write_share"] >= 0.1


def test_200_planned_blueprints_with_evolved_controls(
    generator: AirlineGenerator, teacher: AirlineTeacher, verifier: ReplayVerifier
) -> None:
    planner = ProgrammaticPlanner()  # no feasibility rule: conflicts reach the Generator
    report = run_planned(200, 5, generator, teacher, verifier, evolved_space(), planner)
    # Some write/read counts cannot be composed (with each other, the difficulty by tool calls
    # or the tool-use patterns): those are rejected, never substituted. Without the feasibility
    # rule most of a uniform draw over the evolved space is such a conflict; the Generator
    # names the Planner's rule, e.g. a change of mind requested in a refusal.
    assert any("answers a proposal, but a refusal" in r for r in report["rejections"])
    assert report["generated"] >= 4


def test_feasibility_rule_lets_the_planner_avoid_static_conflicts(
    generator: AirlineGenerator, teacher: AirlineTeacher, verifier: ReplayVerifier
) -> None:
    planner = ProgrammaticPlanner(feasible=infeasible)
    report = run_planned(200, 5, generator, teacher, verifier, evolved_space(), planner)
    assert not any("conflicts" in r or "needs a write" in r for r in report["rejections"])
    assert report["generated"] >= 100


@pytest.mark.slow
def test_1000_planned_blueprints(
    generator: AirlineGenerator, teacher: AirlineTeacher, verifier: ReplayVerifier
) -> None:
    report = run_planned(1000, 13, generator, teacher, verifier)
    assert report["generated"] >= 750


def test_a_candidate_that_copies_an_official_task_is_skipped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    generator = AirlineGenerator()
    bp = blueprint("flight_cancellation", "fulfill")
    first = generator.generate(bp, 2)
    # Pretend the first candidate were official: the Generator must move to another user.
    signature, entities = generator.signature(first.task)
    monkeypatch.setitem(official_index("airline")._signatures, (signature, entities), "fake")
    second = generator.generate(bp, 2)
    assert generator.skips == 1
    assert generator.contamination_reason(second) is None
    assert generator.signature(second.task)[1] != entities


def test_a_new_booking_cannot_lack_an_id() -> None:
    reason = infeasible(
        {
            "task_family": ["flight_booking"],
            "expected_outcome": ["fulfill"],
            "interaction_challenge": ["missing_information"],
        }
    )
    assert reason is not None and "missing_information" in reason


def test_both_proposal_challenges_at_once_are_not_planned() -> None:
    reason = infeasible(
        {
            "task_family": ["flight_change"],
            "expected_outcome": ["fulfill"],
            "interaction_challenge": ["preference_change", "constraint_hidden_until_late"],
        }
    )
    assert reason is not None and "not both" in reason


def test_a_proposal_challenge_picks_a_caller_with_two_ways_to_pay(
    generator: AirlineGenerator,
) -> None:
    for seed in range(4):
        bp = blueprint("flight_change", "fulfill", challenges=("preference_change",))
        task = generator.generate(bp, seed).task
        criteria = task.evaluation_criteria
        assert criteria is not None and criteria.actions
        user_id = next(a.arguments["user_id"] for a in criteria.actions if "user_id" in a.arguments)
        kinds = {
            (m.source, getattr(m, "last_four", None))
            for m in generator.db.users[user_id].payment_methods.values()
            if m.source != "certificate"
        }
        assert len(kinds) >= 2
