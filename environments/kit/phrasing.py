"""Templated wording for synthesized airline tasks and their teacher conversations.

Every move of a conversation (greeting, asking for an id, confirming, closing...) and every
interaction challenge of a user scenario has several phrasings; a seeded random generator
picks one, so equal seeds give equal text and different seeds vary the wording.
"""

from __future__ import annotations

import hashlib
import random

from evosyn.environments.kit.grammar import say

PERSONAS: tuple[str, ...] = (
    "You are polite and to the point; you answer questions briefly.",
    "You are a busy professional who wants this sorted quickly and dislikes small talk.",
    "You are friendly and chatty, but you give the details when asked.",
    "You are careful and like to double-check details before agreeing to anything.",
    "You are a first-time caller, a little unsure how the process works.",
    "You are a frequent traveller who knows airline procedures well.",
)

CHALLENGES: dict[str, tuple[str, ...]] = {
    "missing_information": (
        "You do not remember your reservation id; describe the trip by its route and date "
        "when asked, and let the agent look it up.",
        "You have lost your booking confirmation and do not know the reservation id; the agent "
        "has to find it from your profile.",
    ),
    "ambiguous_preference": (
        "Start vague about what you want (say you want 'to sort out' your trip) and only state "
        "the exact request once the agent asks.",
        "Describe your wish loosely at first; give the precise details only when the agent asks "
        "a clarifying question.",
    ),
    "user_false_claim": (
        "Early on, claim that another agent already approved your request; if the agent checks "
        "and the facts say otherwise, accept the facts.",
        "Insist at first that you were promised this by phone; drop the claim if the agent "
        "explains what the records show.",
    ),
    "preference_change": (
        "Open with a slightly different request, then change your mind and settle on the "
        "request described here.",
        "Hesitate at first and mention an alternative you are considering, then decide on the "
        "request described here.",
    ),
    "emotional_pressure": (
        "You are stressed and frustrated; press the agent to hurry and stress how much this "
        "matters to you.",
        "You are upset about the situation and say so; push the agent to make an exception.",
    ),
    "multi_intent_interleaving": (
        "Mix in a side question about your account while the main request is being handled.",
        "Interrupt once with an unrelated question about your profile, then return to the main "
        "request.",
    ),
    "constraint_hidden_until_late": (
        "Reveal your payment preference only when the agent is about to act.",
        "Hold back one of your conditions until the agent lists the final details.",
    ),
}

# Templates of the phrase grammar (environments/kit/grammar.py): (a|b) picks, [x] may drop.
GREETINGS: tuple[str, ...] = (
    "(Hi|Hello|Hey there|Good (morning|afternoon|evening))[,] I (need|could use|'d like) "
    "[some ]help with (my trip|a booking|my flights|a reservation|my reservation).",
    "(Hi|Hello)[ there], I'm (calling|writing|getting in touch) about (a|my) "
    "(reservation|booking|flight)[, if you have a moment].",
    "(Good (morning|afternoon)|Hi), could you help me with (an airline matter|my booking|a "
    "reservation|my travel plans)?",
    "(Hi|Hello)! I have a (question|request) about my (flights|trip|booking).",
)

ASK_USER_ID: tuple[str, ...] = (
    "I'd be glad to help. Could you give me your user id first?",
    "Sure. To start, may I have your user id?",
    "Happy to help with that. What is your user id, please?",
)

GIVE_USER_ID: tuple[str, ...] = (
    "(Sure|Of course|Certainly|Yes), (it's|my user id is|you'll find me under) {user_id}"
    "[, thanks].",
    "(It's|My user id is|That's|I'm) {user_id}[, thank you].",
    "{user_id}(| is my user id)[, thanks].",
)

ASK_RESERVATION: tuple[str, ...] = (
    "Thanks. Which reservation is this about? The reservation id would help.",
    "Thank you. Could you tell me the reservation id?",
    "Got it. Which reservation do you mean?",
)

GIVE_RESERVATION: tuple[str, ...] = (
    "(Sure|Yes|Of course), it's [reservation ]{reservation_id}.",
    "(It's|That's|That would be) [reservation ]{reservation_id}[, thanks].",
    "The (reservation|booking) (id|code|number) is {reservation_id}.",
    "I have it here: {reservation_id}.",
)

