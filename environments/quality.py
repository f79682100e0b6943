"""Training-grade checks of a task and its trajectory, judged by what the dialogue realizes.

τ²-bench's reward says a trajectory reaches the right state and says the right strings; these
checks say whether it is worth training on:

* **answers in context** (:func:`out_of_context_answers`): every expected answer must be said
  where it answers something: in an agent turn that replies to a user's question, or that puts
  a proposal to the user. An answer only said in a turn that replies to a plain "yes" and asks
  nothing but "anything else?" is a context-free summary line.
* **robust expected answers** (:func:`brittle_answers`): positive amounts, no trailing ".0",
  nothing of one or two characters that any message with a number or date would contain.
* **no internal ids handed over** (:func:`leaked_ids`): users describe a payment method ("the
  Visa ending in 7334"); its database id is the agent's to look up.
* **no contradictions** (:func:`contradictions`): a user told they do not know an id is not
  also given that id.
* **no free pass** (:func:`do_nothing`): the trajectory of an agent that greets, hears the
  request and stops; a task it passes rewards doing nothing.

These rules are the quality gate synthesis applies (a failed check is a rejection with its
reason) and what ``evosyn audit`` measures.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from tau2.data_model.message import AssistantMessage, Message, SystemMessage, UserMessage
from tau2.data_model.tasks import Task

from evosyn.environments.contamination import instruction_text

#: What τ²-bench's orchestrator has the agent say first.
AGENT_GREETING = "Hi! How can I help you today?"

_INTERNAL_ID = re.compile(r"\b(?:credit_card|debit_card|gift_card|certificate|paypal)_\d+\b")
_PLEASANTRY = re.compile(
    r"(anything else|something else|else (?:i|we) can|help you with|have a (?:nice|good|great))",
    re.IGNORECASE,
)
_REQUEST = re.compile(r"\b(?:like to know|want to know|wish to know|tell me|let me know)\b", re.I)
_SENTENCE_END = re.compile(r"(?<=[.?!])\s+")
#: An id the user could be told they do not know, by the words naming it.
_ID_PATTERNS = {
    "order": re.compile(r"#W\d{7}"),
    "reservation": re.compile(r"\b(?=[A-Z0-9]*\d)(?=[A-Z0-9]*[A-Z])(?!HAT\d{3}\b)[A-Z0-9]{6}\b"),
    "customer": re.compile(r"\bC\d{3,}\b"),
}
_UNKNOWN_ID = re.compile(
    r"(?:do not|don't|not) (?:know|have|remember)[^.]*\b(order|reservation|customer)"
    r"|lost the (order|reservation)",
    re.IGNORECASE,
)


def _texts(messages: Sequence[Message]) -> list[tuple[str, str]]:
    """(role, content) of the user and assistant turns that say something, in order."""
    out: list[tuple[str, str]] = []
    for message in messages:
        if isinstance(message, UserMessage | AssistantMessage) and message.content:
            out.append((message.role, message.content))
    return out


def _asks(text: str) -> bool:
    """Whether ``text`` asks something beyond a closing pleasantry."""
    return any(
        (s.rstrip().endswith("?") or _REQUEST.search(s)) and not _PLEASANTRY.search(s)
        for s in _sentences(text)
    )


def _sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE_END.split(text.strip()) if s]


def expected_answers(task: Task) -> list[str]:
    """The strings τ²-bench's communicate check looks for in the agent's turns."""
    criteria = task.evaluation_criteria
    return list((criteria.communicate_info if criteria else None) or [])


def said_in_context(answer: str, messages: Sequence[Message]) -> bool:
    """Whether an agent turn states ``answer`` in context (see the module doc)."""
    needle = answer.lower().replace(",", "")
    turns = _texts(messages)
    for i, (role, text) in enumerate(turns):
        if role != "assistant" or needle not in text.lower().replace(",", ""):
            continue
        previous_user = next((t for r, t in reversed(turns[:i]) if r == "user"), "")
        if _asks(text) or _asks(previous_user):
            return True
    return False


def out_of_context_answers(task: Task, messages: Sequence[Message]) -> list[str]:
    """Expected answers that no agent turn states in context (see the module doc)."""
    return [a for a in expected_answers(task) if not said_in_context(a, messages)]


def brittle_answers(task: Task) -> list[str]:
    """Expected answers a wrong reply can satisfy or a right one can miss."""
    return [a for a in expected_answers(task) if is_brittle(a)]


def is_brittle(answer: str) -> bool:
    """Whether a wrong reply can contain ``answer`` or a right one miss it."""
    text = answer.strip()
    return len(text) <= 2 or text.startswith("-") or bool(re.fullmatch(r"\$?\d+\.0+", text))


def leaked_ids(task: Task) -> list[str]:
    """Internal payment-method ids written into the user's instructions."""
    return sorted(set(_INTERNAL_ID.findall(instruction_text(task))))


def contradictions(task: Task) -> list[str]:
    """Ids the user is told they do not know yet is also given, with the kind of id."""
    scenario = task.user_scenario.instructions
    if isinstance(scenario, str):
        return []
    found: list[str] = []
    for match in _UNKNOWN_ID.finditer(instruction_text(task)):
        kind = (match.group(1) or match.group(2)).lower()
        told = " ".join(
            p
            for p in (scenario.reason_for_call, scenario.known_info, scenario.task_instructions)
            if p
        )
        # The sentence that says the id is unknown is not itself a mention of the id.
        told = told.replace(match.group(0), "")
        ids = _ID_PATTERNS[kind].findall(told)
        if ids:
            found.append(f"told not to know the {kind} id but given {', '.join(sorted(set(ids)))}")
    return sorted(set(found))


def do_nothing(task: Task, policy: str) -> list[Message]:
    """The trajectory of an agent that greets, hears the request and stops."""
    scenario = task.user_scenario.instructions
    reason = scenario if isinstance(scenario, str) else scenario.reason_for_call
    return [
        SystemMessage(role="system", content=policy),
        AssistantMessage(role="assistant", content=AGENT_GREETING),
        UserMessage(role="user", content=f"Hi. {reason}"),
        AssistantMessage(role="assistant", content="I'm sorry, I cannot help with that. Goodbye."),
        UserMessage(role="user", content="###STOP###"),
    ]


def mask(text: str, names: Sequence[str] = ()) -> str:
    """``text`` with ids, numbers, dates, codes and the given names masked (template variety)."""
    for name in names:
        if name:
            text = text.replace(name, "<name>")
    text = re.sub(r"\S+@\S+", "<email>", text)
    text = re.sub(r"#W\d+", "<id>", text)
    text = re.sub(r"\b\w*\d\w*\b", "<n>", text)
    text = re.sub(r"\b[A-Z]{3}\b", "<code>", text)
    return re.sub(r"(<n>[-/.,:]?)+", "<n>", text)
