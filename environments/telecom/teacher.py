"""The programmatic telecom Teacher: a blind agent serving the caller's requests.

The conversation follows the telecom policy's procedure: the agent identifies the customer
first (phone number, customer id, or full name with date of birth), reads what it needs,
lists the details of every account change and waits for an explicit "yes", and walks the
user through every check and fix on their phone, one step at a time: the user runs the phone
tool and reports what it shows. A payment request is checked and paid by the user on their
phone. The agent closes with a message that states every ``communicate_info`` string (or,
for a refusal, why policy forbids the request); an out-of-scope request is transferred with
τ²-bench's transfer message. The agent side (:class:`TelecomAgent`) never sees the task;
the user side (:class:`TelecomUser`) answers from it and runs the steps on the phone. Every
tool call is executed, in order, on the task's initial state, so every observation is the
real one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from tau2.data_model.message import Message, ToolCall, ToolMessage, UserMessage
from tau2.data_model.tasks import Action
from tau2.domains.telecom.data_model import TelecomDB

from evosyn.environments.base import DomainState, FunctionalSymbol
from evosyn.environments.information_flow import Choice, Seen
from evosyn.environments.kit import phrasing
from evosyn.environments.kit.agent import ScriptedAgent
from evosyn.environments.kit.dialogue import Dialogue, first_person
from evosyn.environments.kit.grammar import expand, say
from evosyn.environments.kit.phrasing import money
from evosyn.environments.kit.scripted import ScriptedTeacher, ScriptedUser
from evosyn.environments.kit.sealed import SealedAction
from evosyn.environments.telecom import policy
from evosyn.environments.telecom.refuels import REFUEL_AMOUNTS

# Templates of the phrase grammar (environments/kit/grammar.py): (a|b) picks, [x] may drop.
GREETINGS: tuple[str, ...] = (
    "(Hi|Hello|Hey|Good (morning|afternoon|evening))[ there], I (need|could use) [some ]help "
    "with my (phone|phone service|mobile line|account|line).",
    "(Hi|Hello)(!|,) I'm (calling|reaching out) about my (mobile line|phone|account)[, if you "
    "can help].",
    "(Hi|Hello), I have (a problem|a question|an issue) with my (phone|mobile service|line).",
)
_FIND = (
    "[ (so I can|to|and I'll) (find|pull up|look up|locate) your account]",
    "[ (so I can|to) (verify|confirm) (it's you|your identity)]",
)
ASK_IDENTITY: dict[str, tuple[str, ...]] = {
    "get_customer_by_phone": (
        f"[{phrasing.AGENT_OPENER}. ](First|To start|Before anything else), (what is|what's|"
        "could you (give me|tell me)|may I have) the (phone number|number) on your account"
        f"{_FIND[0]}?",
        f"[{phrasing.AGENT_OPENER}. ](Could|Can|Would) you (give me|tell me|share) (your phone "
        f"number|the number on your account)[ first]{_FIND[0]}?",
    ),
    "get_customer_by_id": (
        f"[{phrasing.AGENT_OPENER}. ](Could|Can|Would) you (give me|tell me|share) your "
        f"customer (id|ID)[ first]{_FIND[0]}?",
        f"[{phrasing.AGENT_OPENER}. ](What is|What's|May I have) your customer (id|ID)[, "
        "please]? (It's the quickest way to find your account|That lets me find your "
        "account)[ (quickly|right away)].",
    ),
    "get_customer_by_name": (
        f"[{phrasing.AGENT_OPENER}. ](Could|Can|Would) you (give me|tell me|share) your full "
        f"name and date of birth{_FIND[1]}?",
        f"[{phrasing.AGENT_OPENER}. ](To (verify|confirm) your identity|For security|Before we "
        "go on), (may I have|could I have|I'll need) your full name and (date of birth|birth "
        "date)[, please].",
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
ASK_LINE: tuple[str, ...] = (
    "[(Thanks|Thank you|Got it)[, I have your account]. ](I see|There are|Your account has) "
    "(several|a few|more than one) lines[ on (your|the) account]. (Which (phone number|number|"
    "line) is (this|the problem) about|Which (number|line) is having (the|this) (problem|"
    "trouble)|Which of them (do you mean|is it))[ - the phone number is enough]?",
    "[(Thanks|Got it). ](Which|What) (line|number) (are we looking at|should I look at|is "
    "(this|it) about)[ today]? (Your account has|I can see) (several|more than one|a few)[ of "
    "them][, so the phone number (helps|is enough)].",
)
GIVE_LINE: tuple[str, ...] = (
    "(It's|That's) (the line|my number) {phone_number}.",
    "The (number|line) is {phone_number}[, the phone I'm calling about].",
)
ASK_BILL: tuple[str, ...] = (
    "[(Thanks|Got it|Alright). ](Which|What) bill (is this about|do you mean|are you calling "
    "about)[, please]?[ (If you have the bill (id|number), that helps.|The bill id is "
    "enough.)]",
    "[(Thanks|Got it). ](Do you have|Could you give me|Can you tell me) the (bill (id|number)|"
    "id of the bill)[ (you mean|this is about)][, please]?",
)
GIVE_BILL: tuple[str, ...] = ("(It's|That's) [bill ]{id}.", "The bill (id|number) is {id}.")
#: What the agent asks the user to do on the phone, per user tool.
PHONE_STEPS: dict[str, str] = {
    "check_status_bar": "(check|look at) what your phone's status bar shows",
    "check_network_status": "(check|open) your phone's network status",
    "check_sim_status": "check the status of your SIM card",
    "check_data_restriction_status": "check whether data saver or other data restrictions are on",
    "check_network_mode_preference": "check (your preferred network mode|which network type "
    "your phone prefers)",
    "check_wifi_status": "check your Wi-Fi status",
    "check_wifi_calling_status": "check whether Wi-Fi calling is on",
    "check_vpn_status": "check whether a VPN is (on|connected)",
    "check_apn_settings": "(check|look at) your APN settings",
    "check_app_permissions": "check which permissions your {app_name} app has",
    "run_speed_test": "run a speed test",
    "can_send_mms": "check whether your messaging app can send MMS messages",
    "check_payment_request": "check the payment request I just sent to your phone",
    "make_payment": "pay the payment request on your phone",
    "toggle_airplane_mode": "turn airplane mode off",
    "toggle_data": "turn mobile data (on|back on)",
    "reseat_sim_card": "take the SIM card out and put it back in",
    "set_network_mode_preference": "set your preferred network mode to {mode}",
    "toggle_data_saver_mode": "turn data saver mode off",
    "disconnect_vpn": "disconnect the VPN",
    "toggle_roaming": "turn data roaming on in your phone's settings",
    "toggle_wifi_calling": "turn Wi-Fi calling off",
    "reset_apn_settings": "reset your APN settings to the default",
    "grant_app_permission": "give the {app_name} app the {permission} permission",
    "reboot_device": "restart your phone",
}
#: Why the agent asks for a fix: what the user's report showed (said before the request).
FIX_REASONS: dict[str, tuple[str, ...]] = {
    "toggle_airplane_mode": (
        "(Airplane mode is on|Your phone is in airplane mode), (which|and that) (turns off|"
        "cuts) every wireless connection.",
    ),
    "reseat_sim_card": (
        "(The phone does not detect your SIM card|Your SIM card is not detected).",
    ),
    "toggle_data": ("(Mobile data is switched off|Your mobile data switch is off).",),
    "toggle_roaming": ("Data roaming is off on the phone, and you are abroad.",),
    "toggle_data_saver_mode": ("Data saver mode is on, and it (slows|limits) your data.",),
    "disconnect_vpn": ("A VPN is (connected|on), and a VPN can slow mobile data down a lot.",),
    "set_network_mode_preference": (
        "Your phone is set to (an older network type|2G only), which is (too slow|not "
        "enough) for this.",
    ),
    "toggle_wifi_calling": (
        "Wi-Fi calling is on with MMS over Wi-Fi, which our network does not support for "
        "picture messages.",
    ),
    "reset_apn_settings": ("(Your APN settings are not right|The APN settings look wrong).",),
    "grant_app_permission": ("The {app_name} app is missing the {permission} permission.",),
    "reboot_device": (
        "(A restart|Restarting the phone) (applies the changes|brings the connection back).",
    ),
}
ASK_CHECK: tuple[str, ...] = (
    "[(Thanks|Got it|OK|Alright|Thank you)[ for checking]. ](Could|Can|Would) you[ (please|"
    "now)] {step}[ (for me|and tell me what (it says|you see))]?",
    "[(Thanks|Got it|OK|Alright). ](Next|Now|Then)[,] (please|let's have you) {step} and "
    "(tell me|let me know) what (it says|you see|it shows).",
    "[(Thanks|OK|Alright). ](Let's|Let us|I'd like to) (look at|check|rule out) (one more "
    "thing|something[ else]|another setting): (could|can|would) you {step}?",
    "[(Thanks|OK|Alright). ]To (narrow this down|see what's going on|find the cause)[ (a bit|"
    "further)], (could|can|would) you {step}?",
)
ASK_FIX: tuple[str, ...] = (
    "(Could|Can|Would) you[ please] {step}[ (now|for me)]?",
    "(Please|Go ahead and|Let's have you) {step}[, then (tell me|let me know) what the phone "
    "(shows|says)].",
    "(Let's fix that|That's (the|our) (problem|culprit)|That (explains it|would do it))[ (then|"
    "now)]: (could|can|would) you {step}?",
    "(The fix is simple|Here's the fix|This one is easy to fix): {step}[, please][ - then tell "
    "me what (you see|it shows)].",
)
REPORT: tuple[str, ...] = (
    "(Okay|OK|Alright)[, done]. {shown}",
    "(Done|I did that|Just did it). {shown}",
    "{shown}",
)
#: The agent tells what the data usage showed before it offers a refuel.
OVER_LIMIT: tuple[str, ...] = (
    "(Your line|The line) has used {used} GB (of|against) its {limit} GB (plan|allowance), so "
    "mobile data is (cut off|blocked) (until the next cycle|for now). I can add extra data to "
    "the line for a charge.",
    "(I found the problem|That explains it): (the line|your line) is over its data limit "
    "({used} GB used of {limit} GB). (I can|We can) refuel data on the line for a fee.",
)
#: The agent tells what the data usage showed where the line has no refuel left.
SPENT: tuple[str, ...] = (
    "(Your line|The line) has used {used} GB (of|against) its {limit} GB (plan|allowance), so "
    "mobile data is (cut off|blocked) (until the next cycle|for now), and it has already had "
    "{refuelled} GB of extra data this cycle.",
)
# Signal in words without numbers: "two bars" would read as a caller's "2 GB".
_BARS = {"¹": "a poor signal", "²": "a fair signal", "³": "a good signal", "⁴": "full signal"}


def _status_bar(text: str) -> str:
    """The status bar's icons in words ("airplane mode on, battery at 80%")."""
    words = []
    for part in (p.strip() for p in text.split("|")):
        if "Airplane" in part:
            words.append("the airplane mode icon")
        elif "No Signal" in part:
            words.append("no signal")
        elif part.startswith("📶"):
            words.append(next((w for k, w in _BARS.items() if k in part), "some signal"))
        elif part in ("2G", "3G", "4G", "5G"):
            words.append(part)
        elif "Data Enabled" in part:
            words.append("mobile data on")
        elif "Data Disabled" in part:
            words.append("mobile data off")
        elif "Data Saver" in part:
            words.append("the data saver icon")
        elif "VPN" in part:
            words.append("a VPN icon")
        elif "Connected to" in part:
            words.append(f"Wi-Fi connected to {part.split('Connected to', 1)[1].strip()}")
        elif "🔋" in part:
            words.append(f"battery at {part.replace('🔋', '').strip()}")
    return _listed(words)


