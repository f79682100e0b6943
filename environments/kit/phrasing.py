"""Templated wording for synthesized airline tasks and their teacher conversations.

Every move of a conversation (greeting, asking for an id, confirming, closing...) and every
interaction challenge of a user scenario has several phrasings; a seeded random generator
picks one, so equal seeds give equal text and different seeds vary the wording.
"""

from __future__ import annotations

import hashlib
import random
import re

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
# The agent's stock turns combine independent slots (an opener, the question, a reason for
# asking, a closing word), so that the same move is rarely worded the same way twice.

GREETINGS: tuple[str, ...] = (
    "(Hi|Hello|Hey there|Good (morning|afternoon|evening))[,] I( need| could use|'d like) "
    "[some ]help with (my trip|a booking|my flights|a reservation|my reservation).",
    "(Hi|Hello)[ there], I'm (calling|writing|getting in touch) about (a|my) "
    "(reservation|booking|flight)[, if you have a moment].",
    "(Good (morning|afternoon)|Hi), could you help me with (an airline matter|my booking|a "
    "reservation|my travel plans)?",
    "(Hi|Hello)! I have a (question|request) about my (flights|trip|booking).",
)

#: How an agent takes up a request (a sentence of its own, before the first question).
AGENT_OPENER = (
    "(Sure|Certainly|Of course|Absolutely|No problem|Happy to help|I'd be glad to help|I can "
    "help with that|I can certainly help|Let's (take a look|sort this out|get started)|I'll "
    "(gladly help|look into this for you|be happy to help)|I can look into that[ for you])"
)
#: How an agent acknowledges what the user just gave.
AGENT_THANKS = (
    "(Thanks|Thank you|Thanks for that|Thank you for that|Great|Perfect|Alright|OK|Got it"
    "|Understood|Noted|Great, thanks|Perfect, thank you|OK, thanks)"
)

# Shared with every programmatic teacher (no airline words): the user id first.
ASK_USER_ID: tuple[str, ...] = (
    f"[{AGENT_OPENER}. ](To (start|begin|get started)|First|First of all|Before anything else"
    "|Before we go any further|So I can (find|pull up|look up|locate) your (profile|account)"
    "|So I can (check|see) your (details|records)), (could|can|would) you [please ](give me"
    "|tell me|share|provide|confirm) your user id?",
    f"[{AGENT_OPENER}. ](What is|What's|Could I have|May I have|Can I get|Could you give me)"
    " your user id[, please]? (I'll|I need it to|That lets me|I'll use it to|It helps me) "
    "(pull up|look up|find|bring up) your (profile|account|details|records)"
    "[ (first|before anything else|and go from there)].",
    f"[{AGENT_OPENER}. ]I'll (need|just need|first need) your user id (to (start|get "
    "started|pull up your profile|find your account|look up your details)|before I can (look "
    "into|check|help with) (this|that|anything))(. What is it?|; could you share it?"
    "|. Could you share it, please?|, if you don't mind sharing it.)",
    f"[{AGENT_OPENER}. ](Let me|I'll) (pull up|find|look up|bring up) your (profile|account|"
    "details)[ first]. (What's|What is|Could you tell me|Could you give me|Can you share) your "
    "user id[, please]?",
)

GIVE_USER_ID: tuple[str, ...] = (
    "(Sure|Of course|Certainly|Yes|OK|Sure thing|No problem)(,|.|!) (it's|my user id is|you'll "
    "find me under|I'm under|the user id is|it should be) {user_id}(, thanks.|, thank you.|.)",
    "(It's|My user id is|That's|I'm|The id is|My id is|That would be) {user_id}[(, thank you"
    "|, thanks| - thanks)].",
    "{user_id}(| is my user id| is my id| is the one)[(, thanks|, thank you)].",
    "(Here you go|Here it is|Let me see|Got it here|I have it)(:|,| -) {user_id}(, thanks.|.)",
    "(My user id|The user id on my account|My id)[ for this] (is|should be) {user_id}[(, I "
    "think|, thanks)].",
)

