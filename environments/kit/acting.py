"""The programmatic user acts out the challenges a task requests; the agent hears the words.

What the task requests (its interaction challenges and persona) is the user side's alone: a
:class:`Performance` the user side holds, never the dialogue both sides speak in. The user
performs each challenge in words the detectors of :mod:`evosyn.environments.dialogue_acts`
recognise and a reader would too; the agent reacts to what the user said, as a τ²-bench agent
would, with no way to the request:

* the opening (:func:`open_request`, the user's; :func:`react`, the agent's): a vague first
  request the agent asks about (``ambiguous_*``), pressure the agent acknowledges
  (``emotional_pressure``), a claimed prior approval the agent declines to rely on once it
  has checked the records (``user_false_claim``), an id the user says they do not have, so
  the agent finds the record by looking it up (``missing_information``);
* a side question (:func:`side_question`, the user's, added to their next turn after a
  look-up): about their own record; the agent answers it from what it read
  (:func:`side_answer`) before work goes on (``multi_intent_interleaving``);
* a first preference (the user's answer to the agent's question for a detail they may
  change, such as the payment method or an amount): the user first names another value policy
  allows, the agent proposes what they named, then the user changes their mind or names a
  late condition (:func:`change_line`) and the agent, reading the change
  (:func:`changes_mind`), proposes again with the value now named (``preference_change``,
  ``constraint_hidden_until_late``).

The user also acts out the task's persona (its kind per
:func:`~evosyn.environments.dialogue_acts.persona_kind`), in words
:func:`~evosyn.environments.dialogue_acts.realized_personas` recognises: a busy user opens
with no pleasantries but a word about their time and answers tersely, a chatty one adds a
friendly aside, a first-time caller asks how it works and the agent explains (on reading
it, :func:`react`), an expert says they know how it goes (all in :func:`open_request`); a
careful one asks the agent to go over the details once more before saying yes
(:func:`go_over_line`), which the agent hears (:func:`asks_to_go_over`) and does.

A challenge the task gives no occasion for is not faked: it stays unperformed, the detector
says so, and synthesis rejects the task with that reason.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tau2.data_model.message import ToolCall, ToolMessage, UserMessage

from evosyn.environments.dialogue_acts_turns import (
    claims_approval,
    new_to_it,
    presses,
    says_vaguely,
)
from evosyn.environments.kit.grammar import say
from evosyn.environments.spoken_forms import date_forms

if TYPE_CHECKING:
    from evosyn.environments.kit.dialogue import Dialogue

AMBIGUOUS = frozenset({"ambiguous_preference", "ambiguous_request"})
#: Challenges acted out at a write's proposal: a first preference, then a change.
PROPOSALS = ("preference_change", "constraint_hidden_until_late")


@dataclass
class Performance:
    """What the user side acts out: the task's requested challenges and persona.

    Held by the user side only; the dialogue and the agent side never see it.
    """

    #: Interaction challenges to act out.
    challenges: frozenset[str] = frozenset()
    #: The user's manner (a kind of ``dialogue_acts.persona_kind``; None: none).
    persona: str | None = None
    #: Challenges performed so far.
    acted: set[str] = field(default_factory=set)
    #: Whether the persona's one-time act (a careful user's double check) is done.
    persona_acted: bool = False
    #: The user's words for the value they really want, after naming another one first
    #: (a proposal challenge under way; None: none).
    change_to: str | None = None

    def due(self, challenge: str) -> bool:
        """Whether ``challenge`` is requested and not acted out yet."""
        return challenge in self.challenges and challenge not in self.acted

    def proposal_due(self) -> str | None:
        """The proposal challenge still to act out, if any."""
        return next((c for c in PROPOSALS if self.due(c)), None)


VAGUE = (
    "{greeting} I (need|want) to sort (something|a few things) out[, if you can help].",
    "{greeting} (There's|I have) (an issue|a problem|something) I('d like|'m hoping) to get "
    "(sorted|fixed|handled)[ today].",
    "{greeting} I'm not (quite|entirely) sure how to put it, but I need some help[ with my "
    "account].",
)
CLARIFY = (
    "(Of course|Sure|Happy to help|I'd be glad to help|No problem)[, let's (sort it out|take a "
    "look)]. (What exactly would you like me to do|Could you tell me what exactly you need|What "
    "exactly do you need (help with|me to do)|What would you like me to (do|look into)|Can you "
    "tell me (a bit more about|more about) (it|what's going on|what you need))[ (today|first)]?",
    "(I can help with that|Certainly|I'm here to help|Let's see what I can do)[, of course]. "
    "(Can|Could) you (tell me (a bit more about|exactly)|describe exactly) what you (need|"
    "have in mind|would like)[, so I know where to start]?",
)
PRECISE = (
    "(Right|Sure|Yes), sorry. {request}",
    "(Let me be clearer|To be specific|OK, more precisely): {request}",
)
PRESSURE = (
    "(Honestly, )I'm (really|quite) (stressed|frustrated|upset) about this[ and need it sorted "
    "right now].",
    "This is (urgent|really urgent), please (hurry|be quick)[ - it really matters to me].",
    "I'm (fed up|so frustrated) with this[ and I don't have much time].",
)
ACKNOWLEDGE = (
    "I (understand|hear you|know) (this is|this has been|that's) (stressful|frustrating)[ for "
    "you], and I'll (move as quickly as I can|get this sorted with you|do my best to sort it "
    "out quickly).",
    "I'm (sorry|really sorry) (about the trouble|this has been frustrating|for the stress)"
    "[ (this has caused|it's caused)]; let's (get (it|this) sorted|sort (it|this) out)[ "
    "(together|quickly)].",
    "I (understand|completely understand)[ how you feel], and I'm sorry for the (trouble|"
    "hassle)[. Let's (get this sorted|sort this out) (quickly|together)].",
)
CLAIM = (
    "(By the way|Also), another agent already (approved|agreed to) this (on the phone|for me).",
    "I was (promised|told) this would be (approved|taken care of)[ by one of your colleagues].",
    "(Your colleague|Someone from your team|The last agent I spoke to) already (approved|agreed "
    "to|confirmed) this[, so it should be quick].",
)
DECLINE = (
    "I (can't|cannot) (confirm|verify) (an earlier approval|that approval|a promise like that) "
    "(until|unless) I see it in your records, so I (have to|need to) go by the policy and "
    "(check|verify) everything first.",
    "I can't (rely on|go by) (an earlier promise|what was said before|a promise I can't see) "
    "without a record of it; I (have to|need to) follow the policy and (check|go through) your "
    "records[ (first|myself)].",
    "(Thanks for letting me know|I appreciate you mentioning it|Noted). (I (need|have) to "
    "follow the policy|I have to go by our records), so I'll (check|verify) your records "
    "(myself|first)[ before (anything else|we go on)].",
)
NO_ID = (
    "(Sorry|Hmm|Oh), I (don't have|can't find|don't remember) the {what}. (Can|Could) you "
    "(look it up|find it)[ (for me|on your side)]?",
    "I've (lost|deleted|misplaced) the confirmation, so I don't (have|know) the {what}[, sorry].",
    "(Unfortunately|I'm afraid) I (don't have|don't know) the {what}(.|; can you find it?)",
)
SIDE_ASK = (
    "[(Oh|Actually), ]while I have you(:|,) (what {what} do you have (for me|on file)|which "
    "{what} is on my (account|profile))?",
    "Quick question[ (by the way|before I forget)]: (which|what) {what} is on my "
    "(account|profile)?",
    "(By the way|Also|Unrelated, but), could you (tell me|check) (which|what) {what} (you have "
    "on file|is on my (account|profile))?",
)
SIDE_ANSWER = (
    "(Your {what} (on file|on your (account|profile))|The {what} (on file|on your (account|"
    "profile)|we have for you)) is {value}. (Now, back to your request.|Now, back to the main "
    "request.|Let's continue with your request.|(OK|Right|Alright), back to your request.)",
    "(Sure|Of course|Good question)(,|.|!) (it's|that's) {value}[ (on file|on your "
    "(account|profile))]. (Now, back to your request.|Let's continue with your request.|(OK|"
    "Right), back to your request.)",
)
ORDER_SIDE_ASK = (
    "[(Oh|Actually), ]while I have you(:|,) what's the current {what} of that order?",
    "Quick question[ (by the way|before I forget)]: what {what} does that order show?",
    "(By the way|Also), could you (tell me|check) the {what} of that order?",
)
ORDER_SIDE_ANSWER = (
    "(That|The) order's {what} is {value}. (Now, back to your request.|Now, back to the main "
    "request.|Let's continue with your request.|(OK|Right|Alright), back to your request.)",
    "(Sure|Of course|Good question)(,|.|!) (it's|it shows|the {what} is) {value}[ (right now|at "
    "the moment)]. (Now, back to your request.|Let's continue with your request.|(OK|Right), "
    "back to your request.)",
)
CHANGE = (
    "(Actually|Hmm, actually), I('ve| have) changed my mind: (please use|I'd rather go with) "
    "{choice} instead.",
    "On second thought, I'd rather (use|go with) {choice}[ instead].",
)
CONDITION = (
    "(Oh, )one condition I should have mentioned: it has to be {choice}.",
    "(Wait, )I forgot to mention (one thing|a condition): only if it's {choice}.",
)
BUSY = (
    "(I'm short on time|I'm pressed for time|I don't have long)[, so I'll keep this (short|"
    "brief)].",
    "(Quickly, please|I'll keep this short) - I'm (short on time|in a rush)[ today].",
)
TERSE_CONFIRM = (
    "(Yes|Yes, go ahead|Yes, do it|Yes, proceed|Yes, please|Yes, fine|Yes, that's it|Yes, "
    "correct)[(, thanks| - quickly, please| - go)].",
)
TERSE_GOODBYE = (
    "(That's all|Nothing else|That's it|All set|That's everything|We're done)[(, thanks| - "
    "thanks|, cheers|, bye)]. ###STOP###",
)
ASIDE = (
    "I hope your day is going (well|better than mine)!",
    "I've just made myself a cup of (tea|coffee), so I'm (all set|ready).",
    "It's been one of those weeks, (honestly|I tell you).",
    "Sorry in advance, I do tend to chat[ a bit].",
)
FIRST_TIME = (
    "It's my first time (doing this|getting in touch about something like this) - how does it "
    "[usually ]work?",
    "I've never done this before, so how does (the process|this) work?",
)
EXPLAIN = (
    "(Happy to explain|No problem|Of course|Sure)[, it's simple]: first I'll (look up|check) "
    "your records, then I'll go over (the details|what I can do|your options) with you, and "
    "nothing changes without your (yes|clear yes|go-ahead).",
    "Here's how it works: I (look up|check) your records, (explain|go over) what I can do, and "
    "(only act|make a change only|change anything only) once you (agree|say yes)[ - (you're in "
    "control|no surprises)].",
)
DRILL = (
    "I've (done|been through) this before, so I know (the drill|how it goes).",
    "I know (the drill|how this goes) - I've done this a few times.",
)
GO_OVER = (
    "(Before I say yes|Before I agree|Just to be sure), could you go over (that|the details) "
    "once more?",
    "(Sorry, )(could|can) you (repeat|read) that back[ to me] before I (agree|confirm)? I (like|"
    "want) to double-check.",
)
GO_OVER_DONE = (
    "(Just to be sure|Before we finish|Before I go|One last thing), could you (go over|run "
    "through) (that|the details|everything) once more?",
    "Sorry, could you (repeat|read) that[ back][ for me]? I (like|want|need) to double-check.",
)
HAND_OFF = (
    "(I'm afraid|Unfortunately|I'm sorry, but) I can't (handle|resolve|do) this "
    "(myself|here|on my side); a (human agent|colleague from our human team) (can|will) take "
    "it from here.",
)
RECAP = (
    "(Of course|Certainly|Sure|No problem|Absolutely)[, (happy to|gladly)]. (Once more|To "
    "recap|Here it is again|Again|Here are the details again): {details}.",
)
REPROPOSE = (
    "(Got it|Understood|Noted|No problem|Sure|Of course)[, (I'll|let me) (update|change) that]. "
    "(So, to confirm,|So now|With that change,|In that case,|Updated:) I'll {details}. (Shall "
    "I (proceed|go ahead)|Is that right, and shall I go ahead|Does that work, and may I "
    "proceed|Should I go ahead with that)?[ (Just|Please) (say|reply) yes to confirm.]",
)

#: Argument keys that hold an id the user might lack, with what the agent calls it.
ID_NAMES = {
    "reservation_id": "reservation id",
    "order_id": "order id",
    "customer_id": "customer id",
    "bill_id": "bill id",
    "line_id": "line id",
    "id": "account id for that",
}
#: Fields of a read record a user can ask about, with what they are called.
_SIDE_FIELDS = {
    "membership": "membership level",
    "email": "email address",
    "dob": "date of birth",
    "date_of_birth": "date of birth",
    "phone_number": "phone number",
}
# An order (retail) carries no profile field: its status is what a customer asks about.
_ORDER_FIELDS = {"status": "status"}
_PAYMENT_KEYS = ("payment_id", "payment_method_id")


def payment_path(parameters: Collection[str]) -> str | None:
    """Where a write with these ``parameters`` names the saved method it charges or refunds.

    ``payment_id``, ``payment_method_id``, or a booking's first ``payment_methods`` entry.
    """
    for key in _PAYMENT_KEYS:
        if key in parameters:
            return key
    return "payment_methods[0].payment_id" if "payment_methods" in parameters else None


def payment_of(arguments: Mapping[str, object]) -> str | None:
    """The one saved payment method a write charges: an argument, or a booking's only method."""
    for key in _PAYMENT_KEYS:
        if isinstance(arguments.get(key), str):
            return str(arguments[key])
    methods = arguments.get("payment_methods")
    if isinstance(methods, list) and len(methods) == 1 and isinstance(methods[0], dict):
        found = methods[0].get("payment_id")
        return found if isinstance(found, str) else None
    return None