def _listed(parts: list[str]) -> str:
    if not parts:
        return "nothing"
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


_NETWORK_FIELDS: dict[str, Callable[[str], str]] = {
    "Airplane Mode": lambda v: f"airplane mode is {v.lower()}",
    "SIM Card Status": lambda v: (
        "the SIM card is "
        + {"active": "active", "missing": "missing", "locked_pin": "locked with a PIN"}.get(
            v, v.replace("_", " ")
        )
    ),
    "Cellular Connection": lambda v: {
        "connected": "it is connected",
        "no_service": "it says no service",
        "searching": "it is searching for a network",
    }.get(v, v.replace("_", " ")),
    "Cellular Signal": lambda v: "there is no signal" if v == "none" else f"the signal is {v}",
    "Cellular Network Type": lambda v: "" if v == "none" else f"the network type is {v}",
    "Mobile Data Enabled": lambda v: f"mobile data is {'on' if v == 'Yes' else 'off'}",
    "Data Roaming Enabled": lambda v: f"data roaming is {'on' if v == 'Yes' else 'off'}",
    "Wi-Fi Radio": lambda v: f"Wi-Fi is {v.lower()}",
    "Wi-Fi Connected": lambda v: "",
    "Connected Wi-Fi Network": lambda v: f"it is on the Wi-Fi network {v}",
}
_PLAIN = {
    "Restarting network services...": "The phone restarted.",
    "Resetting APN settings...": "The APN settings were reset.",
    "(These are technical settings, usually best left unchanged.)": "",
}