ASK_RESERVATION: tuple[str, ...] = (
    f"[{AGENT_THANKS}. ](Which|What) reservation (is this about|are we looking at|do you mean|"
    "would you like me to look at|is it|did you have in mind|are you calling about)[(, please| "
    "today)]?[ The reservation id (would help|is all I need|is the quickest way to find "
    "it)[, if you have it].]",
    f"[{AGENT_THANKS}. ](Could|Can|Would) you (tell me|give me|share|read me) the reservation id"
    "[ (this is about|you're calling about|in question|you'd like to change)][, please]?",
    f"[{AGENT_THANKS}. ](What's|What is|Do you have) the reservation id[ (this is about|you're "
    "calling about|for this trip)]?[ (It's|That's) the (six-character code|code) on your "
    "(booking|confirmation)[ (email|message)].]",
    f"[{AGENT_THANKS}. ]Now, which reservation (is this about|should I look at|do you need help "
    "with)? (Do you have|Could you give me|Can you share) the reservation id?",
)

GIVE_RESERVATION: tuple[str, ...] = (
    "(Sure|Yes|Of course|OK|Certainly)(,|.) (it's|that's|the reservation is|it should be) "
    "[reservation ]{reservation_id}[(, thanks|, thank you)].",
    "(It's|That's|That would be|It should be) [reservation ]{reservation_id}[(, thanks|, "
    "thank you| - thanks)].",
    "The (reservation|booking) (id|code|number) is {reservation_id}(, thanks.|.)",
    "(I have it here|Here it is|Got it|Let me look. Here it is|One moment. Here it is)(:| -) "
    "[reservation ]{reservation_id}.",
    "[(Sure|Yes), ]{reservation_id}(| is the reservation| is the booking| is the one)[(, thanks"
    "|, thank you)].",
)

UNKNOWN_RESERVATION: tuple[str, ...] = (
    "(I don't have|I'm afraid I don't have|Sorry, I don't have) the (reservation|booking) "
    "(id|number|code) (at hand|with me|on me)[, sorry].",
    "(I'm afraid|Unfortunately|Honestly,) I don't remember the (reservation|booking) "
    "(number|id|code).",
    "I (lost|can't find|deleted) the confirmation (email|message), so I don't have the "
    "(reservation|booking) (id|code).",
)

ASK_TRIP: tuple[str, ...] = (
    f"[{AGENT_THANKS}. ](Where are you flying from and to|Where would you like to fly from and "
    "to|Which cities are you travelling between|What route do you have in mind|What route are "
    "you looking at|Where are you flying from, and where to), and (on which date|on what date|"
    "when would you like to (fly|travel|leave)|what date works for you|which day suits you)?",
    f"[{AGENT_THANKS}. ](Let me|I'll) (search|look for|check) (flights|available flights|what's "
    "available)[ for you]. (Which route and date are you looking for|What are your origin, "
    "destination and travel date|Where from, where to, and on which date)?",
    f"[{AGENT_THANKS}. ](To (search|look for|find) (flights|options)|So I can search"
    "[ flights]), (could|can) you (tell me|give me) (the route and date you have in "
    "mind|the route and the date|your origin, destination and travel date|where you're flying "
    "from and to, and when)?",
)

ASK_CANCEL_REASON: tuple[str, ...] = (
    f"[{AGENT_THANKS}. ](May I ask|Could you tell me|Can I ask|Would you mind telling me) (why "
    "you('d| would) like to cancel[ (this|the) (trip|reservation|booking)]|the reason for (the|"
    "this) cancellation|why you're cancelling[ (this|the) (trip|reservation|booking)])?[ (It|"
    "The reason) (affects|matters for) what the policy allows.]",
    f"[{AGENT_THANKS}. ](Before I (look at|check) the cancellation|Before we go on), (what's|"
    "what is) the reason (for cancelling|you want to cancel|for the cancellation)[, if you "
    "don't mind my asking]?",
)