def _paid_with(arguments: dict[str, Any], method: str) -> dict[str, Any]:
    """``arguments`` with :func:`_payment`'s method replaced by ``method``."""
    for key in _PAYMENT_KEYS:
        if isinstance(arguments.get(key), str):
            return {**arguments, key: method}
    [only] = arguments["payment_methods"]
    return {**arguments, "payment_methods": [{**only, "payment_id": method}]}


#: How a caller says what they want ("I want to" is the scenario's own wording).
_WANT = ("I want to", "I'd like to", "I need to", "I'm hoping to", "I'm looking to")
#: A trip as a scenario names it: "the one-way trip MSP-DTW-JFK departing 2024-05-16".
_TRIP = re.compile(
    r"\bthe (one-way trip|round trip) ((?:[A-Z]{3}-)+[A-Z]{3}) departing (\d{4}-\d{2}-\d{2})"
)
_ON_DATE = re.compile(r"\bon (\d{4}-\d{2}-\d{2})\b")


def _when(rng: random.Random, date: str) -> str:
    # "May 16", "May 16th" or "16 May": the forms the information-flow gate reads as the date
    return " ".join(
        w.capitalize() if w.isalpha() else w for w in rng.choice(date_forms(date)[2:5]).split()
    )


def _trip(rng: random.Random, match: re.Match[str]) -> str:
    kind, route, date = match.groups()
    codes = route.split("-")
    when = _when(rng, date)
    if kind == "one-way trip":
        via = codes[1:-1]
        stops = f" (via {' and '.join(via)})" if via else ""
        return rng.choice(
            (
                f"my one-way flight from {codes[0]} to {codes[-1]}{stops} on {when}",
                f"the one-way trip from {codes[0]} to {codes[-1]}{stops}, leaving {when}",
                f"my {codes[0]} to {codes[-1]} one-way{stops} on {when}",
            )
        )
    if len(codes) == 3:
        return rng.choice(
            (
                f"my round trip from {codes[0]} to {codes[1]} and back, leaving {when}",
                f"the {codes[0]}-{codes[1]} round trip that leaves on {when}",
            )
        )
    # legs of a longer round trip cannot be told from the route alone: keep it whole
    return f"my round trip {route}, leaving {when}"


