"""The programmatic user and agent act out the interaction challenges a task requests.

Every challenge is performed at a fixed point of the dialogue, in words the detectors of
:mod:`evosyn.environments.dialogue_acts` recognise and a reader would too:

* the opening (:func:`open_request`, the user's; :func:`react`, the agent's, read from the
  user's words alone): a vague first request the agent asks about (``ambiguous_*``), pressure
  the agent acknowledges (``emotional_pressure``), a claimed prior approval the agent
  declines to rely on once it has checked the records (``user_false_claim``);
* a look-up (:func:`before_call`, :func:`after_call`): the agent asks for an id the user has
  not said, the user (answering from their instructions) does not have it and the agent finds
  it (``missing_information``); a side question about the user's own record,
  answered from what the agent just read, before work goes on (``multi_intent_interleaving``);
* a proposal (:func:`propose`): the agent first proposes another value, one policy allows, of
  the detail the user left open (by default the saved payment method; a domain may name its
  own, such as an amount), the user changes their mind or names a late condition, and the
  agent proposes the write the user asked for (``preference_change``,
  ``constraint_hidden_until_late``).

The user also acts out the task's persona (its kind per
:func:`~evosyn.environments.dialogue_acts.persona_kind`), in words
:func:`~evosyn.environments.dialogue_acts.realized_personas` recognises: a busy user opens
with no pleasantries but a word about their time and answers tersely, a chatty one adds a
friendly aside, a first-time caller asks how it works and the agent explains (on reading
it, :func:`react`), an expert says they know how it goes (all in :func:`open_request`); a
careful one asks the agent to go over the details once more before saying yes
(:func:`double_check`).

A challenge the task gives no occasion for is not faked: it stays unperformed, the detector
says so, and synthesis rejects the task with that reason.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from tau2.data_model.message import ToolCall, ToolMessage, UserMessage

from evosyn.environments.base import FunctionalSymbol
from evosyn.environments.dialogue_acts import (
    claims_approval,
    new_to_it,
    presses,
    says_missing,
    says_vaguely,
)
from evosyn.environments.information_flow import date_forms
from evosyn.environments.kit.grammar import say

if TYPE_CHECKING:
    from evosyn.environments.kit.dialogue import Dialogue

AMBIGUOUS = frozenset({"ambiguous_preference", "ambiguous_request"})
#: Challenges acted out at a write's proposal (:func:`propose`).
PROPOSALS = ("preference_change", "constraint_hidden_until_late")

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
ASK_ID = (
    "[(Thanks|OK|Alright|Great). ](Do you (have|happen to have)|Would you have) the {what} "
    "(handy|with you|to hand|nearby)[ by any chance]?",
    "[(Thanks|OK|Alright|Great). ](Could|Can) you (give me|share|read me|tell me) the {what}"
    "[(, if you have it|, please)]?",
    "[(Thanks|OK|Alright|Great). ](What's|What is) the {what}[, if you have it]?[ (That|It) "
    "(makes it quicker to find|helps me find it faster).]",
)
NO_ID = (
    "(Sorry|Hmm|Oh), I (don't have|can't find|don't remember) the {what}. (Can|Could) you "
    "(look it up|find it)[ (for me|on your side)]?",
    "I've (lost|deleted|misplaced) the confirmation, so I don't (have|know) the {what}[, sorry].",
    "(Unfortunately|I'm afraid) I (don't have|don't know) the {what}(.|; can you find it?)",
)
FOUND = (
    "(Thanks|Thank you|OK|Alright|Right)[ for waiting], I (have|found|can see) your "
    "(details|records|account)[ (here|now)].",
    "(OK|Alright|Great|Right), I've (pulled up|found|got|opened) your (records|account|details)"
    "[ (here|now)].",
    "(Here we are|There we go|Got it)(:|,| -) I (have|can see) your (records|account|details)"
    "[ (open|up) now].",
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
FIRST_PROPOSAL = (
    "(Here is what I'll do|Here's what I can do|To confirm|Here's the plan|So, to confirm)(:| -) "
    "{details}. ((Shall|Should) I go ahead|Is that OK|Does that work for you|Would you like me "
    "to proceed)?[ (A yes is all I need|Just say yes to confirm).]",
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


def open_request(dialogue: Dialogue, greeting: str, request: str) -> str | None:
    """The user's opening turn, acting out the opening challenges and persona.

    The request is said :func:`in_own_words`; the agent's reactions are its own
    (:func:`react`). Returns the request, where the user opened vaguely and still has to say
    it (:func:`clarify`); None where it was said.
    """
    rng = dialogue.rng
    request = in_own_words(request, rng)
    challenges = dialogue.challenges
    extra = ""
    persona = dialogue.persona
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
    if AMBIGUOUS & challenges:
        dialogue.user(say(rng, VAGUE, greeting=greeting) + extra)
        return request
    dialogue.user(f"{greeting} {request}{extra}")
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


def double_check(dialogue: Dialogue, details: str, *, done: bool = False) -> None:
    """A careful user asks the agent to go over ``details`` once more; the agent does.

    Acted once: at the first write's confirmation, or (``done``) at the closing of a
    conversation that confirmed nothing.
    """
    if dialogue.persona != "careful" or dialogue.persona_acted:
        return
    dialogue.user(say(dialogue.rng, GO_OVER_DONE if done else GO_OVER))
    recap = say(dialogue.rng, RECAP, details=details)
    dialogue.assistant(recap if done else f"{recap} Shall I go ahead?")
    dialogue.persona_acted = True


def before_call(
    dialogue: Dialogue,
    call: ToolCall,
    symbol: FunctionalSymbol | None,
    answer: Callable[[str], None],
) -> None:
    """``missing_information``: the agent asks for an id the user has not said, then looks it up.

    ``answer`` has the user reply to the question for an argument (from what their
    instructions give: the id, or that they do not have it). Before a transfer, a careful user
    who has not double-checked yet hears why and asks the agent to go over it once more (a
    transfer closes the conversation).
    """
    careful = dialogue.persona == "careful" and not dialogue.persona_acted
    if symbol == FunctionalSymbol.TRANSFER and careful:
        dialogue.assistant(say(dialogue.rng, HAND_OFF))
        double_check(dialogue, "this needs a human agent, so I'll transfer you", done=True)
    if (
        "missing_information" not in dialogue.challenges
        or "missing_information" in dialogue.acted
        or call.requestor != "assistant"
        or symbol != FunctionalSymbol.READ
    ):
        return
    last_user = next((m.content for m in reversed(dialogue.messages) if m.role == "user"), None)
    if last_user and says_missing(last_user):
        dialogue.acted.add("missing_information")  # the domain's own script already asked
        return
    said = " ".join(m.content or "" for m in dialogue.messages if m.role == "user")
    for key, what in ID_NAMES.items():
        value = call.arguments.get(key)
        if isinstance(value, str) and value not in said:
            # The agent's next move is the look-up itself (τ²-bench: one agent turn at a time).
            dialogue.assistant(say(dialogue.rng, ASK_ID, what=what))
            answer(key)
            reply = dialogue.messages[-1].content if dialogue.messages else None
            if reply and says_missing(reply):
                dialogue.acted.add("missing_information")
            return


def after_call(dialogue: Dialogue, call: ToolCall, symbol: FunctionalSymbol | None) -> None:
    """``multi_intent_interleaving``: a side question answered from the record just read."""
    if (
        "multi_intent_interleaving" not in dialogue.challenges
        or "multi_intent_interleaving" in dialogue.acted
        or symbol != FunctionalSymbol.READ
    ):
        return
    record = _observation(dialogue)
    if isinstance(record, list) and len(record) == 1:
        record = record[0]  # a search that found the one record (telecom's name look-up)
    if not isinstance(record, dict):
        return
    order = "order_id" in record
    fields = _ORDER_FIELDS if order else _SIDE_FIELDS
    ask, answer = (ORDER_SIDE_ASK, ORDER_SIDE_ANSWER) if order else (SIDE_ASK, SIDE_ANSWER)
    for key, what in fields.items():
        value = record.get(key)
        if isinstance(value, str) and value:
            # After a tool result the agent speaks first; the user interrupts its update.
            dialogue.assistant(say(dialogue.rng, FOUND))
            dialogue.user(say(dialogue.rng, ask, what=what))
            dialogue.assistant(say(dialogue.rng, answer, what=what, value=value))
            dialogue.acted.add("multi_intent_interleaving")
            return


def _observation(dialogue: Dialogue) -> object:
    last = dialogue.messages[-1] if dialogue.messages else None
    if not isinstance(last, ToolMessage) or not last.content:
        return None
    try:
        return json.loads(last.content)
    except json.JSONDecodeError:
        return None


def _saved_methods(dialogue: Dialogue) -> dict[str, Mapping[str, object]]:
    """The payment methods of the latest record read that lists them."""
    for message in reversed(dialogue.messages):
        if (
            isinstance(message, ToolMessage)
            and message.content
            and "payment_methods" in message.content
        ):
            try:
                record = json.loads(message.content)
            except json.JSONDecodeError:
                continue
            methods = record.get("payment_methods") if isinstance(record, dict) else None
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


def _user_named(dialogue: Dialogue, method: Mapping[str, object]) -> bool:
    """Whether the user already named ``method`` (its last four digits, or its kind)."""
    mark = str(method.get("last_four") or str(method.get("source", "")).replace("_", " "))
    return any(
        isinstance(m, UserMessage) and m.content and mark.lower() in m.content.lower()
        for m in dialogue.messages
    )


class Alternative(NamedTuple):
    """A first proposal on a detail the user left open, and how the user names the gold value."""

    #: The write's details with another value of the open detail.
    first: str
    #: The user's words for the value they want ("the Visa card ending in 7334").
    words: str


def payment_alternative(
    dialogue: Dialogue,
    action: ToolCall,
    details: str,
    allowed: Callable[[Mapping[str, object]], bool] | None = None,
) -> Alternative | None:
    """A first proposal with another saved payment method, or None if there is none to offer.

    Only a detail the user left open is varied: the payment method, when the user has another
    saved one and has not named the gold one yet. Proposing another reservation, order, line
    or bill than the one the user came about, and having them name it, is a correction that
    would teach the agent to get it wrong, not a change of mind. ``allowed`` (the write's
    arguments with the other method) keeps the first proposal within policy, e.g. a refund
    only to the original method or a gift card.
    """
    gold = payment_of(action.arguments)
    methods = _saved_methods(dialogue)
    gold_method = methods.get(gold) if gold is not None else None
    if gold_method is None or _user_named(dialogue, gold_method):
        return None
    named = method_words(gold_method, "your")
    if named not in details:
        return None
    others = sorted(
        k
        for k, m in methods.items()
        if k != gold
        and method_words(m) != method_words(gold_method)
        and (allowed is None or allowed(_paid_with(action.arguments, k)))
    )
    if not others:
        return None
    other = dialogue.rng.choice(others)
    words = method_words(gold_method)
    held = gold_method.get("amount", gold_method.get("balance"))
    twins = [k for k, m in methods.items() if k != gold and method_words(m) == words]
    if twins and isinstance(held, int | float):
        words += f", the one with ${held:g} on it"  # of two gift cards, the one they mean
    return Alternative(details.replace(named, method_words(methods[other], "your")), words)


def propose(
    dialogue: Dialogue,
    action: ToolCall,
    details: str,
    alternative: Callable[[], Alternative | None] | None = None,
) -> str | None:
    """A first proposal the user then changes; returns the proposal of the gold ``details``.

    ``alternative`` makes the first proposal (default: :func:`payment_alternative`); it is
    asked only when a challenge is due. Returns None (nothing performed) when neither
    ``preference_change`` nor ``constraint_hidden_until_late`` is due or the write has
    nothing to vary.
    """
    due = [c for c in PROPOSALS if c in dialogue.challenges and c not in dialogue.acted]
    if not due:
        return None
    offer = alternative or (lambda: payment_alternative(dialogue, action, details))
    found = offer()
    if found is None:
        return None
    dialogue.assistant(say(dialogue.rng, FIRST_PROPOSAL, details=found.first))
    challenge = due[0]
    line = CHANGE if challenge == "preference_change" else CONDITION
    dialogue.user(say(dialogue.rng, line, choice=found.words))
    dialogue.acted.add(challenge)
    return say(dialogue.rng, REPROPOSE, details=details)


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
    others = sorted(k for k in _saved_methods(dialogue) if k != gold)
    if not others:
        return None
    return _paid_with(action.arguments, dialogue.rng.choice(others))
