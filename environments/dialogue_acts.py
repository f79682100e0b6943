"""Detectors of interaction challenges: what a dialogue acts out, read from its turns alone.

A blueprint may request interaction challenges (``missing_information``, ``user_false_claim``
...); the task's instructions then tell the user to perform them. Whether the trajectory
*realizes* one is decided here, from the messages, never from the request. The cues are the
turns' order (who asks, what follows) and broad families of words, not any one phrasing:

* ``missing_information``: the user says they lack an id or number (they do not have or
  know it, lost or deleted what carried it, or what they gave is all they have), and the
  agent then looks something up;
* ``ambiguous_preference`` / ``ambiguous_request`` (a domain's name for one act): the first
  thing the user says is vague ("sort out my trip", "an issue", "some info"); the agent's
  first question that is not only about who the user is asks what they want done ("what
  exactly", "what would you like to ...", "a change, a cancellation, or something else?");
  the user then says it;
* ``user_false_claim``: the user asserts a prior approval, promise or fix, and the agent
  finds no trace of it or declines to rely on it;
* ``preference_change``: the agent proposes (after a tool call, asking for a yes or naming a
  price), the user changes their mind ("actually", "rather", "no, put it on ..."), and the
  agent proposes again;
* ``constraint_hidden_until_late``: the same, but the user's turn names a condition ("only
  if", "it has to be", "I forgot one thing"); a turn that does both is a condition;
* ``emotional_pressure``: the user presses (stress, upset, urgency, impatience) and the
  agent's next words acknowledge it;
* ``multi_intent_interleaving``: after work on the request has started (a tool call), the user
  asks a question marked as aside ("while you're in there", "unrelated", "by the way"), the
  agent answers, and work on the request goes on: a later tool call, or, when the request
  needs no more calls (a refusal), the answer turning back to the request and carrying on
  with it in the same turn ("Back to the bags: ...", a new paragraph "About the order: ...").
  A question that asks for another act ("I'd also like to cancel ...") or comes once the agent
  has closed the request ("Anything else?") starts a new request: nothing is interleaved.

A task's persona (the user's manner) is read the same way. :func:`persona_kind` names the
manner a persona line asks for; :func:`realized_personas` the manners the user's turns show:

* ``busy``: the user asks for speed in so many words ("quickly", "in a hurry", "no time"),
  greeting or not; or opens without pleasantries and goes straight to the request ("Cancel my
  ...") or answers tersely (half the later turns a few words) — manners an expert or a brief
  user shares, so given the task's persona line they count only where it asks for busy;
* ``chatty``: the user adds a friendly aside that has nothing to do with the request (a story
  from their own life, not a relative who is party to it), or exclaims or laughs throughout
  (several "!", "oh gosh", "haha") — a manner nervous novices share, so given a persona line
  asking for another kind only the aside counts;
* ``careful``: the user asks the agent to go over or explain the details before agreeing
  (or to double-check), and the agent answers;
* ``novice``: the user says they are new to this or not at ease with it (first time, never
  done it, not good with phones), and the agent answers;
* ``expert``: the user says they have done this before, or know how it goes or the rule
  (years of custom are no sign: users plead them for an exception whatever their manner);
  given the task's persona line asking for an expert, the absence of any contrary manner (no
  word of being new, no aside, no read-back) counts, as for ``brief``;
* ``brief``: the user sticks to answering: no aside, no double check, no word of being new
  or of experience. Every plain dialogue shows that, so given the task's persona line it is
  claimed only where the line asks for a brief manner; without it (the old reading) a remark
  on time is terse too, so ``busy`` and ``brief`` can both show.

The blind programmatic agent reacts to single user turns with the per-turn detectors of
:mod:`~evosyn.environments.dialogue_acts_turns` (``says_missing``, ``says_vaguely``,
``claims_approval``, ``presses``, ``new_to_it``).

``tests/environments/test_dialogue_acts.py`` holds hand-written dialogues the detectors must
agree on; ``test_dialogue_acts_labels.py`` and ``test_persona_labels.py`` measure them on our
Teacher's dialogues, ``test_model_written_labels.py`` on dialogues a capable model wrote and
``test_dialogue_acts_turns.py`` the per-turn detectors on those dialogues' turns.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tau2.data_model.message import AssistantMessage, Message, ToolMessage, UserMessage

from evosyn.environments.dialogue_acts_turns import (
    _BUSY,
    _CHATTY,
    _EXPERT,
    _GREETING,
    _HURRY,
    _IDENTIFY,
    _MISSING,
    _NOVICE,
    _PRESSURE,
    _WHAT_EXACTLY,
    _plain,
    claims_approval,
    says_vaguely,
)

# Re-exported: the blind agent's tests and the labels' scores read every per-turn detector here.

#: Lacking a thing named only by a pronoun ("I don't remember it"), or just saying no.
_MISSING_IT = re.compile(
    r"(?:don't|do not|can't|cannot|couldn't|no longer|never) (?:have|remember|find|know|recall"
    r"|keep)(?: \w+)? (?:it|that|one|them|those)\b|^\W*no\b[^.?!]{0,20}[.!,]?\s*(?:sorry|i don't)",
    re.IGNORECASE,
)
#: An agent question asking for an id or number.
_ASKS_ID = re.compile(r"\b(?:ids?|numbers?|code|confirmation)\b", re.IGNORECASE)
#: A clarifying question after a vague opening: what the user wants done, or the details of
#: it ("please tell me: one-way or round trip, ...", "a refund, or something else?").
_CLARIFY = re.compile(
    _WHAT_EXACTLY.pattern + r"|(?:do|would) you (?:want|like|need) to \w+[^?]{0,120}\bor\b"
    r"|is it [^?]{0,80}\bor\b|(?:please|then) tell me\b|what (?:would|do) you (?:like|need|want)"
    r"|what you(?:'d| would) like|or something else|what kind of",
    re.IGNORECASE,
)
#: The agent finding no trace of it, or not going by it.
_DECLINE = re.compile(
    r"(?:don't|do not|cannot|can't|could not|couldn't) (?:see|find|rely|verify|honou?r|go by"
    r"|apply|confirm|speak to|vouch for|comment on)"
    r"|\bno (?:such )?(?:record|note|sign|trace|mention|indication|evidence)"
    r"|nothing (?:was |has been )?(?:recorded|on record|noted|on file"
    r"|in the (?:system|file|record))"
    r"|(?:isn't|is not|wasn't|was not|not) (?:on record|on file|recorded|in (?:the|our) records?)"
    r"|nothing (?:was|has been) (?:changed|set up|done|applied|added)"
    r"|no .{0,40}(?:was|has been) (?:added|applied|changed|recorded|approved)"
    # the records showing the contrary: "our records show roaming is not enabled on it"
    r"|(?:records? shows?|i (?:can )?see)\b[^.?!]{0,80}\b(?:not|never|isn't|wasn't) (?:been )?"
    r"(?:enabled|set up|applied|approved|added|changed|active|on)\b"
    r"|(?:have|need) to (?:follow|go by|apply) (?:the|our) (?:policy|records|rules)",
    re.IGNORECASE,
)
#: The user changing what they want.
_CHANGE = re.compile(
    # "I'd rather not pay anything" turns the proposal down: no other choice is named
    r"changed my mind|on second thought|\brather\b(?! not\b)|\binstead\b"
    # "Actually, while I have you: ..." opens a side question, not a change
    r"|(?:^|[.!?;:,—–-]\s*|\b(?:oh|hmm|um|no|wait)\W+)actually\b(?!\W+(?:while (?:i have|i've got)"
    r" you|by the way|(?:a |one )?(?:quick|random|side) (?:question|one|thing)|one more thing))"
    r"|(?:^|[,.!?;—–-]\s*)(?:wait|hold on|hang on|scratch that)\b\s*[,.!—–-]"
    r"|now that i think|make it\b|switch (?:it|to)"
    r"|^\W*(?:no|hmm|wait)\b[,.!]? (?:put|make|use|let's|go|i'd(?! rather not)|i want|change)",
    re.IGNORECASE,
)
#: The user adding a condition the choice has to meet.
_CONDITION = re.compile(
    r"(?:one|a) (?:more )?(?:condition|requirement|thing i (?:didn't|did not|forgot to) mention)"
    r"|should have (?:mentioned|said)|forgot (?:to (?:mention|say)|one thing|something)|only if"
    r"|(?:it|this|that) (?:has|needs|must|'s got|have) (?:to )?(?:be|go|come|stay)\b"
    r"|i (?:have|need) to be|before you (?:do|go|proceed|submit|book|charge|process|finali[sz]e)\b"
    r"|as long as|provided (?:that|it)|only (?:want|agree) to [^.?!]{0,40} if|at (?:least|most) \$"
    r"|(?:under|below|no more than) \$"
    # a requirement with no subject or said as a need: "no wait. has to be paypal", "I need
    # the money on my Mastercard, not a gift card"
    r"|(?:^|[.!?,;:—–-]\s*)(?:it )?(?:has|needs|must) (?:to )?(?:be|go|come|stay)\b"
    r"|\bi need (?:the (?:money|refund|charge|payment|difference)|it|this|that) (?:on|in"
    r"|to go (?:on|to)|back on|back to)\b",
    re.IGNORECASE,
)
_ACKNOWLEDGE = re.compile(
    r"\bunderstand\b|\bsorry\b|apologi|i hear you|frustrating|stressful|i know (?:this|that|it)"
    r"|let's (?:get|sort)|as quick(?:ly)? as|no worries|don't worry"
    # the pace promised: "I'll be quick", "we'll keep it short"
    r"|(?:i'll|we'll|i will|we will|let's) (?:be|keep (?:this|it)|make (?:this|it)) (?:quick|brief"
    r"|short|fast)"
    # the end in sight, to the impatient: "Almost there.", "One more check: ..."
    r"|almost (?:there|done)|nearly (?:there|done)|^\W*(?:just )?one (?:more|last) (?:check|step)",
    re.IGNORECASE,
)
#: Ids a user names: order (#W...), reservation (6 capitals/digits), bill, line, customer.
_ID = re.compile(r"#W\d+|\b[A-Z0-9]{6}\b|\b[BLC]\d{4,}\b")
#: A question put aside from the request.
_SIDE = re.compile(
    r"while (?:i have you|i've got you|(?:you|we)(?:'re| are| have)\b[^.?!]{0,25}|i think of it)"
    r"|(?:quick|random) (?:question|one|thing)|by the way"
    r"|(?:side|separate|different|other) (?:question|issue|matter)"
    r"|one more thing|unrelated|\balso\b|before (?:i|we|you) (?:forget|go on|continue|carry on)"
    # put ahead of the request's next step: "Yes. Before that — how much is left on my gift
    # card?", "Actually hang on, first: ...", "Before I do, one question."
    r"|(?:^|[.!?;:]\s*)before (?:that|i do(?: that| it)?)\s*[,—–:-]"
    r"|(?:hang on|wait|hold on)\W+(?:\w+\W+)?first\b|(?:a|one) (?:quick |small )?question first\b",
    re.IGNORECASE,
)
#: A request to act ("can you update my address?", "I'd also like to cancel ..."): another
#: intent, not a side question.
_ACTION_REQUEST = re.compile(
    r"(?:(?:can|could|would|will) you (?:please |also )?"
    r"|\bi(?:'d| would)? (?:also )?(?:like|want|need) to (?:also )?)(?:change|update|modify"
    r"|cancel|book|add|remove|return|exchange|switch|move|make(?! sure)|set|send|refund|upgrade)\b"
    # the act wanted done to a thing: "I'd like my default address changed to ..."
    r"|\bi(?:'d| would) (?:also )?like (?:my|the|it|this|that) (?:[\w-]+ ){0,3}(?:changed|updated"
    r"|cancell?ed|moved|returned|exchanged|sent|added|removed|switched)\b",
    re.IGNORECASE,
)
#: The agent closing a request ("Is there anything else?"): what follows is a new one.
_CLOSING = re.compile(r"\banything else\b", re.IGNORECASE)
#: The agent turning from a side question back to the request: a phrase, or a new paragraph
#: that opens on the request's subject ("About the data: ...").
_BACK = re.compile(
    r"(?:^|[.!?:]\s+|\n\s*|\b(?:so|okay|ok|now|anyway)\W+)back to (?:the|your|my) \w+"
    r"|continue with (?:your|the) "
    r"request|(?:now|as) for (?:your|the) (?:request|main question)"
    r"|\n\s*(?:back to|as for|now,? (?:for|about)|about|regarding|for|on|returning to)"
    r" (?:the|your|\w+'s) [^\n:.,]{1,40}[:,.]",
    re.IGNORECASE,
)
#: The user turning back to the request after the answer: "Now, the economy change?",
#: "Ok. Insurance, then?" (or any phrase of :data:`_BACK`: "Back to the exchange then.").
_RETURN = re.compile(
    r"(?:^|[.!?]\s+)(?:\w+\W+)?(?:now|so|anyway),? (?:the|my) [\w -]{1,30}\?"
    r"|\b[\w-]+,? then\?\s*$",
    re.IGNORECASE,
)
#: An agent question that puts something to the user's yes: consent asked, or a price named.
_PROPOSAL = re.compile(
    r"shall i|should i|would you like me to|do you want me to|want me to|(?:go ahead|proceed)\?"
    r"|\(yes/no\)|\bconfirm\b|okay\?|ok\?|would that work|does that work|sound good"
    r"|which one\?|\$\d",
    re.IGNORECASE,
)
#: An opening that goes straight to the request: a bare request verb, or a fragment.
_IMPERATIVE = re.compile(
    r"^\W*(?:cancel|change|upgrade|downgrade|exchange|return|send|need|book|add|refund|move"
    r"|update|modify|pay|fix|remove|switch|check|tell|lift|resume|reactivate|enable|transfer)\b",
    re.IGNORECASE,
)
#: Interjections and laughter ("haha", "whats an mmsc lol"): an exclaiming manner, which
#: nervous novices and upset users share.
_INTERJECTION = re.compile(
    r"\b(?:ooh+|aw+|shucks|oops|yay|whoa|oh gosh|oh my|ha|haha|lol)\b", re.IGNORECASE
)
_READBACK = re.compile(
    r"(?:read|repeat|go over|run through|say) (?:that|it|this|the details|everything|why)"
    r"(?: (?:back|again|once more))?"
    r"|double[- ]check|to be (?:sure|safe|certain|clear)|make sure (?:i|we) (?:understand|have|got)"
    # "Just so I'm certain: that's one bag, no charge?", "read me back exactly what's in it"
    r"|so (?:that )?i'm (?:certain|sure|clear)|read (?:me |it |that )?back"
    r"|make sure (?:that's|that is|it's|it is|this is) (?:right|correct)|once more"
    r"|just to (?:confirm|check)"
    r"|before i (?:say (?:yes|anything)|agree|accept|decide|confirm)"
    r"|(?:you're|you are|are you) sure"
    r"|explain (?:exactly|the charge|what|how)|\bexplained\b|walk me through|break (?:it|that) down"
    r"|(?:know|tell me) exactly|check (?:it|that|this|everything) (?:once more|again)"
    # "before you do that, put it on my card" adds a condition; a careful user asks first
    r"|before (?:you|we) (?:do|proceed|agree|go ahead|change)[^.!]*\b(?:confirm|check|tell me|what"
    r"|how much|cost|explain|read|go over)\b|before anything else",
    re.IGNORECASE,
)
#: Persona kinds, each with words of a persona line that ask for it (first match wins, after
#: a kind named by its word: see :func:`persona_kind`). No two kinds share a cue: "no small
#: talk" fits a busy and a brief user alike, so it asks for neither.
PERSONA_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("novice", re.compile(r"novice|first-time|unsure|not comfortable|rarely|step-by-step", re.I)),
    ("careful", re.compile(r"careful|double-check|explained before", re.I)),
    ("chatty", re.compile(r"chatty|talkative", re.I)),
    ("busy", re.compile(r"busy|hurry|rush|short (?:of|on) time|pressed for time", re.I)),
    ("expert", re.compile(r"expert|knows?\b.*\bwell|frequent|regular|long-time", re.I)),
    ("brief", re.compile(r"brief|to the point|concise|no asides|stick to answering", re.I)),
)


#: What a simulated user must do to act out each interaction challenge and persona kind, in
#: words for a user simulator's instructions (the LLM Teacher's); the detectors above read the
#: same behaviour back from the dialogue.
ACTING: dict[str, str] = {
    "missing_information": "say you do not have an id or number the agent asks for (a "
    "reservation, order or customer id) and let the agent find it another way",
    "ambiguous_request": "open vaguely, without naming the exact request or any id, and say "
    "precisely what you want only after the agent asks",
    "ambiguous_preference": "open vaguely about what you want changed and give the exact "
    "details only after the agent asks a clarifying question",
    "user_false_claim": "claim early on that another agent already approved or promised your "
    "request; accept what the records show once the agent has checked them",
    "preference_change": "when the agent proposes something, change your mind about one detail "
    "(a card, an amount, an option) so the agent has to propose again",
    "constraint_hidden_until_late": "only after the agent's proposal, add a condition you had "
    "not mentioned, said as a condition ('it has to be under $200', 'only if it lands before "
    "noon', 'one thing I forgot: it must go on the gift card'), so the agent has to adapt; "
    "naming a different choice without a condition is a change of mind, not this",
    "emotional_pressure": "say you are stressed, upset or in a hurry and press the agent",
    "multi_intent_interleaving": "once the agent has started on your request, ask one unrelated "
    "question about your own account, then let the agent go back to the request",
    "busy": "say in so many words that you are short of time or in a hurry, and answer tersely",
    "chatty": "add a friendly aside that has nothing to do with the request",
    "careful": "before you say yes to a change, ask the agent to go over the details once more",
    "novice": "say it is your first time and ask how the process works",
    "expert": "say you have done this before and know how it goes",
    "brief": "answer what you are asked, politely and in few words, with no asides",
}

#: How an agent handles each challenge a customer may bring (every agent prompt states them:
#: the agent is not told which one a task has).
HANDLING: dict[str, str] = {
    # The customer's own pick of what was found is what counts: a yes to a record the agent
    # put forward is the agent's choice, not theirs.
    "missing_information": "If the customer lacks an id, look up the records you can reach (a "
    "profile lists its reservations or orders), tell the customer what you found and let them "
    "say which one they mean; never guess one or pick one for them to confirm.",
    "ambiguous": "If the request is vague, ask what exactly they want before doing anything.",
    "user_false_claim": "If the customer says something was already approved or promised, "
    "look the records up first; decline to rely on it unless the records show it.",
    "proposal": "If the customer changes a detail or adds a condition after your proposal, "
    "propose again with the new details and wait for a new yes.",
    "emotional_pressure": "If the customer is stressed or in a hurry, acknowledge it in your "
    "next words and keep to the policy.",
    "multi_intent_interleaving": "If the customer asks a side question, answer it from what "
    "you looked up, then go back to the request.",
}


@dataclass(frozen=True)
class _Turn:
    role: str  # "user", "assistant" or "tool"
    text: str  # what was said ("" for a tool call)
    call: str | None = None  # the tool called, for a tool-call turn

    @property
    def asks(self) -> bool:
        return "?" in self.text


def _turns(messages: Sequence[Message]) -> list[_Turn]:
    turns: list[_Turn] = []
    for message in messages:
        if isinstance(message, ToolMessage):
            continue
        if isinstance(message, UserMessage | AssistantMessage):
            for call in message.tool_calls or []:
                turns.append(_Turn(message.role, "", call.name))
            if message.content:
                turns.append(_Turn(message.role, _plain(message.content)))
    return turns


def _said(turns: list[_Turn], role: str) -> list[int]:
    return [i for i, t in enumerate(turns) if t.role == role and t.text]


def _next_said(turns: list[_Turn], start: int, role: str) -> int | None:
    return next(
        (i for i in range(start + 1, len(turns)) if turns[i].role == role and turns[i].text), None
    )


def _missing_information(turns: list[_Turn]) -> bool:
    """The user says they lack an id or number, and the agent then looks something up.

    Lacking "it" counts where the agent's last words asked for an id or number.
    """
    for i in _said(turns, "user"):
        asked = [j for j in _said(turns, "assistant") if j < i]
        asked_id = bool(asked) and turns[asked[-1]].asks and _ASKS_ID.search(turns[asked[-1]].text)
        if _MISSING.search(turns[i].text) or (asked_id and _MISSING_IT.search(turns[i].text)):
            return any(t.role == "assistant" and t.call for t in turns[i + 1 :])
    return False


def _ambiguous(turns: list[_Turn]) -> bool:
    """The opening is vague; the agent's first real question asks what the user wants done.

    The opening is read with :func:`says_vaguely`. Questions that only ask who the user is
    (the policy's identification) are passed over.
    """
    users = _said(turns, "user")
    if not users or not says_vaguely(turns[users[0]].text):
        return False
    asked = [
        j
        for j in _said(turns, "assistant")
        if j > users[0]
        and turns[j].asks
        and (_CLARIFY.search(turns[j].text) or not _IDENTIFY.search(turns[j].text))
    ]
    if not asked or not _CLARIFY.search(turns[asked[0]].text):
        return False
    follow = _next_said(turns, asked[0], "user")
    return follow is not None and len(turns[follow].text) > 20


def _user_false_claim(turns: list[_Turn]) -> bool:
    for i in _said(turns, "user"):
        if claims_approval(turns[i].text):
            return any(_DECLINE.search(turns[j].text) for j in _said(turns, "assistant") if j > i)
    return False


_PRICE = re.compile(r"\$\d")


def _proposes(turn: _Turn) -> bool:
    """Whether an agent turn puts something to the user: asks for consent, or names a price."""
    return turn.asks and bool(_PROPOSAL.search(turn.text))


def _reproposed(turns: list[_Turn], cue: Callable[[str], bool]) -> bool:
    """Whether a user turn ``cue`` holds for answers a proposal, and the agent proposes again.

    A proposal comes after the agent has done some work (a tool call), never the greeting,
    and asks for the user's yes or names a price (an open "which items?" proposes nothing).
    A "new" choice that names a reservation, order, line or bill picks which entity the
    request is about: the agent proposed the wrong one and the user corrects it, which is no
    change of mind about the request. Nor is a choice the user had already asked for before
    the proposal (every word of it said in an earlier turn): that repeats it.
    """
    work = next((i for i, t in enumerate(turns) if t.call), len(turns))
    for i in _said(turns, "user"):
        if not cue(turns[i].text):
            continue
        before = [j for j in _said(turns, "assistant") if work < j < i]
        after = _next_said(turns, i, "assistant")
        if (
            before
            and _proposes(turns[before[-1]])
            and after is not None
            and (turns[after].asks or _PRICE.search(turns[after].text))
            and turns[after].text != turns[before[-1]].text
            and not _ID.search(turns[i].text)
            and not _repeats(turns, i)
        ):
            return True
    return False


#: Words of a change-of-mind or condition turn that say nothing about the choice itself.
_CUE_WORDS = frozenset(
    [
        "actually",
        "changed",
        "mind",
        "second",
        "thought",
        "rather",
        "instead",
        "please",
        "with",
        "that",
        "would",
        "have",
        "forgot",
        "mention",
        "mentioned",
        "condition",
        "should",
        "only",
        "wait",
        "thing",
        "something",
        "said",
    ]
)
#: A number keeps the letters glued to it: "2G" (a network type) is not "2 GB".
_CHOICE_WORD = re.compile(r"[a-z]{4,}|\d+(?:\.\d+)?[a-z]*")


def _repeats(turns: list[_Turn], index: int) -> bool:
    """Whether every word naming the choice in user turn ``index`` was said by the user before."""
    words = set(_CHOICE_WORD.findall(turns[index].text.lower())) - _CUE_WORDS
    earlier = " ".join(turns[j].text.lower() for j in _said(turns, "user") if j < index)
    said = set(_CHOICE_WORD.findall(earlier))
    return bool(words) and words <= said


def _preference_change(turns: list[_Turn]) -> bool:
    # A turn that names a condition ("it has to be the Visa, not the gift card") is one.
    return _reproposed(
        turns, lambda text: bool(_CHANGE.search(text)) and not _CONDITION.search(text)
    )


def _constraint_hidden_until_late(turns: list[_Turn]) -> bool:
    return _reproposed(turns, lambda text: bool(_CONDITION.search(text)))


def _emotional_pressure(turns: list[_Turn]) -> bool:
    for i in _said(turns, "user"):
        if _PRESSURE.search(turns[i].text):
            reply = _next_said(turns, i, "assistant")
            if reply is not None and _ACKNOWLEDGE.search(turns[reply].text):
                return True
    return False


def _multi_intent_interleaving(turns: list[_Turn]) -> bool:
    first_call = next((i for i, t in enumerate(turns) if t.call), None)
    if first_call is None:
        return False
    for i in _said(turns, "user"):
        if i < first_call or not (_SIDE.search(turns[i].text) and turns[i].asks):
            continue
        if _ACTION_REQUEST.search(turns[i].text):
            continue  # a further request to act, not a question put aside
        before = [j for j in _said(turns, "assistant") if j < i]
        if before and _CLOSING.search(turns[before[-1]].text):
            continue  # asked once the request was done: a new one, nothing interleaved
        reply = _next_said(turns, i, "assistant")
        if reply is None:
            continue
        if any(t.call for t in turns[reply + 1 :]):
            return True
        back = _BACK.search(turns[reply].text)
        if back and turns[reply].text[back.end() :].strip():
            return True
        user = _next_said(turns, reply, "user")
        # or the user turns back to the request, and the agent takes it up
        text = turns[user].text if user is not None else ""
        user = user if _BACK.search(text) or _RETURN.search(text) else None
        if user is not None and _next_said(turns, user, "assistant") is not None:
            return True
    return False


#: A detector per interaction-challenge value of the ontologies.
DETECTORS: dict[str, Callable[[list[_Turn]], bool]] = {
    "missing_information": _missing_information,
    "ambiguous_preference": _ambiguous,
    "ambiguous_request": _ambiguous,
    "user_false_claim": _user_false_claim,
    "preference_change": _preference_change,
    "constraint_hidden_until_late": _constraint_hidden_until_late,
    "emotional_pressure": _emotional_pressure,
    "multi_intent_interleaving": _multi_intent_interleaving,
}


#: A terse user's typical answer, in words; how many "!" make an exclaiming manner.
_TERSE_WORDS = 10
_EXCLAIMS = 4


def _busy(turns: list[_Turn]) -> bool:
    """No pleasantries in the opening, and the user asks for speed or goes straight to it."""
    users = _said(turns, "user")
    if not users or _GREETING.search(turns[users[0]].text):
        return False
    opening = turns[users[0]].text
    if _IMPERATIVE.search(opening) or any(_BUSY.search(turns[i].text) for i in users):
        return True
    # or answers tersely: half the later turns are a few words ("Yes.", "B1005, 425. Paid.")
    later = sorted(len(turns[i].text.replace("###STOP###", "").split()) for i in users[1:])
    return bool(later) and later[len(later) // 2] <= _TERSE_WORDS


def _chatty(turns: list[_Turn]) -> bool:
    """A friendly aside, or an exclaiming manner throughout (several "!" across the turns)."""
    return _aside(turns) or _exclaiming(turns)


def _aside(turns: list[_Turn]) -> bool:
    """A friendly aside that has nothing to do with the request."""
    return any(_CHATTY.search(turns[i].text) for i in _said(turns, "user"))


def _exclaiming(turns: list[_Turn]) -> bool:
    users = _said(turns, "user")
    exclaims = sum(turns[i].text.count("!") for i in users)
    return exclaims >= _EXCLAIMS or any(_INTERJECTION.search(turns[i].text) for i in users)


def _hurried(turns: list[_Turn]) -> bool:
    """The user asks for speed in so many words ("quickly", "in a hurry"), greeting or not."""
    return any(_HURRY.search(turns[i].text) for i in _said(turns, "user"))


def _careful(turns: list[_Turn]) -> bool:
    return any(
        (turns[i].asks or re.search(r"before i", turns[i].text, re.I))
        and _READBACK.search(turns[i].text)
        and _next_said(turns, i, "assistant") is not None
        for i in _said(turns, "user")
    )


def _novice(turns: list[_Turn]) -> bool:
    """The user says they are new to this, and the agent answers them."""
    return any(
        _NOVICE.search(turns[i].text) and _next_said(turns, i, "assistant") is not None
        for i in _said(turns, "user")
    )


def _expert(turns: list[_Turn]) -> bool:
    return any(_EXPERT.search(turns[i].text) for i in _said(turns, "user"))


#: A detector per persona kind but ``brief`` (the manner that shows none of them).
PERSONA_DETECTORS: dict[str, Callable[[list[_Turn]], bool]] = {
    "busy": _busy,
    "chatty": _chatty,
    "careful": _careful,
    "novice": _novice,
    "expert": _expert,
}


def persona_kind(persona: str | None) -> str | None:
    """The manner a persona line asks for (one of :data:`PERSONA_KINDS`), or None.

    A line that names one kind by its word ("You are brief: ... no small talk") asks for that
    kind, whatever else it says; otherwise the first kind whose words the line uses.
    """
    if not persona:
        return None
    named = [kind for kind, _ in PERSONA_KINDS if re.search(rf"\b{kind}\b", persona, re.I)]
    if len(named) == 1:
        return named[0]
    return next((kind for kind, words in PERSONA_KINDS if words.search(persona)), None)


def realized_personas(messages: Sequence[Message], persona: str | None = None) -> set[str]:
    """The persona kinds the user's turns show (see the module docstring for ``brief``).

    ``brief`` is the absence of the other manners, which any plain dialogue shows; given the
    task's ``persona`` line, it is claimed only where that line asks for a brief manner.
    Without it, every dialogue showing no manner but ``busy`` counts as brief.
    """
    turns = _turns(messages)
    shown = {kind for kind, detect in PERSONA_DETECTORS.items() if detect(turns)}
    if _hurried(turns):
        shown.add("busy")
    asked = persona_kind(persona) if persona is not None else None
    if persona is not None:
        # Manners without words (terse answers, a bare request, exclamation marks) are shared
        # by several kinds: they count for the kind the line asks for, not for another.
        if asked != "busy" and not _hurried(turns):
            shown.discard("busy")
        if asked != "chatty" and not _aside(turns):
            shown.discard("chatty")
    if asked == "expert" and not shown & {"novice", "careful", "chatty"}:
        # An expert who never says so reads as a fluent, brief one: claimed, as brief is, by
        # the absence of any contrary manner (no word of being new, no aside, no read-back).
        shown.add("expert")
    if shown - {"busy"}:
        return shown
    if persona is not None and asked != "brief":
        return shown
    return shown | {"brief"}


def realized_challenges(messages: Sequence[Message], challenges: Sequence[str] = ()) -> set[str]:
    """The interaction challenges ``messages`` act out (among ``challenges``; default all)."""
    turns = _turns(messages)
    names = challenges or sorted(DETECTORS)
    return {c for c in names if c in DETECTORS and DETECTORS[c](turns)}
