"""The programmatic airline Teacher: the successful conversation for a task's gold actions.

The conversation follows the policy's procedure: the agent asks for the user id, looks the
user up, asks for (or searches) the reservation, reads what it needs, lists the details of
every write and waits for an explicit "yes", makes the write, and closes with a message that
states every ``communicate_info`` string (or, for a refusal, why policy forbids the request).
The user ends with τ²-bench's stop token. Every tool call is executed, in order, on the task's
initial state, so every observation is the real one.
"""

from __future__ import annotations

import json

from tau2.data_model.tasks import Action

from evosyn.environments.base import FunctionalSymbol
from evosyn.environments.kit import phrasing
from evosyn.environments.kit.dialogue import Script, ScriptedTeacher


def describe(action: Action) -> str:
    """What a write action does, in words for the confirmation request."""
    args = action.arguments
    if action.name == "cancel_reservation":
        return (
            f"cancel reservation {args['reservation_id']}, with the refund going to the original "
            "payment methods within 5 to 7 business days"
        )
    if action.name == "update_reservation_baggages":
        return (
            f"set reservation {args['reservation_id']} to {args['total_baggages']} checked bags "
            f"({args['nonfree_baggages']} of them paid), using {args['payment_id']}"
        )
    if action.name == "update_reservation_flights":
        flights = " and ".join(f"{f['flight_number']} on {f['date']}" for f in args["flights"])
        return (
            f"update reservation {args['reservation_id']} to {args['cabin'].replace('_', ' ')} "
            f"on {flights}, settling any difference with {args['payment_id']}"
        )
    if action.name == "send_certificate":
        return f"send a travel certificate of ${args['amount']} to {args['user_id']}"
    if action.name == "book_reservation":
        flights = " and ".join(f"{f['flight_number']} on {f['date']}" for f in args["flights"])
        people = len(args["passengers"])
        paid = " and ".join(f"${p['amount']} on {p['payment_id']}" for p in args["payment_methods"])
        return (
            f"book a {args['flight_type'].replace('_', ' ')} {args['cabin'].replace('_', ' ')} "
            f"trip {args['origin']}-{args['destination']} on {flights} for {people} "
            f"passenger(s), {args['total_baggages']} checked bag(s) ({args['nonfree_baggages']} "
            f"paid), insurance {args['insurance']}, paying {paid}"
        )
    return f"call {action.name} with {json.dumps(args, sort_keys=True)}"


class AirlineTeacher(ScriptedTeacher):
    """Rolls out airline tasks into trajectories that reach the gold database state.

    Args:
        domain: The airline domain (default: the shared instance).
    """

    domain_name = "airline"
    default_reason = "I need help with my trip."
    # The call goes on after a transfer: the closing still states what was done.
    hands_over = False

    _describe = staticmethod(describe)

    def _before(self, script: Script, action: Action, symbol: FunctionalSymbol | None) -> None:
        dialogue, rng = script.dialogue, script.rng
        if action.name == "get_user_details" and action.requestor == "assistant":
            dialogue.assistant(phrasing.pick(rng, phrasing.ASK_USER_ID))
            dialogue.user(
                phrasing.pick(rng, phrasing.GIVE_USER_ID, user_id=action.arguments["user_id"])
            )
        elif action.name == "get_reservation_details" and "reservation" not in script.asked:
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
        elif action.name in ("search_direct_flight", "search_onestop_flight"):
            dialogue.assistant(phrasing.pick(rng, phrasing.ASK_TRIP))
            dialogue.user(phrasing.pick(rng, phrasing.GIVE_TRIP, **action.arguments))
        elif action.name == "cancel_reservation" and (cue := script.cue(action)):
            dialogue.assistant("May I ask why you would like to cancel?")
            dialogue.user(cue)
