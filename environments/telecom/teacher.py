"""The programmatic telecom Teacher: the successful conversation for a task's gold actions.

The conversation follows the telecom policy's procedure: the agent identifies the customer
first (phone number, customer id, or full name with date of birth), reads what it needs,
lists the details of every account change and waits for an explicit "yes", and walks the
user through every check and fix on their phone, one step at a time: the user runs the phone
tool and reports what it shows. A payment request is checked and paid by the user on their
phone. The agent closes with a message that states every ``communicate_info`` string (or,
for a refusal, why policy forbids the request); an out-of-scope request is transferred with
τ²-bench's transfer message. Every tool call is executed, in order, on the task's initial
state, so every observation is the real one.
"""

from __future__ import annotations

import json
import random

from tau2.data_model.message import Message, ToolMessage
from tau2.data_model.tasks import Action
from tau2.domains.telecom.data_model import TelecomDB

from evosyn.environments.base import DomainState, FunctionalSymbol
from evosyn.environments.kit import phrasing
from evosyn.environments.kit.acting import Alternative
from evosyn.environments.kit.dialogue import Dialogue, Script, ScriptedTeacher
from evosyn.environments.kit.grammar import say
from evosyn.environments.kit.phrasing import money
from evosyn.environments.telecom import policy
from evosyn.environments.telecom.generator import REFUEL_AMOUNTS

# Templates of the phrase grammar (environments/kit/grammar.py): (a|b) picks, [x] may drop.
GREETINGS: tuple[str, ...] = (
    "(Hi|Hello|Hey|Good (morning|afternoon|evening))[ there], I (need|could use) [some ]help "
    "with my (phone|phone service|mobile line|account|line).",
    "(Hi|Hello)(!|,) I'm (calling|reaching out) about my (mobile line|phone|account)[, if you "
    "can help].",
    "(Hi|Hello), I have (a problem|a question|an issue) with my (phone|mobile service|line).",
)
ASK_IDENTITY: dict[str, tuple[str, ...]] = {
    "get_customer_by_phone": (
        "I can help with that. First, what is the phone number on your account?",
        "Sure. To find your account, could you give me your phone number?",
    ),
    "get_customer_by_id": (
        "Happy to help. Could you give me your customer id so I can find your account?",
        "Sure. What is your customer id, please?",
    ),
    "get_customer_by_name": (
        "I'd be glad to help. Could you give me your full name and date of birth?",
        "Sure. To verify your identity, may I have your full name and date of birth?",
    ),
}
GIVE_IDENTITY: dict[str, tuple[str, ...]] = {
    "get_customer_by_phone": (
        "(Sure|Yes|Of course)[,] (it's|my number is|the number is) {phone_number}.",
        "[Sure. ]{phone_number}(| is my number)[, thanks].",
    ),
    "get_customer_by_id": (
        "(My customer id is|It's|Sure, it's) {customer_id}.",
        "[Sure. ]{customer_id}(| is my customer id).",
    ),
    "get_customer_by_name": (
        "(I'm|This is|My name is) {full_name}, (born [on ]|date of birth ){dob}.",
        "My name is {full_name} and my (date of birth|birthday) is {dob}.",
    ),
}
ASK_BILL: tuple[str, ...] = ("Which bill is this about?", "Do you have the bill id?")
GIVE_BILL: tuple[str, ...] = ("(It's|That's) [bill ]{id}.", "The bill (id|number) is {id}.")
#: What the agent asks the user to do on the phone, per user tool.
PHONE_STEPS: dict[str, str] = {
    "check_status_bar": "check what your phone's status bar shows",
    "check_network_status": "check your phone's network status",
    "check_sim_status": "check the status of your SIM card",
    "check_data_restriction_status": "check whether data saver or other data restrictions are on",
    "check_network_mode_preference": "check your preferred network mode",
    "check_wifi_status": "check your Wi-Fi status",
    "check_vpn_status": "check whether a VPN is on",
    "check_apn_settings": "check your APN settings",
    "check_payment_request": "check the payment request I just sent to your phone",
    "make_payment": "pay the payment request on your phone",
    "toggle_airplane_mode": "turn airplane mode off",
    "toggle_data": "turn mobile data on",
    "reseat_sim_card": "take the SIM card out and put it back in",
    "set_network_mode_preference": "set your preferred network mode to {mode}",
    "toggle_data_saver_mode": "turn data saver mode off",
    "disconnect_vpn": "disconnect the VPN",
    "toggle_roaming": "turn data roaming on in your phone's settings",
    "reboot_device": "restart your phone",
}
ASK_PHONE: tuple[str, ...] = ("Could you please {step}?", "Next, please {step}.", "Please {step}.")
REPORT: tuple[str, ...] = (
    "(Okay|OK|Alright)[, done]. (It shows|Here's what I see|My phone says): {shown}",
    "(Done|I did that). (It now shows|The screen shows|Now it says): {shown}",
)