GIVE_TRIP: tuple[str, ...] = (
    "From {origin} to {destination} on {date}[(, please|, thanks)].",
    "I('d like to fly| want to fly| want to go| need to fly) [from ]{origin} to "
    "{destination}[,] on {date}.",
    "(The route is|It's|That's) {origin} to {destination}, (on|departing on|leaving on) {date}.",
    "(I need to get|I'm going|I want to get|I'm hoping to get) from {origin} to {destination} "
    "on {date}[(, if possible|, please)].",
    "(Leaving|Flying|Departing) from {origin}, (going|headed|flying) to {destination}, on {date}.",
    "{origin} to {destination}[,] (on|for) {date}[(, please|, thanks)].",
)

#: The question that ends a proposal: it asks for the user's yes before anything changes.
_CONFIRM_QUESTION = (
    "((Shall|Should|Can) I (go ahead|proceed)[ (with (this|that|it)|now)]|(Would you like me|"
    "Do you want me) to (go ahead|proceed)[ (with (this|that|it)|now)]|Is it (OK|okay|alright) "
    "(to proceed|to go ahead|for me to go ahead)|Do I have your (OK|okay)|Is that (right|"
    "correct|what you want), and shall I (go ahead|proceed)|Does that (look right|sound right|"
    "match what you want), and may I (go ahead|proceed))?"
)
#: What asks for the yes in words, after the question or instead of it.
_YES_PLEASE = (
    "(Please (confirm|reply|answer) with a yes[ (if so|if that's right|to go ahead)]|A (clear|"
    "simple|quick) yes (is all I need|will do|and I'll (go ahead|proceed|make the change))|(Just"
    "|Please) (say|reply) yes (if (that's right|so|you agree|it all looks right)|to confirm|and "
    "I'll (go ahead|proceed|take care of it))|I'll (wait for|need) your yes before (I make any "
    "change|anything changes|I go ahead))."
)
ASK_CONFIRM: tuple[str, ...] = (
    "(Here's what I('ll| will) do|Here is (the plan|what I can do|what I have)|So, to confirm|"
    "Just to confirm|To confirm|Let me confirm (the details|what I'll do)|(Let me|I'll) go over "
    "(this|the details|what I'll do)[ first]|This is what I('ll| will| can) "
    "do|Before I make (this|the) change|Before I go ahead|Alright, here's the plan): {details}. "
    f"{_CONFIRM_QUESTION}[ {_YES_PLEASE}]",
    "(I can|I'm able to|I'm ready to|I'll be able to|Everything's in place to) {details}. "
    f"{_CONFIRM_QUESTION}[ {_YES_PLEASE}]",
    "(Here's what I('ll| will) do|Here is the plan|To confirm|Just to confirm|So, to recap|"
    "Before I make (this|the) change|Before I go ahead)(:| -) {details}. (Would you like me to "
    "(go ahead|proceed)|Is that (OK|alright|what you want)|Does that work for you)? (Please "
    "(confirm|reply|answer) with a (yes|clear yes)[ if so]|(Just|Please) (say|reply) yes "
    "(to confirm|if (so|it's right))|I'll (need|wait for) your yes before (anything changes|"
    "I go ahead)).",
)

# Every confirmation opens with "Yes": the policies ask for an explicit yes before a write.
CONFIRM: tuple[str, ...] = (
    "(Yes|Yes, please|Yes, that's right|Yes, correct|Yes indeed|Yes, all correct|Yes, sounds "
    "good|Yes, that looks right|Yes, that's correct|Yes, exactly|Yes, that's it|Yes, that "
    "sounds right)[(, please go ahead|, go ahead|, please proceed|, you can proceed|, go for it"
    "|, go right ahead|. Please go ahead|. Go ahead|. You can go ahead)][(, thanks|, thank you|"
    ". Thanks|. Thank you)].",
    "Yes, (that works[ for me]|that's fine[ by me]|that's what I want|that suits me|that's "
    "perfect|that's exactly it|that all checks out|that matches what I need|that's all "
    "correct|that's good|I'm fine with that|that's what I had in mind)[(; please|; go ahead "
    "and|. Please|. Go ahead and) (proceed|do it|go ahead with it|go through with it)].",
    "Yes( -|,) (I (confirm|agree)|I'm happy with that|you have my go-ahead|that's a yes from "
    "me|go ahead|please do|let's do it|that's fine|I'm on board|I'm okay with that)[(, thanks|"
    ", thank you|, please go ahead|. Please go ahead)].",
)

