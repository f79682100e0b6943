"""How a user names a record: by its fields where they tell it apart, else by its id."""

from __future__ import annotations

import json

from tau2.data_model.message import ToolMessage, UserMessage

from evosyn.environments.information_flow import Seen
from evosyn.environments.kit import choices

TRIP = choices.entity("origin", "destination", "flights")
SAY_TRIP = choices.say_record(
    "my trip from {origin} to {destination}", "origin", "destination", named_by=TRIP
)
DIRECT = {
    "reservation_id": "EOJ7HM",
    "origin": "EWR",
    "destination": "MSP",
    "flights": [{"origin": "EWR", "destination": "MSP", "date": "2024-05-20"}],
}
VIA_MSP = {
    "reservation_id": "A2E02H",
    "origin": "EWR",
    "destination": "MCO",
    "flights": [
        {"origin": "EWR", "destination": "MSP", "date": "2024-05-26"},
        {"origin": "MSP", "destination": "MCO", "date": "2024-05-26"},
    ],
}


def _seen(*records: dict[str, object], said: str = "") -> Seen:
    seen = Seen()
    if said:
        seen.add(UserMessage(role="user", content=said))
    for number, record in enumerate(records):
        content = json.dumps(record)
        seen.add(ToolMessage(id=f"t{number}", role="tool", content=content, requestor="assistant"))
    return seen


def test_a_trip_its_route_tells_apart_is_named_by_its_route() -> None:
    assert SAY_TRIP("EOJ7HM", {}, _seen(DIRECT)) == "my trip from EWR to MSP"


def test_a_trip_another_one_also_flies_is_named_by_its_id() -> None:
    # A2E02H flies EWR to MSP on its way to MCO: "from EWR to MSP" names neither.
    assert SAY_TRIP("EOJ7HM", {}, _seen(DIRECT, VIA_MSP)) == "EOJ7HM"
    # What the agent's check then asks the user to have said: the id, which they did.
    heard = _seen(DIRECT, VIA_MSP, said="It's EOJ7HM.")
    assert heard.user_said(TRIP("EOJ7HM", {}, heard))


def test_what_the_user_said_before_counts_toward_telling_it_apart() -> None:
    seen = _seen(DIRECT, VIA_MSP, said="I want to move my flight on May 20 to economy.")
    assert SAY_TRIP("EOJ7HM", {}, seen) == "my trip from EWR to MSP"