def in_words(tool: str, output: str) -> str:
    """What the phone showed, as the user says it: sentences, no raw fields, no icons."""
    sentences: list[str] = []
    clauses: list[str] = []
    for line in (x.strip() for x in (output or "").splitlines()):
        key, _, value = line.partition(": ")
        value = value.strip()
        if not line or _PLAIN.get(line) == "":
            continue
        if key in _NETWORK_FIELDS:
            clause = _NETWORK_FIELDS[key](value)
            if clause:
                clauses.append(clause)
        elif key == "Status Bar":
            sentences.append(f"The status bar shows {_status_bar(value)}.")
        elif key == "Current APN Name":
            clauses.append(f"the APN name is {value}")
        elif key.startswith("MMSC URL"):
            clauses.append(f"the MMSC URL for picture messages is {value.lower()}")
        elif key in ("Network Mode Preference", "Preferred Network Mode set to"):
            mode = value.replace("_", " ").replace("4g 5g", "4G/5G").replace("g only", "G only")
            sentences.append(f"The preferred network mode is {mode}.")
        elif line.startswith("VPN is ON and connected"):
            poor = "'server_performance': 'poor'" in line
            sentences.append(
                "A VPN is on and connected"
                + (", and its performance shows as poor." if poor else ".")
            )
        elif line.startswith(("Success. ", "Error. ")):
            sentences.append(line.split(". ", 1)[1].replace("'", ""))
        else:
            text = _PLAIN.get(line, first_person(line.replace("'", "")))
            sentences.append(text[0].upper() + text[1:])
    if clauses:
        sentences.insert(0, _sentence(_listed(clauses)))
    return " ".join(sentences)


