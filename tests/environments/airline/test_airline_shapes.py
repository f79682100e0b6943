"""The shapes of τ²-bench's airline tasks: mixed writes, new trips of every kind, transfers.

Each mixed shape is made under the blueprint whose family its writes imply, and the programmatic
Teacher's dialogue for it verifies, gets reward 1 from τ²-bench's own evaluator and breaks no
information-flow, procedure, fact or hearing rule.
"""

from __future__ import annotations

from typing import Any

import pytest
from tau2.data_model.message import AssistantMessage, Message

from evosyn.agents.verifier import ReplayVerifier
from evosyn.agents.verifier.reference import stock_reward
from evosyn.environments import FunctionalSymbol, get_domain, information_flow
from evosyn.environments.airline import policy
from evosyn.environments.airline.generator import SHAPES, AirlineGenerator, Shape, infeasible
from evosyn.environments.airline.teacher import AirlineTeacher
from evosyn.environments.features import realized_features
from evosyn.environments.kit.dialogue import TRANSFER_MESSAGE, TRANSFERRED
from evosyn.environments.registry import domain_plugin
from evosyn.records import Blueprint, SynthTask

pytestmark = pytest.mark.heavy

#: The write tools (and whether a transfer ends it) by which each mixed shape is recognised.
KINDS: dict[str, tuple[frozenset[str], bool]] = {
    "change_and_bags": (
        frozenset({"update_reservation_flights", "update_reservation_baggages"}),
        False,
    ),
    "passenger_swap": (frozenset({"update_reservation_passengers"}), False),
    "change_passenger_bags": (
        frozenset(
            {
                "update_reservation_flights",
                "update_reservation_passengers",
                "update_reservation_baggages",
            }
        ),
        False,
    ),
    "cancel_and_change": (
        frozenset({"cancel_reservation", "update_reservation_flights"}),
        False,
    ),
    "cancel_and_book": (frozenset({"cancel_reservation", "book_reservation"}), False),
    "delayed_cancel": (frozenset({"cancel_reservation", "send_certificate"}), False),
    "cancel_and_transfer": (frozenset({"cancel_reservation"}), True),
    "flown_transfer": (frozenset(), True),
}


@pytest.fixture(scope="module")
def generator() -> AirlineGenerator:
    return AirlineGenerator()


@pytest.fixture(scope="module")
def teacher() -> AirlineTeacher:
    return AirlineTeacher()


@pytest.fixture(scope="module")
def verifier() -> ReplayVerifier:
    return ReplayVerifier("airline")


def blueprint(
    family: str,
    outcome: str,
    index: int,
    *,
    difficulty: str = "hard",
    patterns: tuple[str, ...] = ("policy_check_before_action",),
    challenges: tuple[str, ...] = (),
) -> Blueprint:
    return Blueprint(
        campaign_id="test",
        round=1,
        blueprint_id=f"shape-{family}-{outcome}-{difficulty}-{index}",
        direction_id="d0",
        space_version=1,
        selections={
            "task_family": [family],
            "expected_outcome": [outcome],
            "policy_or_constraint_focus": ["fare_rule_constraint"],
            "tool_use_pattern": list(patterns),
            "interaction_challenge": list(challenges),
            "difficulty_profile": [difficulty],
        },
        intent=f"{family} / {outcome}",
    )


def actions(synth: SynthTask) -> list[Any]:
    return list(synth.task.evaluation_criteria.actions or [])


def kinds(synth: SynthTask) -> tuple[frozenset[str], bool]:
    """The write tools of a task's gold and whether it transfers."""
    domain = get_domain("airline")
    gold = actions(synth)
    writes = frozenset(a.name for a in gold if domain.symbol(a.name) == FunctionalSymbol.WRITE)
    return writes, any(a.name == "transfer_to_human_agents" for a in gold)


def made(generator: AirlineGenerator, shape: Shape, tries: int = 60) -> SynthTask:
    """The first task of ``shape``'s family and outcome (over blueprint ids) that has its kinds."""
    for index in range(tries):
        synth = generator.generate(blueprint(shape.family, shape.outcome, index), index)
        if kinds(synth) == KINDS[shape.name]:
            return synth
    raise AssertionError(f"no {shape.name} task in {tries} blueprints")


def check(
    synth: SynthTask, teacher: AirlineTeacher, verifier: ReplayVerifier, seed: int = 0
) -> list[Message]:
    """Roll ``synth`` out; the dialogue verifies, τ²-bench rewards it 1 and breaks no gate."""
    messages = teacher.rollout(synth, seed).messages
    verdict = verifier.verify(synth.task, messages)
    assert verdict.passed, (synth.task_id, verdict.reasons)
    assert stock_reward("airline", synth.task, messages) == 1.0
    domain = get_domain("airline")
    assert information_flow.gate_breaks(domain, domain_plugin("airline").flow, messages) == []
    return messages


def test_every_shape_has_its_kinds_listed() -> None:
    assert {s.name for s in SHAPES} == set(KINDS)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.name)
def test_each_shape_is_made_under_its_family_and_verifies(
    shape: Shape,
    generator: AirlineGenerator,
    teacher: AirlineTeacher,
    verifier: ReplayVerifier,
) -> None:
    synth = made(generator, shape)
    assert synth.requested["task_family"] == [shape.family]
    messages = check(synth, teacher, verifier)
    features = realized_features(get_domain("airline"), messages)
    assert features.num_write == shape.writes
    if shape.outcome == "fulfill":
        # The family the writes imply is the one requested.
        assert features.task_family == shape.family
    else:
        assert features.num_write == 0
    if KINDS[shape.name][1]:
        assert features.num_transfer == 1


