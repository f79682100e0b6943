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
import re

from tau2.data_model.message import (
    Message,
    SystemMessage,
)
from tau2.data_model.tasks import Action, Task

from evosyn.agents.teacher import phrasing
from evosyn.agents.teacher.dialogue import Dialogue, first_person
from evosyn.environments.base import FunctionalSymbol, Tau2Domain
from evosyn.environments.registry import get_domain
from evosyn.records import SynthTask, Trajectory

_REASON = re.compile(r"^reason: ([^.]+)\.")


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


class AirlineTeacher:
    """Rolls out airline tasks into trajectories that reach the gold database state.

    Args:
        domain: The airline domain (default: the shared instance).
    """

    name = "programmatic"

    def __init__(self, domain: Tau2Domain | None = None) -> None:
        self.domain = domain or get_domain("airline")

    def rollout(self, task: SynthTask, seed: int, attempt: int = 0) -> Trajectory:
        """The trajectory for ``task``: its gold actions inside a policy-following dialogue.

        Args:
            task: The synthesized task.
            seed: Seed of the wording.
            attempt: 0 for the first rollout, k for the k-th repair (varies the wording).

        Returns:
            The trajectory in τ²-bench's message format.
        """
        messages = self.messages(task.task, seed, attempt)
        return Trajectory(
            campaign_id=task.campaign_id,
            round=task.round,
            trajectory_id=f"{task.task_id}-traj{attempt}",
            task_id=task.task_id,
            messages=messages,
            teacher=self.name,
            attempt=attempt,
        )

    def messages(self, task: Task, seed: int, attempt: int = 0) -> list[Message]:
        """The conversation for a τ²-bench task (synthesized or official)."""
        rng = phrasing.seeded(seed, task.id, attempt, "rollout")
        dialogue = Dialogue(self.domain, self.domain.initial_state(task))
        dialogue.add(SystemMessage(role="system", content=self.domain.policy()))
        history = task.initial_state.message_history if task.initial_state else None
        for message in history or []:
            dialogue.replay(message)
        instructions = task.user_scenario.instructions
        reason = getattr(instructions, "reason_for_call", None) or "I need help with my trip."
        known = str(getattr(instructions, "known_info", "") or "")
        dialogue.user(f"{phrasing.pick(rng, phrasing.GREETINGS)} {first_person(reason)}")

        criteria = task.evaluation_criteria
        actions = list((criteria.actions if criteria else None) or [])
        summaries: list[str] = []
        reservation_asked = False
        for action in actions:
            symbol = self._symbol(action)
            if action.name == "get_user_details" and action.requestor == "assistant":
                dialogue.assistant(phrasing.pick(rng, phrasing.ASK_USER_ID))
                dialogue.user(
                    phrasing.pick(rng, phrasing.GIVE_USER_ID, user_id=action.arguments["user_id"])
                )
            elif action.name == "get_reservation_details" and not reservation_asked:
                reservation_asked = True
                dialogue.assistant(phrasing.pick(rng, phrasing.ASK_RESERVATION))
                rid = action.arguments["reservation_id"]
                if rid in known:
                    dialogue.user(phrasing.pick(rng, phrasing.GIVE_RESERVATION, reservation_id=rid))
                else:
                    dialogue.user(
                        phrasing.pick(rng, phrasing.UNKNOWN_RESERVATION)
                        + " Could you look it up from my profile?"
                    )
            elif action.name in ("search_direct_flight", "search_onestop_flight"):
                dialogue.assistant(phrasing.pick(rng, phrasing.ASK_TRIP))
                dialogue.user(phrasing.pick(rng, phrasing.GIVE_TRIP, **action.arguments))
            elif symbol == FunctionalSymbol.WRITE:
                match = _REASON.match(action.info or "")
                if action.name == "cancel_reservation" and match:
                    dialogue.assistant("May I ask why you would like to cancel?")
                    dialogue.user(f"The reason is {match.group(1)}.")
                details = describe(action)
                dialogue.assistant(phrasing.pick(rng, phrasing.ASK_CONFIRM, details=details))
                dialogue.user(phrasing.pick(rng, phrasing.CONFIRM))
                summaries.append(details)
            dialogue.call(action)

        communicate = list((criteria.communicate_info if criteria else None) or [])
        note = (task.description.notes if task.description else None) or ""
        nl = (criteria.nl_assertions if criteria else None) or []
        if summaries:
            closing = phrasing.pick(rng, phrasing.DONE, summary="; ".join(summaries))
        elif nl and note:
            closing = phrasing.pick(rng, phrasing.REFUSE, reason=note)
        elif note:
            closing = phrasing.pick(rng, phrasing.INFORM, summary=note)
        else:
            closing = "I have checked your records."
        if communicate:
            closing += " For your records: " + "; ".join(communicate) + "."
        dialogue.assistant(f"{closing} {phrasing.pick(rng, phrasing.ANYTHING_ELSE)}")
        dialogue.user(phrasing.pick(rng, phrasing.GOODBYE))
        return dialogue.messages

    def _symbol(self, action: Action) -> FunctionalSymbol | None:
        spec = self.domain.tool_spec(action.name, action.requestor)
        return None if spec is None else spec.symbol