def _sentence(text: str) -> str:
    return f"{text[0].upper()}{text[1:]}." if text else ""


def describe(call: ToolCall, state: DomainState) -> str:
    """What a telecom account change does and costs, in words for the confirmation request.

    A line is named by its phone number, the customer's name for it; a refuel states its
    price from the line's plan.
    """
    db = state.db_of(TelecomDB)
    args = call.arguments
    record = policy.line(db, str(args.get("line_id", ""))) if "line_id" in args else None
    name = f"the line {record.phone_number}" if record else "your line"
    if call.name == "refuel_data":
        price = float(args["gb_amount"]) * (
            policy.plan(db, record.plan_id).data_refueling_price_per_gb if record else 0.0
        )
        return (
            f"add {args['gb_amount']:g} GB of data to {name} for {money(price)}, charged on "
            "your next bill"
        )
    if call.name == "send_payment_request":
        found = policy.bill(db, str(args["bill_id"]))
        amount = f" of {money(found.total_due)}" if found else ""
        return f"send a payment request{amount} for your bill to your phone"
    if call.name == "resume_line":
        return f"lift the suspension of {name}"
    if call.name == "enable_roaming":
        return f"enable international roaming on {name} at no cost"
    if call.name == "suspend_line":
        return f"suspend {name}"
    return f"call {call.name} with {json.dumps(args, sort_keys=True)}"