UNKNOWN_RESERVATION: tuple[str, ...] = (
    "(I don't have|I'm afraid I don't have|Sorry, I don't have) the (reservation|booking) "
    "(id|number|code) (at hand|with me|on me)[, sorry].",
    "(I'm afraid|Unfortunately|Honestly,) I don't remember the (reservation|booking) "
    "(number|id|code).",
    "I (lost|can't find|deleted) the confirmation (email|message), so I don't have the "
    "(reservation|booking) (id|code).",
)

LOOKING_UP: tuple[str, ...] = (
    "No problem, I'll look through the reservations on your profile.",
    "That's fine; let me check the reservations in your profile.",
)

ASK_TRIP: tuple[str, ...] = (
    "Which route and date are you looking for?",
    "Where would you like to fly from and to, and on which date?",
)

GIVE_TRIP: tuple[str, ...] = (
    "From {origin} to {destination} on {date}[, please].",
    "I'd (fly|like to fly|be flying|want to go) [from ]{origin} to {destination}[,] on {date}.",
    "(The route is|It's|That's) {origin} to {destination}, (on|departing on|leaving on) {date}.",
    "(I need to get|I'm going) from {origin} to {destination} on {date}.",
)

ASK_CONFIRM: tuple[str, ...] = (
    "Here is what I will do: {details}. Shall I go ahead, yes or no?",
    "To confirm, I'm about to: {details}. Do you want me to proceed?",
    "Before I make this change: {details}. Please confirm with a yes.",
)

# Every confirmation opens with "Yes": the policies ask for an explicit yes before a write.
CONFIRM: tuple[str, ...] = (
    "(Yes|Yes, please|Yes, that's right|Yes, correct|Yes indeed|Yes, all correct|Yes, sounds "
    "good|Yes, that looks right)[, (please go ahead|go ahead|please proceed|you can proceed|do "
    "it|go for it)][(, thanks|, thank you)].",
    "Yes, (that works[ for me]|that's fine[ by me]|that's what I want|that suits me|that's "
    "perfect|that's exactly it|that all checks out|that matches what I need)[; (please|go ahead "
    "and) (proceed|do it|make the change|go through with it)].",
    "Yes( -|,) (I (confirm|agree)|I'm happy with that|you have my go-ahead|that's a yes from "
    "me)[(, thanks|, thank you|, please go ahead)].",
)

DONE: tuple[str, ...] = (
    "All done: {summary}.",
    "That's taken care of: {summary}.",
    "Completed: {summary}.",
)

REFUSE: tuple[str, ...] = (
    "I'm sorry, but I can't do that: {reason}.",
    "Unfortunately policy doesn't allow this: {reason}.",
    "I checked, and I'm unable to help with that request: {reason}.",
)

INFORM: tuple[str, ...] = (
    "Here is what I found: {summary}.",
    "According to your records: {summary}.",
)

ANYTHING_ELSE: tuple[str, ...] = (
    "Is there anything else I can help you with?",
    "Can I help with anything else today?",
)

GOODBYE: tuple[str, ...] = (
    "(No|Nope|No, thanks), that's (all|everything|it)[ for (now|today)](.|, thank you.|, "
    "thanks.|. Thanks (a lot|for your help|so much).) ###STOP###",
    "(Great|Perfect|Wonderful|Excellent|Lovely), thanks for (your|the) help[ today]. ###STOP###",
    "(That's everything|That's all I needed|Nothing else|That covers it|That's all I wanted)"
    "[(, thank you|, thanks)[ so much]]. ###STOP###",
)


def money(amount: float | int) -> str:
    """An amount as a customer reads it: "$92", "$53.53", "$11.30" (never "$11.3")."""
    value = round(float(amount), 2)
    # No thousands separator: τ²-bench removes commas before matching, and "$1102" reads fine.
    return f"${value:.0f}" if value.is_integer() else f"${value:.2f}"


def count(n: int, singular: str, plural: str) -> str:
    """``n`` things in words that agree with it ("1 checked bag", "2 checked bags")."""
    return f"{n} {singular if n == 1 else plural}"


def seeded(seed: int, *parts: object) -> random.Random:
    """A random generator fixed by ``seed`` and ``parts`` (stable across processes)."""
    digest = hashlib.sha256(repr((seed, *parts)).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def pick(rng: random.Random, options: tuple[str, ...], **values: object) -> str:
    """One of ``options`` chosen by ``rng`` and worded by the phrase grammar, with ``values``."""
    return say(rng, options, **values)