DONE: tuple[str, ...] = (
    "(All done|Done|That's done|That's all done|That's taken care of|That went through|It's all "
    "set|Everything went through|That's gone through)[ (as agreed|as we discussed|now)](.|!) "
    "(To recap|For your records|In short|Here's a summary|What I did)(:| -) {summary}.",
    "(I've|I have) (completed|processed|taken care of|gone ahead with) (the|that|your) "
    "(request|update)[ (as agreed|as discussed|just now)]: {summary}.",
    "(Completed|Done|All done|All set)[ as agreed](:| -) {summary}.",
    "(Thanks for confirming|Thank you for confirming|Thanks|Great|Perfect). (It's|That's|"
    "Everything's) "
    "(done|taken care of|gone through)(:| -) {summary}.",
)

REFUSE: tuple[str, ...] = (
    "[(I've checked|I looked into it|I checked the details|I've looked at your records), "
    "and ](I'm sorry, but|I'm afraid|unfortunately) (I can't|I'm not able to|I'm unable to) "
    "(do that|help with that|make that change|go ahead with that)[ (this time|here|for you)]: "
    "{reason}.",
    "(Unfortunately|I'm sorry, but|I'm afraid) (this isn't|that isn't|it isn't) "
    "(something I can do|possible|allowed under our policy)[ (here|this time)]: "
    "{reason}.",
    "(I checked|I've checked|I looked into it)(, and|;) (I'm "
    "unable to help with that request|policy doesn't allow this|the policy doesn't let me do "
    "that|I can't make that change)[, I'm (sorry|afraid)]: {reason}.",
)

#: The user, refused, asks for a human agent (their instructions have them insist on one).
ASK_HUMAN: tuple[str, ...] = (
    "(In that case|Then|OK, then)[,] I('d| would) like to (speak|talk) to a human agent[, please].",
    "(That's not good enough|I don't accept that)[, sorry]. (Can|Could) you (put me through|"
    "transfer me) to a human agent?",
)

ANYTHING_ELSE: tuple[str, ...] = (
    "[(Before you go|Before we wrap up|Before we finish|Now), ](is there|do you have) "
    "(anything|something) else (I can (help you with|do for you|look into|take care of)"
    "[ (today|for you)]|you('d| would) like (help with|me to look into)|on your mind"
    "|you need[ (today|from me)])?",
    "(Can|May|Could) I help [you ]with (anything|something) else[ (today|while we're "
    "here|before you go)]?",
    "Anything else (I can (help with|do for you|look into)|you need[ from me]|on your "
    "mind)[ (today|before you go)]?",
    "(Is that everything|Is that all)[ for (today|now)], or is there anything else (I can (help "
    "with|do for you)|you need)?",
)

GOODBYE: tuple[str, ...] = (
    "(No|Nope)(,|.) that's (all|everything|it)[ for (now|today)](.|, thank you.|, thanks.|. "
    "Thanks (a lot|for your help|so much).) ###STOP###",
    "(Great|Perfect|Wonderful|Excellent|Lovely|Brilliant), thanks for (your|the|all your) "
    "help[ today]. ###STOP###",
    "(That's everything|That's all I needed|Nothing else|That covers it|That's all I wanted|"
    "No, I'm all set|I'm all set)[(, thank you[ (so much|again)]|, thanks[ (so much|a lot|"
    "again)])]. ###STOP###",
    "(No|Nope|No, that's it)(,|.) (I'm (good|all set)|that was all|that's what I needed)"
    "[(, thanks|. Thank you|. Thanks again)]. ###STOP###",
)


#: The rule's label a policy model puts before its reason ("cancel: ", "refuel_data: ").
_RULE_LABEL = re.compile(r"^[a-z_]+(?: [a-z_]+)?: ")


def plain_reason(why: str) -> str:
    """A policy model's reason in the customer's words: without the rule's label it opens with."""
    return _RULE_LABEL.sub("", why, count=1)


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