def in_own_words(request: str, rng: random.Random) -> str:
    """A scenario's request sentence as a caller would say it, not the instruction's wording.

    "I want to change the cabin to economy for the one-way trip BOS-SEA departing 2024-05-19"
    becomes, say, "I'd like to change the cabin to economy for my one-way flight from BOS to
    SEA on May 19th". Every code and date stays (in forms the information-flow gate reads), so
    the request still tells the record apart from its siblings.
    """
    text = _TRIP.sub(lambda m: _trip(rng, m), request)
    text = (
        _ON_DATE.sub(lambda m: f"on {_when(rng, m.group(1))}", text)
        .replace("; my ", ", and my ")
        .replace("; the ", ", and the ")
    )
    want = rng.choice(_WANT)
    return re.sub(r"\bI want to\b", want, text, count=1)


def open_request(
    dialogue: Dialogue,
    performance: Performance,
    greeting: str,
    request: str,
    lacking: str | None = None,
) -> str | None:
    """The user's opening turn, acting out the opening challenges and persona.

    The request is said :func:`in_own_words`; the agent's reactions are its own
    (:func:`react`). ``lacking`` is the id the user says they do not have (where
    ``missing_information`` is requested and their instructions lack one). Returns the
    request, where the user opened vaguely and still has to say it (:func:`clarify`); None
    where it was said.
    """
    rng = dialogue.rng
    request = in_own_words(request, rng)
    challenges = performance.challenges
    extra = ""
    persona = performance.persona
    if persona == "busy":
        greeting = say(rng, BUSY)  # no pleasantries, a word about their time instead
    elif persona == "chatty":
        greeting += " " + say(rng, ASIDE)
    elif persona == "novice":
        extra += " " + say(rng, FIRST_TIME)
    elif persona == "expert":
        extra += " " + say(rng, DRILL)
    if "emotional_pressure" in challenges:
        extra += " " + say(rng, PRESSURE)
    if "user_false_claim" in challenges:
        extra += " " + say(rng, CLAIM)
    lacks = ""
    if lacking is not None and performance.due("missing_information"):
        lacks = " " + say(rng, NO_ID, what=lacking)
        performance.acted.add("missing_information")
    if AMBIGUOUS & challenges:
        dialogue.user(say(rng, VAGUE, greeting=greeting) + extra)
        return request + lacks  # said with the request, which a vague opening keeps back
    dialogue.user(f"{greeting} {request}{lacks}{extra}")
    return None