def test_a_passenger_swap_keeps_the_party_and_names_the_newcomer(
    generator: AirlineGenerator, teacher: AirlineTeacher, verifier: ReplayVerifier
) -> None:
    shape = next(s for s in SHAPES if s.name == "passenger_swap")
    synth = made(generator, shape)
    (update,) = [a for a in actions(synth) if a.name == "update_reservation_passengers"]
    before = generator.db.reservations[update.arguments["reservation_id"]].passengers
    after = update.arguments["passengers"]
    assert len(after) == len(before)
    changed = [p for p, q in zip(after, before, strict=True) if p != q.model_dump()]
    assert len(changed) == 1
    (newcomer,) = changed
    opening = synth.task.user_scenario.instructions.reason_for_call
    assert f"{newcomer['first_name']} {newcomer['last_name']}" in opening
    assert newcomer["dob"] in opening
    check(synth, teacher, verifier)


def test_a_delayed_trip_is_compensated_after_its_cancellation(
    generator: AirlineGenerator,
) -> None:
    shape = next(s for s in SHAPES if s.name == "delayed_cancel")
    synth = made(generator, shape)
    names = [a.name for a in actions(synth)]
    # The policy: confirm the facts, cancel, then offer the certificate.
    assert names.index("get_flight_status") < names.index("cancel_reservation")
    assert names.index("cancel_reservation") < names.index("send_certificate")
    cancel = next(a for a in actions(synth) if a.name == "cancel_reservation")
    certificate = next(a for a in actions(synth) if a.name == "send_certificate")
    reservation = generator.db.reservations[cancel.arguments["reservation_id"]]
    assert policy.delayed(generator.db, reservation)
    expected = policy.DELAYED_FLIGHT_COMPENSATION * len(reservation.passengers)
    assert certificate.arguments["amount"] == expected


def test_a_transfer_says_why_and_hands_over(
    generator: AirlineGenerator, teacher: AirlineTeacher, verifier: ReplayVerifier
) -> None:
    shape = next(s for s in SHAPES if s.name == "flown_transfer")
    synth = made(generator, shape)
    messages = check(synth, teacher, verifier)
    assert messages[-1].content == TRANSFERRED
    assert messages[-2].content == TRANSFER_MESSAGE
    call = messages[-4]
    assert isinstance(call, AssistantMessage) and call.tool_calls
    assert call.tool_calls[0].name == "transfer_to_human_agents"
    # Before the call the agent tells the caller why it cannot help itself.
    why = next(
        m.content for m in reversed(messages[:-4]) if isinstance(m, AssistantMessage) and m.content
    )
    assert "already been flown" in why


def test_new_trips_are_round_trips_connections_and_split_payments(
    generator: AirlineGenerator, teacher: AirlineTeacher, verifier: ReplayVerifier
) -> None:
    seen = {"round_trip": 0, "connection": 0, "split": 0}
    for index in range(30):
        synth = generator.generate(blueprint("flight_booking", "fulfill", index), index)
        new = set()
        for booking in (a for a in actions(synth) if a.name == "book_reservation"):
            args = booking.arguments
            if args["flight_type"] == "round_trip":
                new.add("round_trip")
                assert args["flights"][0]["date"] < args["flights"][-1]["date"]
            elif len(args["flights"]) == 2:
                new.add("connection")
                assert any(a.name == "search_onestop_flight" for a in actions(synth))
            if len(args["payment_methods"]) > 1:
                new.add("split")
                user = generator.db.users[args["user_id"]]
                sources = [
                    user.payment_methods[p["payment_id"]].source for p in args["payment_methods"]
                ]
                assert policy.payment_mix_allowed(sources)[0]
                assert "credit_card" in sources
        if any(not seen[k] for k in new):
            check(synth, teacher, verifier, seed=index)  # the first of each kind
        for kind in new:
            seen[kind] += 1
    assert all(seen.values()), seen


@pytest.mark.parametrize("family", ["flight_change", "flight_booking", "flight_cancellation"])
def test_an_easy_task_keeps_one_kind_of_write(family: str, generator: AirlineGenerator) -> None:
    # Two or three calls leave no room for a second kind of write: the plain shape stays.
    for index in range(12):
        bp = blueprint(family, "fulfill", index, difficulty="easy")
        if infeasible(bp.selections) is not None:
            continue
        synth = generator.generate(bp, index)
        writes, _ = kinds(synth)
        assert len(writes) <= 1


def test_a_proposal_challenge_never_gets_a_shape_without_a_payment(
    generator: AirlineGenerator, teacher: AirlineTeacher, verifier: ReplayVerifier
) -> None:
    # A change of mind answers the proposal of a payment method: a passenger swap has none.
    for index in range(12):
        bp = blueprint("flight_change", "fulfill", index, challenges=("preference_change",))
        synth = generator.generate(bp, index)
        writes, _ = kinds(synth)
        assert writes != frozenset({"update_reservation_passengers"})
        if index < 2:
            check(synth, teacher, verifier, seed=index)


def test_a_new_booking_is_not_told_of_reservation_ids(generator: AirlineGenerator) -> None:
    # Padding look-ups of a caller's other trips leave the caller without their ids; a caller
    # who only books needs none, and their scenario says nothing of them.
    checked = 0
    for index in range(40):
        bp = blueprint(
            "flight_booking",
            "fulfill",
            index,
            patterns=("multiple_reads_same_kind",),
        )
        try:
            synth = generator.generate(bp, index)
        except Exception:
            continue
        names = {a.name for a in actions(synth)}
        if names & {"cancel_reservation", "update_reservation_flights"}:
            continue
        checked += 1
        assert "reservation id" not in str(synth.task.user_scenario.instructions), synth.task_id
    assert checked >= 10
