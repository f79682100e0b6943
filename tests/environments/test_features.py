"""Realized features on hand-built trajectories."""

from __future__ import annotations

import json

import pytest
from tau2.data_model.message import AssistantMessage, Message, ToolCall, ToolMessage, UserMessage

from evosyn.buckets import bucket
from evosyn.environments import get_domain
from evosyn.environments.features import collapse, realized_features


def _turn(call_id: str, name: str, arguments: dict, result: str, requestor: str = "assistant"):
    call = ToolCall(id=call_id, name=name, arguments=arguments, requestor=requestor)
    cls = UserMessage if requestor == "user" else AssistantMessage
    return [
        cls(role=requestor, tool_calls=[call]),
        ToolMessage(id=call_id, role="tool", content=result, requestor=requestor),
    ]


def _airline_trajectory() -> list[Message]:
    return [
        UserMessage(role="user", content="Hi, I am mia_li_3668, cancel reservation NO6JO3."),
        *_turn("1", "get_user_details", {"user_id": "mia_li_3668"}, '{"membership": "gold"}'),
        *_turn("2", "get_reservation_details", {"reservation_id": "NO6JO3"}, '{"price": 120}'),
        *_turn("3", "cancel_reservation", {"reservation_id": "NO6JO3"}, '{"status": "cancelled"}'),
        *_turn("4", "calculate", {"expression": "120 * 0.5"}, "60.0"),
        # 60 comes from a compute observation: still a derived value.
        *_turn("5", "send_certificate", {"user_id": "mia_li_3668", "amount": 60}, "ok"),
        # 120 was observed in a read result: copied, not derived.
        *_turn("6", "send_certificate", {"user_id": "mia_li_3668", "amount": 120}, "ok"),
        *_turn("7", "transfer_to_human_agents", {"summary": "wants more"}, "Transfer successful"),
        AssistantMessage(role="assistant", content="Done."),
    ]


def test_airline_counts_pattern_signature_and_family() -> None:
    features = realized_features(get_domain("airline"), _airline_trajectory())
    assert (features.num_read, features.num_write) == (2, 3)
    assert (features.num_compute, features.num_transfer, features.num_tool_calls) == (1, 1, 7)
    assert features.num_numeric_args == 1
    assert features.functional_pattern == "read-write-compute-write-transfer"
    assert features.decisive_signature == [
        "write:cancel_reservation",
        "compute:calculate",
        "write:send_certificate",
        "write:send_certificate",
        "transfer:transfer_to_human_agents",
    ]
    assert features.entities == {"reservation_id": ["NO6JO3"], "user_id": ["mia_li_3668"]}
    assert features.task_family == "flight_cancellation"
    assert features.task_families == ["flight_cancellation", "refund_or_compensation"]
    values = features.as_values()
    assert values["num_write"] == "3-4"
    assert values["num_tool_calls"] == "5+"
    assert values["num_numeric_args"] == "1"
    assert values["task_family"] == "flight_cancellation"
    assert values["decisive_signature"].startswith("write:cancel_reservation > compute:")
    assert values["entities"] == "reservation_id=NO6JO3;user_id=mia_li_3668"


def test_numbers_from_the_user_are_copied_not_derived() -> None:
    messages = [
        UserMessage(role="user", content="Please send me a $1,250 certificate."),
        *_turn("1", "send_certificate", {"user_id": "u", "amount": 1250}, "ok"),
        *_turn("2", "send_certificate", {"user_id": "u", "amount": 99.5}, "ok"),
    ]
    features = realized_features(get_domain("airline"), messages)
    assert features.num_numeric_args == 1
    assert features.functional_pattern == "write"
    assert features.task_family == "refund_or_compensation"