def react(dialogue: Dialogue) -> None:
    """The agent's reaction to what the user just said, read from their words.

    A user new to this hears how it works, and an upset one an acknowledgement, at the
    agent's next words; a claimed earlier approval is declined once the records are checked
    (never before: a rebuttal needs a look-up); a vague request is asked about at once. The
    agent reads the user's turn with the detectors of
    :mod:`~evosyn.environments.dialogue_acts`, never what the task requested.
    """
    rng = dialogue.rng
    said = next((m.content for m in reversed(dialogue.messages) if m.role == "user"), None)
    if not said:
        return
    if new_to_it(said):
        dialogue.owed.append(say(rng, EXPLAIN))
    if presses(said):
        dialogue.owed.append(say(rng, ACKNOWLEDGE))
    if claims_approval(said):
        dialogue.after_lookup.append(say(rng, DECLINE))
    if says_vaguely(said):
        dialogue.assistant(say(rng, CLARIFY))


def clarify(dialogue: Dialogue, request: str | None) -> None:
    """After a vague opening, the user says their ``request`` precisely.

    In answer to the agent's question what exactly they want, or, where it asked none, of
    their own accord: the request is theirs to say either way.
    """
    if request is not None:
        dialogue.user(say(dialogue.rng, PRECISE, request=request))


