"""Detectors of interaction challenges: what a dialogue acts out, read from its turns alone.

A blueprint may request interaction challenges (``missing_information``, ``user_false_claim``
...); the task's instructions then tell the user to perform them. Whether the trajectory
*realizes* one is decided here, from the messages, never from the request:

* ``missing_information``: the user says they lack an id or number, and the agent then looks
  something up;
* ``ambiguous_preference`` / ``ambiguous_request``: the first thing the user says names no id,
  number or date; the agent asks what exactly they want; the user then says it;
* ``user_false_claim``: the user asserts a prior approval or promise, and the agent declines
  to rely on it;
* ``preference_change``: the agent proposes an action, the user changes their mind, and the
  agent proposes something different;
* ``constraint_hidden_until_late``: the agent proposes an action, the user only then adds a
  condition, and the agent proposes something different;
* ``emotional_pressure``: the user presses (stress, urgency, upset) and the agent's next words
  acknowledge it;
* ``multi_intent_interleaving``: after work on the request has started (a tool call), the user
  asks an unrelated side question, the agent answers, and work on the request goes on: a later
  tool call, or, when the request needs no more calls (a refusal), the answer turning back to
  the request and carrying on with it in the same turn.

A task's persona (the user's manner) is read the same way. :func:`persona_kind` names the
manner a persona line asks for; :func:`realized_personas` the manners the user's turns show:

* ``busy``: the user says they are short of time (and opens without small talk);
* ``chatty``: the user adds a friendly aside that has nothing to do with the request;
* ``careful``: the user asks the agent to go over the details once more, and the agent does;
* ``novice``: the user says it is their first time and asks how it works, and the agent's
  next words explain;
* ``expert``: the user says they have done this before and know how it goes;
* ``brief``: the user sticks to answering: no aside, no double check, no how-does-it-work
  question, no word of experience (a remark on their time is terse too, so ``busy`` and
  ``brief`` can both show).

The word lists are deliberately broad enough for a language model's phrasing, not only the
programmatic Teacher's; ``tests/environments/test_dialogue_acts.py`` holds hand-labelled
dialogues they are checked against.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tau2.data_model.message import AssistantMessage, Message, ToolMessage, UserMessage

_MISSING = re.compile(
    r"(?:don't|do not|can't|cannot|couldn't|no longer) (?:have|remember|find|know|recall)"
    r"[^.?!]{0,60}\b(?:id|ids|number|numbers|confirmation|code)\b"
    r"|lost (?:the|my) [^.?!]{0,30}(?:confirmation|email|number|id)",
    re.IGNORECASE,
)
_SPECIFIC = re.compile(r"\d|#W|\b[A-Z0-9]{6}\b")
_VAGUE = re.compile(
    r"\b(?:something|sort (?:it|this|that|(?:a few )?things) out|sorted|an? issue|a problem"
    r"|acting up"
    r"|not (?:quite |entirely )?sure|help with (?:my|an?) (?:account|order|trip|booking|phone)"
    r"|some help)\b",
    re.IGNORECASE,
)
_CLARIFY = re.compile(
    r"what exactly|exactly what|(?:could|can) you (?:tell|describe|explain)|more about"
    r"|what (?:would|do) you (?:like|need|want)|what went wrong|what's (?:wrong|going on)",
    re.IGNORECASE,
)
_IDENTIFY = re.compile(
    r"\b(?:user id|email|zip|phone number|full name|date of birth|customer id)\b", re.IGNORECASE
)
_CLAIM = re.compile(
    r"\b(?:already (?:approved|authori[sz]ed|agreed|promised|confirmed|fixed|waived)"
    r"|(?:was|were|been) (?:promised|told|approved|guaranteed)"
    r"|(?:approved|promised|authori[sz]ed) (?:it|this|me))",
    re.IGNORECASE,
)
_DECLINE = re.compile(
    r"(?:don't|do not|cannot|can't|could not|couldn't) (?:see|find|rely|verify|honou?r|go by)"
    r"|no (?:record|note|sign) of"
    r"|(?:have|need) to (?:follow|go by|apply) (?:the|our) (?:policy|records|rules)",
    re.IGNORECASE,
)
_CHANGE = re.compile(
    r"changed my mind|on second thought|actually,? (?:i'd|i would|let's|let us|please)"
    r"|i'd rather|i would rather|instead\b",
    re.IGNORECASE,
)
_CONDITION = re.compile(
    r"(?:one|a) (?:more )?(?:condition|requirement|thing i (?:didn't|did not|forgot to) mention)"
    r"|should have (?:mentioned|said)|forgot to (?:mention|say)|only if|it (?:has|needs) to",
    re.IGNORECASE,
)
_PRESSURE = re.compile(
    r"stress|frustrat|upset|urgent|right now|hurry|asap|fed up|ridiculous|unacceptable"
    r"|really (?:need|matters)|as quickly as|can't wait|cannot wait|annoy",
    re.IGNORECASE,
)
_ACKNOWLEDGE = re.compile(
    r"\bunderstand\b|\bsorry\b|apologi|i hear you|frustrating|stressful|i know this"
    r"|let's (?:get|sort)",
    re.IGNORECASE,
)
#: Ids a user names: order (#W...), reservation (6 capitals/digits), bill, line, customer.
_ID = re.compile(r"#W\d+|\b[A-Z0-9]{6}\b|\b[BLC]\d{4,}\b")
_SIDE = re.compile(
    r"while (?:i have|i've got) you|quick question|by the way|one more thing|unrelated"
    r"|\balso\b|before (?:i|we) forget",
    re.IGNORECASE,
)


#: The agent turning from a side question back to the request.
_BACK = re.compile(
    r"back to (?:your|the) (?:main )?(?:request|question|issue)|continue with (?:your|the) "
    r"request|(?:now|as) for (?:your|the) (?:request|main question)",
    re.IGNORECASE,
)
_BUSY = re.compile(
    r"short on time|pressed for time|in a rush|(?:don't|do not) have (?:long|much time)"
    r"|keep (?:this|it) (?:short|quick|brief)",
    re.IGNORECASE,
)
_CHATTY = re.compile(
    r"hope (?:your|you're|you are) (?:day|having)|cup of (?:tea|coffee)"
    r"|tend to (?:chat|ramble|go on)|one of those (?:days|weeks|mornings)"
    r"|(?:lovely|nice) (?:to (?:talk|chat)|weather|day)|(?:my|the) (?:cat|dog|kids?) (?:is|are)",
    re.IGNORECASE,
)
_READBACK = re.compile(
    r"(?:read|repeat|go over|run through|say) (?:that|it|this|the details|everything)"
    r"(?: (?:back|again|once more))?"
    r"|double[- ]check|to be (?:sure|safe)|make sure",
    re.IGNORECASE,
)
_NOVICE = re.compile(
    r"first time|never (?:done|had to do|called about) (?:this|anything like this)"
    r"|how (?:does|will) (?:this|it|the process) (?:usually )?work|how (?:this|it) works",
    re.IGNORECASE,
)
_EXPLAIN = re.compile(
    r"how it works|here's how|works like this|the process is|step by step"
    r"|(?:first|then),? (?:i'll|i will|we)|i'll (?:first )?(?:look|check|find|verify|go over)",
    re.IGNORECASE,
)
_EXPERT = re.compile(
    r"know the drill|know how (?:it|this) goes|know (?:the|your) (?:procedure|process|routine)"
    r"|(?<!never )(?:done|been through) this (?:before|a few times|many times)",
    re.IGNORECASE,
)
#: Persona kinds, each with words of a persona line that ask for it (first match wins).
PERSONA_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("novice", re.compile(r"first-time|unsure|not comfortable|rarely|step-by-step", re.I)),
    ("careful", re.compile(r"careful|double-check|explained before", re.I)),
    ("chatty", re.compile(r"chatty|talkative", re.I)),
    ("busy", re.compile(r"busy|hurry|rush|small talk", re.I)),
    ("expert", re.compile(r"knows?\b.*\bwell|frequent|regular|long-time", re.I)),
    ("brief", re.compile(r"brief|to the point", re.I)),
)


def says_missing(text: str) -> bool:
    """Whether ``text`` says the speaker lacks an id or number."""
    return bool(_MISSING.search(text))


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
                turns.append(_Turn(message.role, message.content))
    return turns


def _said(turns: list[_Turn], role: str) -> list[int]:
    return [i for i, t in enumerate(turns) if t.role == role and t.text]


def _next_said(turns: list[_Turn], start: int, role: str) -> int | None:
    return next(
        (i for i in range(start + 1, len(turns)) if turns[i].role == role and turns[i].text), None
    )


def _missing_information(turns: list[_Turn]) -> bool:
    for i in _said(turns, "user"):
        if _MISSING.search(turns[i].text):
            return any(t.role == "assistant" and t.call for t in turns[i + 1 :])
    return False


def _ambiguous(turns: list[_Turn]) -> bool:
    users = _said(turns, "user")
    first = turns[users[0]].text if users else ""
    if not _VAGUE.search(first) or _SPECIFIC.search(first):
        return False
    reply = _next_said(turns, users[0], "assistant")
    if reply is None or not turns[reply].asks or not _CLARIFY.search(turns[reply].text):
        return False
    if _IDENTIFY.search(turns[reply].text):
        return False
    follow = _next_said(turns, reply, "user")
    return follow is not None and len(turns[follow].text) > 20


def _user_false_claim(turns: list[_Turn]) -> bool:
    for i in _said(turns, "user"):
        if _CLAIM.search(turns[i].text):
            return any(_DECLINE.search(turns[j].text) for j in _said(turns, "assistant") if j > i)
    return False


def _reproposed(turns: list[_Turn], cue: re.Pattern[str]) -> bool:
    """Whether a user turn matching ``cue`` answers a proposal with something new.

    A proposal comes after the agent has done some work (a tool call), never the greeting.
    A "new" choice that names a reservation, order, line or bill picks which entity the
    request is about: the agent proposed the wrong one and the user corrects it, which is no
    change of mind about the request. Nor is a choice the user had already asked for before
    the proposal (every word of it said in an earlier turn): that repeats it.
    """
    work = next((i for i, t in enumerate(turns) if t.call), len(turns))
    for i in _said(turns, "user"):
        if not cue.search(turns[i].text):
            continue
        before = [j for j in _said(turns, "assistant") if work < j < i]
        after = _next_said(turns, i, "assistant")
        if (
            before
            and turns[before[-1]].asks
            and after is not None
            and turns[after].asks
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
_CHOICE_WORD = re.compile(r"[a-z]{4,}|\d+(?:\.\d+)?")


def _repeats(turns: list[_Turn], index: int) -> bool:
    """Whether every word naming the choice in user turn ``index`` was said by the user before."""
    words = set(_CHOICE_WORD.findall(turns[index].text.lower())) - _CUE_WORDS
    earlier = " ".join(turns[j].text.lower() for j in _said(turns, "user") if j < index)
    said = set(_CHOICE_WORD.findall(earlier))
    return bool(words) and words <= said


def _preference_change(turns: list[_Turn]) -> bool:
    return _reproposed(turns, _CHANGE)


def _constraint_hidden_until_late(turns: list[_Turn]) -> bool:
    return _reproposed(turns, _CONDITION)


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
        reply = _next_said(turns, i, "assistant")
        if reply is None:
            continue
        if any(t.call for t in turns[reply + 1 :]):
            return True
        back = _BACK.search(turns[reply].text)
        if back and turns[reply].text[back.end() :].strip():
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


def _busy(turns: list[_Turn]) -> bool:
    return any(_BUSY.search(turns[i].text) for i in _said(turns, "user"))


def _chatty(turns: list[_Turn]) -> bool:
    return any(_CHATTY.search(turns[i].text) for i in _said(turns, "user"))


def _careful(turns: list[_Turn]) -> bool:
    return any(
        turns[i].asks
        and _READBACK.search(turns[i].text)
        and _next_said(turns, i, "assistant") is not None
        for i in _said(turns, "user")
    )


def _novice(turns: list[_Turn]) -> bool:
    for i in _said(turns, "user"):
        if turns[i].asks and _NOVICE.search(turns[i].text):
            reply = _next_said(turns, i, "assistant")
            if reply is not None and _EXPLAIN.search(turns[reply].text):
                return True
    return False


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
    """The manner a persona line asks for (one of :data:`PERSONA_KINDS`), or None."""
    if not persona:
        return None
    return next((kind for kind, words in PERSONA_KINDS if words.search(persona)), None)


def realized_personas(messages: Sequence[Message]) -> set[str]:
    """The persona kinds the user's turns show (see the module docstring for ``brief``)."""
    turns = _turns(messages)
    shown = {kind for kind, detect in PERSONA_DETECTORS.items() if detect(turns)}
    return shown if shown - {"busy"} else shown | {"brief"}


def realized_challenges(messages: Sequence[Message], challenges: Sequence[str] = ()) -> set[str]:
    """The interaction challenges ``messages`` act out (among ``challenges``; default all)."""
    turns = _turns(messages)
    names = challenges or sorted(DETECTORS)
    return {c for c in names if c in DETECTORS and DETECTORS[c](turns)}