def test_digits_inside_ids_and_dates_are_not_numbers_anyone_stated() -> None:
    # Found live: 2 bags the agent worked out counted as seen because an id held a 2.
    reservation = (
        '{"reservation_id": "YH8OH2", "payment_id": "credit_card_8191674",'
        ' "flights": [{"flight_number": "HAT005", "date": "2024-05-20"}], "total_baggages": 3}'
    )
    messages = [
        UserMessage(role="user", content="Add two more bags to YH8OH2, I have 3 already."),
        *_turn("1", "get_reservation_details", {"reservation_id": "YH8OH2"}, reservation),
        *_turn(
            "2",
            "update_reservation_baggages",
            # 5 and 2 are worked out; the card id is a string, not a numeric argument.
            {
                "reservation_id": "YH8OH2",
                "total_baggages": 5,
                "nonfree_baggages": 2,
                "payment_id": "credit_card_8191674",
            },
            "ok",
        ),
        *_turn("3", "send_certificate", {"user_id": "u", "amount": 20}, "ok"),
        *_turn("4", "send_certificate", {"user_id": "u", "amount": 3}, "ok"),
    ]
    features = realized_features(get_domain("airline"), messages)
    # 5, 2 and 20 (a date's day is no amount); 3 was stated by the user and the read.
    assert features.num_numeric_args == 3


def test_retail_mixed_writes_pick_the_decisive_family() -> None:
    messages = [
        *_turn("1", "find_user_id_by_email", {"email": "a@b.c"}, "u1"),
        *_turn("2", "modify_user_address", {"user_id": "u1", "zip": "12345"}, "{}"),
        *_turn(
            "3",
            "exchange_delivered_order_items",
            {
                "order_id": "#W1",
                "item_ids": ["i1", "i2"],
                "new_item_ids": ["n1", "n2"],
                "payment_method_id": "gift_card_1",
            },
            "{}",
        ),
    ]
    features = realized_features(get_domain("retail"), messages)
    assert features.task_family == "exchange_delivered_order"
    assert features.functional_pattern == "read-write"
    # The zip code is a string: not a numeric argument.
    assert features.num_numeric_args == 0
    assert features.entities["item_ids"] == ["i1", "i2"]
    assert features.entities["email"] == ["a@b.c"]


def test_no_calls_and_unknown_tools() -> None:
    retail = get_domain("retail")
    empty = realized_features(retail, [AssistantMessage(role="assistant", content="Hello")])
    assert empty.functional_pattern == "none"
    assert empty.task_family == "profile_or_inquiry"
    assert empty.as_values()["decisive_signature"] == "none"
    odd = realized_features(retail, _turn("1", "teleport", {"x": 3}, "Error"))
    assert odd.num_tool_calls == 1 and odd.unknown_tools == ["teleport"]
    assert odd.functional_pattern == "none"
    assert odd.num_numeric_args == 1


def test_telecom_user_tools_count_and_are_marked() -> None:
    messages = [
        *_turn("1", "get_customer_by_phone", {"phone_number": "555-123-2002"}, "{}"),
        *_turn("2", "check_status_bar", {}, "Airplane", requestor="user"),
        *_turn("3", "toggle_airplane_mode", {}, "OFF", requestor="user"),
        *_turn("4", "refuel_data", {"customer_id": "C1", "line_id": "L1", "gb_amount": 2}, "ok"),
    ]
    features = realized_features(get_domain("telecom"), messages)
    assert features.functional_pattern == "read-write"
    assert features.decisive_signature == ["write:user/toggle_airplane_mode", "write:refuel_data"]
    assert features.task_family == "plan_change"
    assert features.num_numeric_args == 1
    assert features.entities["phone_number"] == ["555-123-2002"]


@pytest.mark.parametrize(
    ("count", "expected"), [(0, "0"), (1, "1"), (2, "2"), (3, "3-4"), (4, "3-4"), (5, "5+")]
)
def test_bucket(count: int, expected: str) -> None:
    assert bucket(count) == expected


def test_bucket_rejects_negative() -> None:
    with pytest.raises(ValueError):
        bucket(-1)