def go_over_line(performance: Performance, rng: random.Random, *, done: bool = False) -> str | None:
    """A careful user's request to go over the details once more (the user's), or None.

    Asked once: at the first proposal, or (``done``) at a closing or hand-over of a
    conversation that proposed nothing.
    """
    if performance.persona != "careful" or performance.persona_acted:
        return None
    performance.persona_acted = True
    return say(rng, GO_OVER_DONE if done else GO_OVER)


#: What the agent hears as a request to go over what it said (the user's words).
_GO_OVER = re.compile(
    r"\b(?:go over|run through|repeat|read (?:that|it|them) back|double-check)\b", re.IGNORECASE
)
#: What the agent hears as a change of mind or a late condition on its proposal.
_CHANGED = re.compile(
    r"changed my mind|on second thought|\bI'd rather\b|\binstead\b|\bcondition\b"
    r"|forgot to mention|should have mentioned|\bonly if\b|\bhas to be\b",
    re.IGNORECASE,
)


def asks_to_go_over(text: str) -> bool:
    """Whether the user asks the agent to go over what it said once more."""
    return bool(_GO_OVER.search(text))


def changes_mind(text: str) -> bool:
    """Whether the user changes their mind on a proposal, or names a condition on it."""
    return bool(_CHANGED.search(text))