def _latest_record(dialogue: Dialogue, tool: str) -> dict[str, Any] | None:
    """The latest result of the agent's ``tool`` call, parsed, or None."""
    names = {}
    for message in dialogue.messages:
        for call in getattr(message, "tool_calls", None) or []:
            names[call.id] = call.name
    for message in reversed(dialogue.messages):
        if isinstance(message, ToolMessage) and names.get(message.id) == tool:
            try:
                found = json.loads(message.content or "")
            except json.JSONDecodeError:
                return None
            return found if isinstance(found, dict) else None
    return None


def _caller(dialogue: Dialogue) -> str | None:
    """The customer id the agent's first look-up of a customer found (the caller's), or None."""
    calls = {
        call.id: call.name
        for message in dialogue.messages
        for call in getattr(message, "tool_calls", None) or []
    }
    for message in dialogue.messages:
        if not isinstance(message, ToolMessage) or calls.get(message.id) not in ASK_IDENTITY:
            continue
        try:
            found = json.loads(message.content or "")
        except json.JSONDecodeError:
            continue
        # A look-up by name lists the matches: the caller is the one match.
        record = found[0] if isinstance(found, list) and len(found) == 1 else found
        if isinstance(record, dict) and "customer_id" in record:
            return str(record["customer_id"])
    return None


def _shown(message: Message) -> str:
    text = message.content if isinstance(message, ToolMessage) else ""
    return text or ""


#: The agent's closing on the fixes it had the caller make on their phone.
OUTCOME: tuple[str, ...] = (
    "(To recap|In short|For your records), the (fixes|changes) on your phone (were|have been) "
    "to {fixes}.",
    "(On your phone|On the phone side), (we|you) (had to|needed to) {fixes}[, and that did it].",
)
#: An amount of data as a caller names it ("2 GB", "1.5 GB").
_AMOUNT = re.compile(r"\b(\d+(?:\.\d+)?) ?GB\b")
#: A caller who does not have the bill's id asks the agent to find it.
NO_BILL: tuple[str, ...] = (
    "(Sorry, )I (don't remember|can't recall) the bill (id|number) - (could|can) you (find|"
    "check) it on my account?",
)