def test_collapse() -> None:
    assert collapse(["read", "read", "write", "read", "write", "write"]) == "read-write-read-write"
    assert collapse([]) == "none"


def _search_result(*numbers: str) -> str:
    rows = [{"flight_number": n, "prices": {"economy": 100 + i}} for i, n in enumerate(numbers)]
    return json.dumps(rows)


def _booking(listed: tuple[str, ...], *extra: Message) -> list[Message]:
    search = {"origin": "JFK", "destination": "LAX", "date": "2024-05-20"}
    booking = {"user_id": "u1", "flights": [{"flight_number": listed[0], "date": "2024-05-20"}]}
    return [
        UserMessage(role="user", content="Book JFK to LAX for me, user u1."),
        *_turn("1", "get_user_details", {"user_id": "u1"}, '{"membership": "gold"}'),
        *_turn("2", "search_direct_flight", search, _search_result(*listed)),
        *extra,
        UserMessage(role="user", content="Yes."),
        *_turn("4", "book_reservation", booking, '{"reservation_id": "NEW1"}'),
    ]


def test_computation_kinds() -> None:
    airline = get_domain("airline")
    # One listed flight: nothing to choose; nothing derived either.
    single = realized_features(airline, _booking(("HAT1",)))
    assert single.computation == "none"
    # Picking one of several listed flights is an optimisation.
    several = realized_features(airline, _booking(("HAT1", "HAT2")))
    assert several.computation == "constrained_opt"
    assert "search_compare_then_book" in several.tool_use_patterns
    # A calculation over observed values is an aggregate ...
    total = _turn("3", "calculate", {"expression": "100 * 2"}, "200.0")
    assert realized_features(airline, _booking(("HAT1",), *total)).computation == "aggregate"
    # ... one that uses the user's stated amount is a condition, and it outranks the rest.
    condition = [
        UserMessage(role="user", content="Only if it costs at most $300."),
        *_turn("3", "calculate", {"expression": "300 - 100 * 2"}, "100.0"),
    ]
    both = realized_features(airline, _booking(("HAT1", "HAT2"), *condition))
    assert both.computation == "conditional"
    assert both.as_values()["computation"] == "conditional"
    # A derived numeric argument (not stated, not observed) is an aggregate too.
    certificate = _turn("4", "send_certificate", {"user_id": "u1", "amount": 321}, "ok")
    derived = [*_booking(("HAT1",))[:-2], *certificate]
    assert realized_features(airline, derived).computation == "aggregate"


def test_tool_use_patterns() -> None:
    airline = get_domain("airline")
    features = realized_features(airline, _airline_trajectory())
    # calculate over observed values -> a fee recalculation; several writes -> a split action;
    # cancel after reading the reservation -> lookup then modify. No user turn precedes a write.
    assert features.tool_use_patterns == [
        "lookup_verify_then_modify",
        "partial_update_or_split_action",
        "price_or_fee_recalculation",
    ]
    booking = realized_features(airline, _booking(("HAT1", "HAT2")))
    assert booking.tool_use_patterns == [
        "lookup_verify_then_modify",
        "search_compare_then_book",
        "state_change_with_confirmation",
    ]
    reads = [
        *_turn("1", "get_flight_status", {"flight_number": "HAT1", "date": "2024-05-20"}, '"ok"'),
        *_turn("2", "get_flight_status", {"flight_number": "HAT2", "date": "2024-05-20"}, '"ok"'),
    ]
    assert realized_features(airline, reads).tool_use_patterns == ["multi_entity_retrieval"]


def test_patterns_only_where_the_vocabulary_is_derived() -> None:
    retail = realized_features(get_domain("retail"), [])
    assert retail.tool_use_patterns is None
    assert "tool_use_patterns" not in retail.as_values()
    airline = realized_features(get_domain("airline"), [])
    assert airline.tool_use_patterns == []
    assert airline.as_values()["tool_use_patterns"] == "none"
