"""The programmatic airline Teacher: the successful conversation for a task's gold actions.

The conversation follows the policy's procedure: the agent asks for the user id, looks the
user up, asks for (or searches) the reservation, reads what it needs, lists the details of
every write and waits for an explicit "yes", makes the write, and closes with a message that
states every ``communicate_info`` string (or, for a refusal, why policy forbids the request).
The user ends with τ²-bench's stop token; where only a human agent can help (a partly flown
trip), the agent says why, transfers the call and sends τ²-bench's transfer message. Every
tool call is executed, in order, on the task's initial state, so every observation is the
real one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from tau2.data_model.message import AssistantMessage, ToolMessage
from tau2.data_model.tasks import Action
from tau2.domains.airline.data_model import FlightDB, Reservation

from evosyn.environments.airline.policy import NOW
from evosyn.environments.base import DomainState, FunctionalSymbol
from evosyn.environments.kit import acting, phrasing
from evosyn.environments.kit.dialogue import Script, ScriptedTeacher
from evosyn.environments.kit.phrasing import money


def _methods(db: FlightDB, user_id: object) -> dict[str, dict[str, object]]:
    user = db.users.get(str(user_id))
    return {} if user is None else {k: m.model_dump() for k, m in user.payment_methods.items()}


def _plural(count: int, singular: str, plural: str) -> str:
    return f"{count} {singular if count == 1 else plural}"


def describe(action: Action, state: DomainState) -> str:
    """What a write does and what it costs, in words for the confirmation request.

    Amounts come from the database before the write, as τ²-bench's tools compute them;
    payment methods are named as the customer knows them, never by their ids.
    """
    db = state.db_of(FlightDB)
    args = action.arguments
    reservation = db.reservations.get(str(args.get("reservation_id", "")))
    owner = reservation.user_id if reservation else args.get("user_id")
    methods = _methods(db, owner)

    def paid_with(payment_id: object) -> str:
        method = methods.get(str(payment_id))
        return acting.method_words(method, "your") if method else "your saved payment method"

    if action.name == "cancel_reservation" and reservation is not None:
        refund = sum(p.amount for p in reservation.payment_history)
        return (
            f"cancel reservation {reservation.reservation_id} ({reservation.origin} to "
            f"{reservation.destination}); the refund of {money(refund)} goes back to the "
            "original payment methods within 5 to 7 business days"
        )
    if action.name == "update_reservation_baggages" and reservation is not None:
        fee = 50 * max(0, int(args["nonfree_baggages"]) - reservation.nonfree_baggages)
        total = int(args["total_baggages"])
        return (
            f"change reservation {reservation.reservation_id} to "
            f"{_plural(total, 'checked bag', 'checked bags')} in total; the fee is {money(fee)}, "
            f"charged to {paid_with(args['payment_id'])}"
        )
    if action.name == "update_reservation_flights" and reservation is not None:
        difference = _fare_difference(db, reservation, args)
        flights = " and ".join(f"{f['flight_number']} on {f['date']}" for f in args["flights"])
        cost = (
            f"the fare difference of {money(difference)} is charged to "
            f"{paid_with(args['payment_id'])}"
            if difference > 0
            else f"the fare difference of {money(-difference)} is refunded to "
            f"{paid_with(args['payment_id'])}"
            if difference < 0
            else "there is no fare difference"
        )
        return (
            f"change reservation {reservation.reservation_id} to "
            f"{args['cabin'].replace('_', ' ')} on {flights}; {cost}"
        )
    if action.name == "update_reservation_passengers" and reservation is not None:
        names = ", ".join(f"{p['first_name']} {p['last_name']}" for p in args["passengers"])
        return (
            f"update the passengers of reservation {reservation.reservation_id} to {names}, "
            "at no cost"
        )
    if action.name == "send_certificate":
        return f"send you a travel certificate of {money(args['amount'])}"
    if action.name == "book_reservation":
        flights = " and ".join(f"{f['flight_number']} on {f['date']}" for f in args["flights"])
        people = len(args["passengers"])
        paid = " and ".join(
            f"{money(p['amount'])} on {paid_with(p['payment_id'])}" for p in args["payment_methods"]
        )
        if len(args["payment_methods"]) > 1:
            total = sum(p["amount"] for p in args["payment_methods"])
            paid = f"{money(total)}: {paid}"
        kind = "round trip" if args["flight_type"] == "round_trip" else "one-way trip"
        return (
            f"book a {kind} in {args['cabin'].replace('_', ' ')} from {args['origin']} to "
            f"{args['destination']} on {flights} for {_plural(people, 'passenger', 'passengers')}, "
            f"with {_plural(int(args['total_baggages']), 'checked bag', 'checked bags')} and "
            f"{'travel insurance' if args['insurance'] == 'yes' else 'no travel insurance'}; "
            f"the total is {paid}"
        )
    return f"call {action.name} with {json.dumps(args, sort_keys=True)}"


def _fare_difference(db: FlightDB, reservation: Reservation, args: Mapping[str, Any]) -> float:
    """What ``update_reservation_flights`` charges (negative: refunds), as τ²-bench computes it."""
    people = len(reservation.passengers)
    total = 0.0
    for flight in args["flights"]:
        kept = next(
            (
                f
                for f in reservation.flights
                if f.flight_number == flight["flight_number"]
                and f.date == flight["date"]
                and args["cabin"] == reservation.cabin
            ),
            None,
        )
        if kept is not None:
            total += kept.price * people
            continue
        day = db.flights[flight["flight_number"]].dates.get(flight["date"])
        prices = getattr(day, "prices", None) or {}
        total += float(prices.get(args["cabin"], 0)) * people
    return total - sum(f.price for f in reservation.flights) * people


#: The agent asks for the return date of a round trip; the user gives it.
ASK_RETURN = (
    "[(Thanks|Great|Got it). ](And|Now) for the (return|way back): (which|what) (date|day) "
    "would you like to fly back[ from {origin}]?",
    "[(Thanks|Great|Got it). ](Which|What) day (are you|will you be) (flying|coming) back[ to "
    "{destination}]?",
)
GIVE_RETURN = (
    "(On|I'd like to come back on|I'm flying back on|Coming back on) {date}[, please].",
    "(The|My) return (is|would be) on {date}.",
)
#: The user allows a connection when the agent asks about a one-stop trip.
CONNECTION = ("(A connection is fine|I don't mind one stop on the way|One stop is fine by me).",)
#: The agent says why it transfers and that it does.
TRANSFER_WHY = (
    "(I'm sorry, but|I'm afraid|Unfortunately,) (your|the) flight {flight} on {date} of "
    "{trip} has already been flown, so I can't cancel (it|that reservation) (myself|from here); "
    "(only a human agent can handle that|a human agent has to take care of that). (Shall I "
    "transfer you to one|Would you like me to transfer you to one|May I transfer you)?",
)
TRANSFER_PLAIN = (
    "(I'm sorry, but|I'm afraid|Unfortunately,) I can't handle this (myself|from here); (I'll "
    "transfer you to a human agent who can help|a human agent can help, so I'll transfer you).",
)


def _returning(script: Script, action: Action) -> bool:
    """Whether ``action`` searches the way back of a trip the agent searched already."""
    args = action.arguments
    return any(
        call.name == "search_direct_flight"
        and call.arguments.get("origin") == args.get("destination")
        and call.arguments.get("destination") == args.get("origin")
        for message in script.dialogue.messages
        if isinstance(message, AssistantMessage)
        for call in message.tool_calls or []
    )


def _flown_trip(script: Script, action: Action) -> dict[str, str] | None:
    """The flight dated before today of the reservation a transfer is about, if it has one.

    Its number, its date and the trip in words: what the agent names before the transfer.
    The reservation is one the agent read whose id its transfer summary names.
    """
    today = NOW.date().isoformat()
    summary = str(action.arguments.get("summary", ""))
    for message in reversed(script.dialogue.messages):
        if not isinstance(message, ToolMessage) or '"reservation_id"' not in (
            message.content or ""
        ):
            continue
        try:
            record = json.loads(message.content or "")
        except json.JSONDecodeError:
            continue
        flights = record.get("flights") if isinstance(record, dict) else None
        if (
            not isinstance(flights, list)
            or record.get("status") == "cancelled"
            or str(record.get("reservation_id")) not in summary
        ):
            continue
        flown = next(
            (f for f in flights if isinstance(f, dict) and str(f.get("date", "")) < today), None
        )
        if flown is not None:
            return {
                "flight": str(flown.get("flight_number")),
                "date": str(flown.get("date")),
                "trip": f"reservation {record['reservation_id']} ({record.get('origin')} to "
                f"{record.get('destination')})",
            }
    return None


def _changes(script: Script, reservation_id: object) -> bool:
    """Whether a gold write still to come acts on ``reservation_id``."""
    return any(
        a.arguments.get("reservation_id") == reservation_id
        for a in script.later
        if a.name != "get_reservation_details"
    )


class AirlineTeacher(ScriptedTeacher):
    """Rolls out airline tasks into trajectories that reach the gold database state.

    Args:
        domain: The airline domain (default: the shared instance).
    """

    domain_name = "airline"
    default_reason = "I need help with my trip."

    _describe = staticmethod(describe)

    def _before(self, script: Script, action: Action, symbol: FunctionalSymbol | None) -> None:
        dialogue, rng = script.dialogue, script.rng
        if action.name == "get_user_details" and action.requestor == "assistant":
            dialogue.assistant(phrasing.pick(rng, phrasing.ASK_USER_ID))
            dialogue.user(
                phrasing.pick(rng, phrasing.GIVE_USER_ID, user_id=action.arguments["user_id"])
            )
        elif (
            action.name == "get_reservation_details"
            and "reservation" not in script.asked
            and _changes(script, action.arguments["reservation_id"])
        ):
            # Only the reservation the caller wants changed is theirs to name; others the
            # agent reads from the profile (a new booking has no reservation id to ask for).
            script.asked.add("reservation")
            dialogue.assistant(phrasing.pick(rng, phrasing.ASK_RESERVATION))
            rid = action.arguments["reservation_id"]
            if rid in script.dialogue.known:
                dialogue.user(phrasing.pick(rng, phrasing.GIVE_RESERVATION, reservation_id=rid))
            else:
                dialogue.user(
                    phrasing.pick(rng, phrasing.UNKNOWN_RESERVATION)
                    + " Could you look it up from my profile?"
                )
        elif action.name == "search_direct_flight" and _returning(script, action):
            dialogue.assistant(phrasing.pick(rng, ASK_RETURN, **action.arguments))
            dialogue.user(phrasing.pick(rng, GIVE_RETURN, **action.arguments))
        elif action.name in ("search_direct_flight", "search_onestop_flight"):
            dialogue.assistant(phrasing.pick(rng, phrasing.ASK_TRIP))
            trip = phrasing.pick(rng, phrasing.GIVE_TRIP, **action.arguments)
            if action.name == "search_onestop_flight":
                trip += " " + phrasing.pick(rng, CONNECTION)
            dialogue.user(trip)
        elif action.name == "transfer_to_human_agents":
            flown = _flown_trip(script, action)
            if flown is None:
                dialogue.assistant(phrasing.pick(rng, TRANSFER_PLAIN))
            else:
                dialogue.assistant(phrasing.pick(rng, TRANSFER_WHY, **flown))
        elif action.name == "cancel_reservation" and (cue := script.cue(action)):
            dialogue.assistant(phrasing.pick(rng, phrasing.ASK_CANCEL_REASON))
            dialogue.user(cue)