class TelecomAgent(ScriptedAgent):
    """The telecom agent: identifies the caller, asks which line, guides the phone steps."""

    _describe = staticmethod(describe)

    def _before(self, request: SealedAction) -> None:
        dialogue, rng = self.dialogue, self.rng
        if request.requestor == "user":
            self._guide(request)
        elif request.name in ASK_IDENTITY and "identity" not in self.asked:
            # Later look-ups of a customer use what the caller already said.
            self.asked.add("identity")
            dialogue.assistant(phrasing.pick(rng, ASK_IDENTITY[request.name]))
            self.user.tell(request, "identity")
        elif (record := self._opened(request)) is not None and self._unnamed_line(record):
            # A caller with several lines says which one before the agent looks at any.
            dialogue.assistant(phrasing.pick(rng, ASK_LINE))
            self.user.tell(request, "line")
        elif request.name == "refuel_data":
            usage = _latest_record(dialogue, "get_data_usage")
            if usage is not None and "data_used_gb" in usage:
                refuelled = float(usage.get("data_refueling_gb") or 0)
                # No refuel to offer where the line has had the most there is.
                spent = refuelled >= policy.MAX_REFUEL_GB
                dialogue.assistant(
                    say(
                        rng,
                        SPENT if spent else OVER_LIMIT,
                        used=f"{float(usage['data_used_gb']):g}",
                        limit=f"{float(usage.get('data_limit_gb', 0)):g}",
                        refuelled=f"{refuelled:g}",
                    )
                )
            # The user says how much they want, if their instructions give a rule for it.
            self.user.tell(request, "cue")
        elif (
            record is not None
            and request.name == "get_details_by_id"
            and str(record.arguments.get("id", "")).startswith("B")
            and "bill" not in self.asked
            and not any("bill" in s for s in self.summaries)
        ):
            self.asked.add("bill")
            dialogue.assistant(phrasing.pick(rng, ASK_BILL))
            self.user.tell(request, "bill")

    def _forbidden(self, call: ToolCall) -> str | None:
        """The policy model's verdict, with the customer the agent identified.

        That is the caller: the customer its first look-up of one found (later look-ups may
        find others, such as the owner of a line the caller names).
        """
        return policy.violation_in_context(
            self.dialogue.state.db_of(TelecomDB),
            call.name,
            call.arguments,
            customer_id=_caller(self.dialogue),
        )

    def outcome(self) -> str | None:
        """The fixes the agent had the caller make on their phone, for the closing (or None)."""
        fixes = [
            expand(self.rng, PHONE_STEPS[call.name]).format(
                **{k: str(v).replace("_", " ") for k, v in call.arguments.items()}
            )
            for message in self.dialogue.messages
            if isinstance(message, UserMessage)
            for call in message.tool_calls or []
            if call.name in PHONE_STEPS
            and self.domain.symbol(call.name, "user") == FunctionalSymbol.WRITE
        ]
        fixes = list(dict.fromkeys(fixes))
        return say(self.rng, OUTCOME, fixes=_listed(fixes)) if fixes else None

    def _opened(self, request: SealedAction) -> ToolCall | None:
        """``request`` opened, where the agent has seen every value and the user chose all."""
        seen = self.seen()
        if request.unseen(seen) or request.unchosen(seen):
            return None  # a write's line is asked for with its other choices
        return request.open(seen)

    def _unnamed_line(self, call: ToolCall) -> bool:
        """Whether ``call`` is about one of several lines whose number the caller has not said."""
        value = str(call.arguments.get("line_id") or call.arguments.get("id") or "")
        db = self.dialogue.state.db_of(TelecomDB)
        record = policy.line(db, value)
        if record is None:
            return False
        owner = next((c for c in db.customers if record.line_id in c.line_ids), None)
        if owner is None or len(owner.line_ids) < 2:
            return False
        said = " ".join(
            m.content or "" for m in self.dialogue.messages if isinstance(m, UserMessage)
        )
        return record.phone_number not in said

    def _lookups(self, seen: Seen) -> list[ToolCall]:
        """A customer's record lists their lines; a line's record names its plan and device."""
        lines = [
            line
            for record in seen.records
            if isinstance(record, dict) and isinstance(record.get("line_ids"), list)
            for line in record["line_ids"]
            if isinstance(line, str)
        ]
        return [
            ToolCall(id="", name="get_details_by_id", arguments={"id": line}, requestor="assistant")
            for line in dict.fromkeys(lines)
        ]

    def _named(self, request: SealedAction) -> dict[str, object]:
        """The kit's, and for a refuel the amount of data the user named last ("2 GB")."""
        named = super()._named(request)
        if request.name == "refuel_data":
            for message in reversed(self.dialogue.messages[self.since :]):
                amounts = _AMOUNT.findall(message.content or "") if message.role == "user" else []
                if amounts:
                    named["gb_amount"] = float(amounts[-1])
                    break
        return named

    def _guide(self, request: SealedAction) -> None:
        """The agent asks for one step on the phone; the user then runs it and reports.

        A fix comes with why it is needed, which the user's last report showed: the agent
        prescribes only what a reported symptom calls for.
        """
        dialogue, rng = self.dialogue, self.rng
        call = request.open(self.seen())
        template = PHONE_STEPS.get(call.name, f"run {call.name} on your phone")
        arguments = {k: str(v).replace("_", " ") for k, v in call.arguments.items()}
        step = expand(rng, template).format(**arguments)
        reasons = FIX_REASONS.get(call.name)
        fix = request.symbol == FunctionalSymbol.WRITE
        ask = say(rng, ASK_FIX if fix else ASK_CHECK, step=step)
        if reasons and _reported(dialogue):
            ask = f"{say(rng, reasons, **arguments)} {ask}"
        dialogue.assistant(ask)


