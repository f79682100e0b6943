"""The programmatic airline Teacher: a blind agent serving the caller's requests.

The conversation follows the policy's procedure: the agent asks for the user id, looks the
user up, asks which reservation the call is about (or finds it in the profile), asks for the
trip it searches, lists the details of every write with its price and waits for an explicit
"yes", makes the write, and closes with a message that states every ``communicate_info``
string (or, for a refusal, why policy forbids the request). The user ends with τ²-bench's
stop token; where only a human agent can help (a partly flown trip), the agent says why,
transfers the call and sends τ²-bench's transfer message. The agent side
(:class:`AirlineAgent`) never sees the task; the user side (:class:`AirlineUser`) answers
from it. Every tool call is executed, in order, on the task's initial state, so every
observation is the real one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from tau2.data_model.message import AssistantMessage, ToolCall, ToolMessage, UserMessage
from tau2.data_model.tasks import Action
from tau2.domains.airline.data_model import FlightDB, Reservation

from evosyn.environments.airline import policy
from evosyn.environments.airline.policy import NOW
from evosyn.environments.base import DomainState
from evosyn.environments.information_flow import Seen
from evosyn.environments.kit import acting, phrasing
from evosyn.environments.kit.agent import ScriptedAgent
from evosyn.environments.kit.phrasing import money
from evosyn.environments.kit.scripted import ScriptedTeacher, ScriptedUser
from evosyn.environments.kit.sealed import SealedAction


def _methods(db: FlightDB, user_id: object) -> dict[str, dict[str, object]]:
    user = db.users.get(str(user_id))
    return {} if user is None else {k: m.model_dump() for k, m in user.payment_methods.items()}


def _plural(count: int, singular: str, plural: str) -> str:
    return f"{count} {singular if count == 1 else plural}"


def describe(call: ToolCall, state: DomainState) -> str:
    """What a write does and what it costs, in words for the confirmation request.

    Amounts come from the database before the write, as τ²-bench's tools compute them (a
    booking's total from the fares its search showed); payment methods are named as the
    customer knows them, never by their ids.
    """
    db = state.db_of(FlightDB)
    args = call.arguments
    reservation = db.reservations.get(str(args.get("reservation_id", "")))
    owner = reservation.user_id if reservation else args.get("user_id")
    methods = _methods(db, owner)

    def paid_with(payment_id: object) -> str:
        method = methods.get(str(payment_id))
        return acting.method_words(method, "your") if method else "your saved payment method"

    if call.name == "cancel_reservation" and reservation is not None:
        refund = sum(p.amount for p in reservation.payment_history)
        return (
            f"cancel reservation {reservation.reservation_id} ({reservation.origin} to "
            f"{reservation.destination}); the refund of {money(refund)} goes back to the "
            "original payment methods within 5 to 7 business days"
        )
    if call.name == "update_reservation_baggages" and reservation is not None:
        fee = 50 * max(0, int(args["nonfree_baggages"]) - reservation.nonfree_baggages)
        total = int(args["total_baggages"])
        return (
            f"change reservation {reservation.reservation_id} to "
            f"{_plural(total, 'checked bag', 'checked bags')} in total; the fee is {money(fee)}, "
            f"charged to {paid_with(args['payment_id'])}"
        )
    if call.name == "update_reservation_flights" and reservation is not None:
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
    if call.name == "update_reservation_passengers" and reservation is not None:
        names = ", ".join(f"{p['first_name']} {p['last_name']}" for p in args["passengers"])
        return (
            f"update the passengers of reservation {reservation.reservation_id} to {names}, "
            "at no cost"
        )
    if call.name == "send_certificate":
        return f"send you a travel certificate of {money(args['amount'])}"
    if call.name == "book_reservation":
        flights = " and ".join(f"{f['flight_number']} on {f['date']}" for f in args["flights"])
        people = len(args["passengers"])
        price = _booking_total(db, args)
        payments = args["payment_methods"]
        if len(payments) == 1:
            paid = f"{money(price)} on {paid_with(payments[0]['payment_id'])}"
        else:
            # How the total is split over several methods is the caller's to say.
            split = " and ".join(
                f"{money(p['amount'])} on {paid_with(p['payment_id'])}" for p in payments
            )
            paid = f"{money(price)}: {split}"
        kind = "round trip" if args["flight_type"] == "round_trip" else "one-way trip"
        return (
            f"book a {kind} in {args['cabin'].replace('_', ' ')} from {args['origin']} to "
            f"{args['destination']} on {flights} for {_plural(people, 'passenger', 'passengers')}, "
            f"with {_plural(int(args['total_baggages']), 'checked bag', 'checked bags')} and "
            f"{'travel insurance' if args['insurance'] == 'yes' else 'no travel insurance'}; "
            f"the total is {paid}"
        )
    return f"call {call.name} with {json.dumps(args, sort_keys=True)}"


def _booking_total(db: FlightDB, args: Mapping[str, Any]) -> float:
    """What ``book_reservation`` charges, as τ²-bench computes it from the flights' fares."""
    people = len(args["passengers"])
    total = 0.0
    for flight in args["flights"]:
        found = db.flights.get(flight["flight_number"])
        day = found.dates.get(flight["date"]) if found else None
        prices = getattr(day, "prices", None) or {}
        total += float(prices.get(args["cabin"], 0)) * people
    if args["insurance"] == "yes":
        total += 30 * people
    return total + 50 * int(args["nonfree_baggages"])


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
#: The reason for cancelling as a caller's instructions state it.
_STATED_REASON = re.compile(r"reason for cancell?ing is:? ([a-z ]+)", re.IGNORECASE)
#: The caller gives the reason their instructions state.
GIVE_REASON = ("(The reason is|It's because of|It's) {reason}.",)
#: The caller's instructions give no reason: they say so in their own words.
NO_REASON = (
    "(I'd rather not go into it|It's a personal matter|It's just not working out for me)[, "
    "sorry]; I (just|simply) need it cancelled.",
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
#: The agent, having said why it cannot cancel, names the flown flight and hands over.
TRANSFER_AFTER = (
    "(Since|As) (your|the) flight {flight} on {date} has already been flown, (I'll transfer "
    "you to a human agent|a human agent will take it from here)[ (now|right away)].",
)
TRANSFER_PLAIN = (
    "(I'm sorry, but|I'm afraid|Unfortunately,) I can't handle this (myself|from here); (I'll "
    "transfer you to a human agent who can help|a human agent can help, so I'll transfer you).",
)


def _searches(messages: list[Any]) -> list[ToolCall]:
    """The agent's direct-flight searches so far."""
    return [
        call
        for message in messages
        if isinstance(message, AssistantMessage)
        for call in message.tool_calls or []
        if call.name == "search_direct_flight"
    ]


def _flown_trip(messages: list[Any]) -> dict[str, str] | None:
    """The flight dated before today of the reservation a transfer is about, if it has one.

    Its number, its date and the trip in words: what the agent names before the transfer.
    The reservation is one the agent read that has a flown flight: the latest whose id or
    route the caller said, else the only one (what the agent saw, not the hand-off summary
    the task holds).
    """
    today = NOW.date().isoformat()
    said = " ".join(m.content or "" for m in messages if isinstance(m, UserMessage))
    found: list[dict[str, str]] = []
    named: list[dict[str, str]] = []
    for message in reversed(messages):
        if not isinstance(message, ToolMessage) or '"reservation_id"' not in (
            message.content or ""
        ):
            continue
        try:
            record = json.loads(message.content or "")
        except json.JSONDecodeError:
            continue
        flights = record.get("flights") if isinstance(record, dict) else None
        if not isinstance(flights, list) or record.get("status") == "cancelled":
            continue
        flown = next(
            (f for f in flights if isinstance(f, dict) and str(f.get("date", "")) < today), None
        )
        if flown is None:
            continue
        trip = {
            "flight": str(flown.get("flight_number")),
            "date": str(flown.get("date")),
            "trip": f"reservation {record['reservation_id']} ({record.get('origin')} to "
            f"{record.get('destination')})",
        }
        found.append(trip)
        # A caller names it by its id, or by its route.
        route = (str(record.get("origin")), str(record.get("destination")))
        if str(record["reservation_id"]) in said or all(code in said for code in route):
            named.append(trip)
    # Of several such reservations the caller named none of, the agent cannot tell which.
    return named[0] if named else found[0] if len(found) == 1 else None


#: A user id as τ²-bench's airline users have them ("sophia_silva_7557").
_USER_ID = re.compile(r"\b[a-z]+_[a-z]+_\d+\b")
#: A reservation id as a caller reads it from their confirmation ("GV1N64").
_RESERVATION_ID = re.compile(r"\b(?=[A-Z0-9]*\d)(?=[A-Z0-9]*[A-Z])[A-Z0-9]{6}\b")


def _read(name: str, **arguments: str) -> ToolCall:
    return ToolCall(id="", name=name, arguments=arguments, requestor="assistant")


#: What in a caller's words says they fly back (a return search is then the way back).
_ROUND_TRIP = ("round trip", "round-trip", "return", "fly back", "coming back", "and back")


#: How a caller says each cancellation reason the policy names.
_REASON_WORDS = (
    (re.compile(r"airline cancel"), "airline_cancelled"),
    (re.compile(r"change of plan|change_of_plan|plans (have )?changed"), "change_of_plan"),
    (re.compile(r"\b(health|sick|ill|medical)\b"), "health"),
    (re.compile(r"\bweather\b"), "weather"),
)
#: A party size as a caller says it ("for 7 passengers").
_PARTY = re.compile(r"\b(\d+) (?:passengers|people|travell?ers)\b")
#: A caller asks to add travel insurance to a trip booked already.
_ADD_INSURANCE = re.compile(r"\b(add|buy|get|purchase)\b[^.?!]*\binsurance\b")
#: A caller asks for another membership tier.
_UPGRADE_MEMBERSHIP = re.compile(r"\bmembership\b[^.?!]*\b(upgrade|upgraded|change|changed)\b")


def _party(said: str) -> int | None:
    """The largest party size the caller named, or None."""
    sizes = [int(n) for n in _PARTY.findall(said)]
    return max(sizes) if sizes else None


def _complained_about(seen: Seen, said: str) -> list[str]:
    """The reservations the caller complains about: those read that they named, else all read."""
    read = [
        record
        for record in seen.records
        if isinstance(record, dict) and isinstance(record.get("reservation_id"), str)
    ]
    named = [
        r
        for r in read
        if r["reservation_id"] in said
        or all(str(r.get(key)) in said for key in ("origin", "destination"))
    ]
    return list(dict.fromkeys(r["reservation_id"] for r in named or read))


class AirlineAgent(ScriptedAgent):
    """The airline agent: asks what the policy requires, finds the rest in the records."""

    _describe = staticmethod(describe)
    #: Where the agent last asked the reason for a cancellation (the caller's answer follows).
    _reason_asked = 0

    def _before(self, request: SealedAction) -> None:
        dialogue, rng = self.dialogue, self.rng
        name = request.name
        said = " ".join(m.content or "" for m in dialogue.messages if isinstance(m, UserMessage))
        if name == "get_user_details" and not _USER_ID.search(said):
            dialogue.assistant(phrasing.pick(rng, phrasing.ASK_USER_ID))
            self.user.tell(request, "user id")
        elif (
            name == "get_reservation_details"
            and "reservation" not in self.asked
            and self._changes_a_reservation()
        ):
            # Only a reservation the caller wants changed is theirs to name; others the agent
            # reads from the profile (a new booking has no reservation id to ask for).
            self.asked.add("reservation")
            dialogue.assistant(phrasing.pick(rng, phrasing.ASK_RESERVATION))
            self.user.tell(request, "reservation")
        elif name == "search_direct_flight" and self._returning():
            last = _searches(dialogue.messages)[-1].arguments
            dialogue.assistant(
                phrasing.pick(
                    rng, ASK_RETURN, origin=last["destination"], destination=last["origin"]
                )
            )
            self.user.tell(request, "trip")
        elif name in ("search_direct_flight", "search_onestop_flight"):
            dialogue.assistant(phrasing.pick(rng, phrasing.ASK_TRIP))
            self.user.tell(request, "trip")
        elif name == "transfer_to_human_agents":
            flown = _flown_trip(dialogue.messages)
            if flown is not None and self.refusals:
                # The refusal said why; the agent names the flight and hands over.
                dialogue.assistant(phrasing.pick(rng, TRANSFER_AFTER, **flown))
            elif flown is not None:
                dialogue.assistant(phrasing.pick(rng, TRANSFER_WHY, **flown))
            elif not self.refusals:
                dialogue.assistant(phrasing.pick(rng, TRANSFER_PLAIN))
        elif name == "cancel_reservation":
            # The policy has the agent ask the reason for every cancellation.
            self._reason_asked = len(dialogue.messages)
            dialogue.assistant(phrasing.pick(rng, phrasing.ASK_CANCEL_REASON))
            self.user.tell(request, "reason")

    def _forbidden(self, call: ToolCall) -> str | None:
        """The policy model's verdict, with what the conversation settled.

        The reason the caller gave for a cancellation, the party size they asked to book for,
        and the reservations a compensation request is about: those they named, of the ones
        the agent read (else all it read).
        """
        said = " ".join(
            m.content or "" for m in self.dialogue.messages if isinstance(m, UserMessage)
        )
        return policy.violation_in_context(
            self.dialogue.state.db_of(FlightDB),
            call.name,
            call.arguments,
            reason=self._cancel_reason(),
            party=_party(said),
            about=_complained_about(self.seen(), said),
        )

    def _cancel_reason(self) -> str | None:
        """The cancellation reason the caller gave when asked (a policy name), or None.

        None also where their words name no reason the policy knows: the agent does not
        refuse on a reason it had to guess.
        """
        said = " ".join(
            (m.content or "").lower()
            for m in self.dialogue.messages[self._reason_asked :]
            if isinstance(m, UserMessage)
        )
        return next((reason for words, reason in _REASON_WORDS if words.search(said)), None)

    def declines(self) -> list[str]:
        """What the caller asked for that no tool does: insurance added later, a new tier."""
        said = " ".join(
            (m.content or "").lower() for m in self.dialogue.messages if isinstance(m, UserMessage)
        )
        found: list[str] = []
        if _ADD_INSURANCE.search(said):
            found.append(policy.INSURANCE_LATER)
        if _UPGRADE_MEMBERSHIP.search(said):
            found.append(policy.MEMBERSHIP_FIXED)
        return found

    def _lookups(self, seen: Seen) -> list[ToolCall]:
        """The profile of the user id the caller said lists their reservations and cards."""
        said = " ".join(seen.user)
        reservations = _RESERVATION_ID.findall(said) + [
            r
            for record in seen.records
            if isinstance(record, dict) and isinstance(record.get("reservations"), list)
            for r in record["reservations"]
            if isinstance(r, str)
        ]
        return [
            *(_read("get_user_details", user_id=u) for u in dict.fromkeys(_USER_ID.findall(said))),
            *(
                _read("get_reservation_details", reservation_id=r)
                for r in dict.fromkeys(reservations)
            ),
        ]

    def _worked_out(self, seen: Seen) -> list[str]:
        """Each reservation's free bag allowance, by the policy, for a member the agent read."""
        members = {
            str(record["user_id"]): str(record["membership"])
            for record in seen.records
            if isinstance(record, dict) and "membership" in record and "user_id" in record
        }
        worked: list[str] = []
        for record in seen.records:
            if not isinstance(record, dict) or "reservation_id" not in record:
                continue
            membership = members.get(str(record.get("user_id")))
            passengers = record.get("passengers")
            cabin = record.get("cabin")
            if membership in policy.FREE_BAGS and isinstance(passengers, list) and cabin:
                bags = policy.free_bags(membership, str(cabin), len(passengers))
                worked.append(f"{record['reservation_id']}: {bags} free checked bags")
        return worked

    def _changes_a_reservation(self) -> bool:
        """Whether a request still pending acts on an existing reservation."""
        return any(
            r.name != "get_reservation_details" and "reservation_id" in self._parameters(r.name)
            for r in self.user.pending()
        )

    def _parameters(self, tool: str) -> frozenset[str]:
        spec = self.domain.tool_spec(tool, "assistant")
        return frozenset() if spec is None else spec.properties

    def _returning(self) -> bool:
        """Whether the caller flies back and the agent has searched the way out already."""
        said = " ".join(
            (m.content or "").lower() for m in self.dialogue.messages if isinstance(m, UserMessage)
        )
        return bool(_searches(self.dialogue.messages)) and any(w in said for w in _ROUND_TRIP)


class AirlineUser(ScriptedUser):
    """The airline caller: their user id, their reservation, their trip, in their words."""

    def answer(self, topic: str, action: Action | None) -> str | None:
        """The caller's words on ``topic``: ``user id``, ``reservation``, ``trip``, or the kit's."""
        rng = self.dialogue.rng
        args = action.arguments if action is not None else {}
        if topic == "user id" and "user_id" in args:
            return phrasing.pick(rng, phrasing.GIVE_USER_ID, user_id=args["user_id"])
        if topic == "reservation":
            rid = self._changed_reservation()
            if rid is not None and rid in self.known:
                return phrasing.pick(rng, phrasing.GIVE_RESERVATION, reservation_id=rid)
            return (
                phrasing.pick(rng, phrasing.UNKNOWN_RESERVATION)
                + " Could you look it up from my profile?"
            )
        if topic == "reason":
            return self.cue(action) or self._reason()
        if topic == "trip" and action is not None:
            searched = _searches(self.dialogue.messages)
            back = any(
                c.arguments.get("origin") == args.get("destination")
                and c.arguments.get("destination") == args.get("origin")
                for c in searched
            )
            if action.name == "search_direct_flight" and back:
                return phrasing.pick(rng, GIVE_RETURN, **args)
            trip = phrasing.pick(rng, phrasing.GIVE_TRIP, **args)
            if action.name == "search_onestop_flight":
                trip += " " + phrasing.pick(rng, CONNECTION)
            return trip
        return super().answer(topic, action)

    def _reason(self) -> str:
        """The reason for cancelling the caller's instructions give, else their own words."""
        found = _STATED_REASON.search(str(self.task.user_scenario.instructions))
        if found is not None:
            return phrasing.pick(self.dialogue.rng, GIVE_REASON, reason=found.group(1).strip())
        return phrasing.pick(self.dialogue.rng, NO_REASON)

    def _changed_reservation(self) -> str | None:
        """The reservation the caller wants changed: the first a pending request acts on."""
        for request in self.queue:
            action = self.gold[request]
            rid = action.arguments.get("reservation_id")
            if action.name != "get_reservation_details" and isinstance(rid, str):
                return rid
        return None


class AirlineTeacher(ScriptedTeacher):
    """Rolls out airline tasks into trajectories that reach the gold database state.

    Args:
        domain: The airline domain (default: the shared instance).
    """

    domain_name = "airline"
    default_reason = "I need help with my trip."
    agent_side = AirlineAgent
    user_side = AirlineUser