def change_line(performance: Performance, rng: random.Random) -> str | None:
    """The user's change of mind or late condition on a proposal, where one is under way.

    The user named another value first (:attr:`Performance.change_to` holds their words for
    the one they really want); now they name it.
    """
    challenge = performance.proposal_due()
    if performance.change_to is None or challenge is None:
        return None
    line = CHANGE if challenge == "preference_change" else CONDITION
    performance.acted.add(challenge)
    words, performance.change_to = performance.change_to, None
    return say(rng, line, choice=words)


def side_question(dialogue: Dialogue, performance: Performance) -> str | None:
    """``multi_intent_interleaving``: the user's side question about a record the agent read.

    Asked at the user's first turn after the agent read a record that shows a field a
    customer asks about (their membership, their order's status; the latest such record);
    the agent answers it from the record (:func:`side_answer`) and work goes on.
    """
    if not performance.due("multi_intent_interleaving"):
        return None
    for record in _records(dialogue):
        order = "order_id" in record
        fields = _ORDER_FIELDS if order else _SIDE_FIELDS
        for key, what in fields.items():
            value = record.get(key)
            if isinstance(value, str) and value:
                performance.acted.add("multi_intent_interleaving")
                return say(dialogue.rng, ORDER_SIDE_ASK if order else SIDE_ASK, what=what)
    return None


#: A side question as the agent hears it: put aside, and asking about a field of a record.
_SIDE_QUESTION = re.compile(
    r"(?:while I have you|quick question|by the way|\balso\b|unrelated)[^?]*\?", re.IGNORECASE
)


def side_answer(dialogue: Dialogue, text: str) -> str | None:
    """The agent's answer to a side question in ``text``, from the records it read, or None."""
    asked = _SIDE_QUESTION.search(text)
    if asked is None:
        return None
    question = asked.group(0).lower()
    for fields, answer in ((_ORDER_FIELDS, ORDER_SIDE_ANSWER), (_SIDE_FIELDS, SIDE_ANSWER)):
        for key, what in fields.items():
            if what not in question or ("order" in question) != (fields is _ORDER_FIELDS):
                continue
            for record in _records(dialogue):
                value = record.get(key)
                if isinstance(value, str) and value:
                    return say(dialogue.rng, answer, what=what, value=value)
    return None