def _reported(dialogue: Dialogue) -> bool:
    """Whether the user has reported what the phone shows: a check, or the status bar."""
    return any(
        (isinstance(m, ToolMessage) and m.requestor == "user")
        or (isinstance(m, UserMessage) and "status bar shows" in (m.content or ""))
        for m in dialogue.messages
    )


class TelecomUser(ScriptedUser):
    """The telecom caller: who they are, which line and bill, and what their phone shows."""

    def answer(self, topic: str, action: Action | None) -> str | None:
        """The caller's words on ``identity``, ``line``, ``bill``, or the kit's topics."""
        rng = self.dialogue.rng
        args = action.arguments if action is not None else {}
        if topic == "identity" and action is not None:
            return say(rng, GIVE_IDENTITY[action.name], **args)
        if topic == "line":
            number = self._line_number(action)
            return None if number is None else say(rng, GIVE_LINE, phone_number=number)
        if topic == "bill":
            bill = str(args.get("id", ""))
            if bill and bill in self.known:
                return say(rng, GIVE_BILL, id=bill)
            return say(rng, NO_BILL)
        return super().answer(topic, action)

    def lacking(self) -> str | None:
        """The kit's, or the customer id of a caller their account is found for by phone or name."""
        found = super().lacking()
        if found is not None:
            return found
        identified = any(
            self.gold[r].name in ("get_customer_by_phone", "get_customer_by_name")
            for r in self.queue
        )
        return "customer id" if identified and "customer id" not in self.known.lower() else None

    def _first_preference(
        self, action: Action, choice: Choice, value: object
    ) -> tuple[str, str] | None:
        """Another amount of data policy allows the line, for a refuel (a first preference)."""
        if action.name != "refuel_data" or not self.performance.proposal_due():
            return None
        db = self.dialogue.state.db_of(TelecomDB)
        record = policy.line(db, str(action.arguments.get("line_id", "")))
        if record is None:
            return None
        gold = float(str(value))
        others = [a for a in REFUEL_AMOUNTS if a != gold and policy.refuel_allowed(record, a)[0]]
        return None if not others else (f"{self.dialogue.rng.choice(others):g} GB", f"{gold:g} GB")

    def _line_number(self, action: Action | None) -> str | None:
        """The phone number of the line ``action`` (else the caller's next request) is about."""
        db = self.dialogue.state.db_of(TelecomDB)
        actions = [action] if action is not None else [self.gold[r] for r in self.queue]
        for candidate in actions:
            value = str(candidate.arguments.get("line_id") or candidate.arguments.get("id") or "")
            record = policy.line(db, value)
            if record is not None:
                return str(record.phone_number)
        return None

    def perform(self, request: SealedAction) -> None:
        """The user runs the step on their phone and says what it shows, in their words."""
        super().perform(request)
        last = self.dialogue.messages[-1]
        shown = in_words(request.name, _shown(last))
        self.dialogue.user(say(self.dialogue.rng, REPORT, shown=shown))


class TelecomTeacher(ScriptedTeacher):
    """Rolls out telecom tasks into trajectories that reach the task's goal state."""

    domain_name = "telecom"
    greetings = GREETINGS
    agent_side = TelecomAgent
    user_side = TelecomUser