def describe(action: Action, state: DomainState) -> str:
    """What a telecom account change does and costs, in words for the confirmation request.

    A line is named by its phone number, the customer's name for it; a refuel states its
    price from the line's plan.
    """
    db = state.db_of(TelecomDB)
    args = action.arguments
    record = policy.line(db, str(args.get("line_id", ""))) if "line_id" in args else None
    name = f"the line {record.phone_number}" if record else "your line"
    if action.name == "refuel_data":
        price = float(args["gb_amount"]) * (
            policy.plan(db, record.plan_id).data_refueling_price_per_gb if record else 0.0
        )
        return (
            f"add {args['gb_amount']:g} GB of data to {name} for {money(price)}, charged on "
            "your next bill"
        )
    if action.name == "send_payment_request":
        found = policy.bill(db, str(args["bill_id"]))
        amount = f" of {money(found.total_due)}" if found else ""
        return f"send a payment request{amount} for your bill to your phone"
    if action.name == "resume_line":
        return f"lift the suspension of {name}"
    if action.name == "enable_roaming":
        return f"enable international roaming on {name} at no cost"
    if action.name == "suspend_line":
        return f"suspend {name}"
    return f"call {action.name} with {json.dumps(args, sort_keys=True)}"


def _shown(message: Message) -> str:
    text = message.content if isinstance(message, ToolMessage) else ""
    return " ".join((text or "").split())


class TelecomTeacher(ScriptedTeacher):
    """Rolls out telecom tasks into trajectories that reach the task's goal state."""

    domain_name = "telecom"
    greetings = GREETINGS
    note_after_writes = True

    _describe = staticmethod(describe)

    def _step(self, script: Script, action: Action) -> bool:
        if action.requestor == "user":
            self._phone_step(script.dialogue, action, script.rng)
            return False
        return super()._step(script, action)

    def _before(self, script: Script, action: Action, symbol: FunctionalSymbol | None) -> None:
        dialogue, rng = script.dialogue, script.rng
        if action.name in ASK_IDENTITY and "identity" not in script.asked:
            # Later look-ups of a customer use what the caller already said.
            script.asked.add("identity")
            dialogue.assistant(phrasing.pick(rng, ASK_IDENTITY[action.name]))
            dialogue.user(say(rng, GIVE_IDENTITY[action.name], **action.arguments))
        elif (
            action.name == "get_details_by_id"
            and str(action.arguments.get("id", "")).startswith("B")
            and action.arguments["id"] in script.dialogue.known
            and not any("bill" in s for s in script.summaries)
        ):
            dialogue.assistant(phrasing.pick(rng, ASK_BILL))
            dialogue.user(say(rng, GIVE_BILL, **action.arguments))

    def _discoveries(self, state: DomainState, value: str) -> list[Action]:
        """A line's record names its plan and device."""
        db = state.db_of(TelecomDB)
        return [
            Action(action_id="look-line", name="get_details_by_id", arguments={"id": line.line_id})
            for line in db.lines
            if value in (line.plan_id, line.device_id)
        ]

    def _alternative(self, dialogue: Dialogue, action: Action, details: str) -> Alternative | None:
        """A first proposal of another refuel amount the policy allows, or None.

        Only a refuel whose amount the user has not said yet is varied: the amount is the one
        detail of a telecom write a caller leaves open.
        """
        if action.name != "refuel_data":
            return None
        gold = float(action.arguments["gb_amount"])
        words = f"{gold:g} GB"
        said = " ".join(m.content or "" for m in dialogue.messages if m.role == "user")
        if words in said or f"add {words}" not in details:
            return None
        record = policy.line(dialogue.state.db_of(TelecomDB), action.arguments["line_id"])
        if record is None:
            return None
        others = [a for a in REFUEL_AMOUNTS if a != gold and policy.refuel_allowed(record, a)[0]]
        if not others:
            return None
        other = dialogue.rng.choice(others)
        first = describe(
            action.model_copy(update={"arguments": {**action.arguments, "gb_amount": other}}),
            dialogue.state,
        )
        return Alternative(first, words)

    def _phone_step(self, dialogue: Dialogue, action: Action, rng: random.Random) -> None:
        """The agent asks for one step on the phone; the user runs it and says what it shows."""
        step = PHONE_STEPS.get(action.name, f"run {action.name} on your phone")
        dialogue.assistant(phrasing.pick(rng, ASK_PHONE, step=step.format(**action.arguments)))
        dialogue.call(action)
        shown = _shown(dialogue.messages[-1])
        dialogue.user(say(rng, REPORT, shown=shown))