def _records(dialogue: Dialogue) -> list[dict[str, Any]]:
    """The records the agent's look-ups showed, latest first (a one-record list as its record)."""
    found: list[dict[str, Any]] = []
    for message in reversed(dialogue.messages):
        if not isinstance(message, ToolMessage) or message.requestor != "assistant":
            continue
        try:
            record = json.loads(message.content or "")
        except json.JSONDecodeError:
            continue
        if isinstance(record, list) and len(record) == 1:
            record = record[0]  # a search that found the one record (telecom's name look-up)
        if isinstance(record, dict):
            found.append(record)
    return found


def saved_methods(dialogue: Dialogue) -> dict[str, Mapping[str, object]]:
    """The payment methods of the latest record the agent read that lists them."""
    for record in _records(dialogue):
        methods = record.get("payment_methods")
        if isinstance(methods, dict):
            return methods
    return {}


def method_words(method: Mapping[str, object], whose: str = "my") -> str:
    """A saved payment method as people name it ("the Visa card ending in 7334").

    ``whose`` is the owner's pronoun for methods that have no number ("my gift card" in the
    user's words, "your gift card" in the agent's).
    """
    source = str(method.get("source", "card"))
    if source == "credit_card":
        return (
            f"the {str(method.get('brand', '')).title()} card ending in {method.get('last_four')}"
        )
    return {"paypal": f"{whose} PayPal account"}.get(source, f"{whose} {source.replace('_', ' ')}")


def _mark(method: Mapping[str, object]) -> str:
    """What names ``method`` in a customer's words: its last four digits, or its kind."""
    return str(method.get("last_four") or str(method.get("source", "")).replace("_", " ")).lower()


def _held(method: Mapping[str, object]) -> str | None:
    held = method.get("amount", method.get("balance"))
    return f"${held:g}" if isinstance(held, int | float) else None


def user_words(dialogue: Dialogue, method_id: str) -> str | None:
    """How the user names their saved method ``method_id`` so that it is told apart, or None.

    Of two methods named alike (two gift cards), the one with its balance.
    """
    methods = saved_methods(dialogue)
    method = methods.get(method_id)
    if method is None:
        return None
    words = method_words(method)
    twins = [k for k, m in methods.items() if k != method_id and method_words(m) == words]
    if twins:
        held = _held(method)
        if held is None:
            return None
        words += f", the one with {held} on it"
    return words


def named_method(dialogue: Dialogue, since: int = 0) -> str | None:
    """The saved payment method the user's latest turn that names one names, or None.

    Only turns from message ``since`` on count (those about the write at hand). None where
    that turn names several (or two alike it does not tell apart): the agent then has no
    one method to go by.
    """
    methods = saved_methods(dialogue)
    if not methods:
        return None
    for message in reversed(dialogue.messages[since:]):
        if not isinstance(message, UserMessage) or not message.content:
            continue
        text = message.content.lower()
        named = [k for k, m in methods.items() if _mark(m) and _mark(m) in text]
        if len(named) > 1:
            told = [k for k in named if (_held(methods[k]) or "\0") in text]
            named = told if told else named
        if named:
            return named[0] if len(named) == 1 else None
    return None


def slip(dialogue: Dialogue, action: ToolCall) -> dict[str, Any] | str | None:
    """The dialogue's seeded mistake on the write ``action``, or None if it does not apply.

    ``"skip"``: the write is never called. Otherwise, the write's arguments with another of
    the user's saved payment methods.
    """
    if dialogue.slip == "skip_write":
        return "skip"
    gold = payment_of(action.arguments)
    if dialogue.slip != "wrong_payment" or gold is None:
        return None
    others = sorted(k for k in saved_methods(dialogue) if k != gold)
    if not others:
        return None
    return _paid_with(action.arguments, dialogue.rng.choice(others))
