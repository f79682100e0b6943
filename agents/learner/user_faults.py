"""User-simulator faults: a failed episode whose user side broke its instructions.

A user simulator that invents a fact or hangs up on a question fails the episode without the
learner doing anything wrong (τ²-bench's maintainers found up to 30% of failed retail episodes
were the simulator's; airline test task 35 fails for every model because it invents a
passenger). Such an episode says nothing about the learner, so the episode runner marks it
(``InfraFailure`` of kind ``user_sim_fault``, with these labels as its message) instead of
scoring it, and the Reflector and the probes never see it. Offline, two rule checks read the
conversation against the task's user instructions and the domain's database:

- ``invented_fact``: the user states an identifier, a long number, a date or an e-mail
  address that is neither in its instructions nor in anything said or returned before it
  (the label says whether the database holds it: a lucky guess or an invention);
- ``ended_early``: the user ends the conversation in answer to a question of the agent, other
  than whether it needs anything else.

Asking for something other than the instructions say, and contradicting itself in words, need
a judge model; they are not checked here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from tau2.data_model.message import AssistantMessage, ToolMessage, UserMessage
from tau2.data_model.simulation import TerminationReason
from tau2.data_model.tasks import Task

UserFaultKind = Literal["invented_fact", "ended_early"]

#: A fact a user may state: an e-mail address, or a token with a digit in it (ids such as
#: ``aarav_ahmed_6699`` or ``#W2378156``, dates, card endings, sums) that has at least three
#: digits or is a six-character code in capitals (an airline reservation id, ``XEHM4B``).
#: Technical words such as ``4g/5g`` are not facts.
_FACT = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+|[\w#$/:.,-]*\d[\w#$/:.,-]*")
_CODE = re.compile(r"[A-Z0-9]{6}")
#: An agent's closing offer: ending the call in answer to it is no fault.
_CLOSING = re.compile(r"anything else|something else|help (?:you )?with today", re.IGNORECASE)
_STOP_TOKENS = ("###STOP###", "###TRANSFER###", "###OUT-OF-SCOPE###")


class UserFault(BaseModel):
    """One way the user side of an episode broke its instructions."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: UserFaultKind
    turn: int = Field(ge=0, description="Index of the user's message in the conversation.")
    detail: str = Field(description="What the user said and why it breaks its instructions.")

    def label(self) -> str:
        """``kind: detail``, as the marked episode's message carries it."""
        return f"{self.kind}: {self.detail}"


def canonical(text: str) -> str:
    """Lower case without thousands separators, so '1,234.50' and '$1234.50' compare equal."""
    return re.sub(r"(?<=\d),(?=\d{3})", "", text.lower())


def stated_facts(text: str) -> list[str]:
    """The facts of :data:`_FACT` in ``text``, stripped of surrounding punctuation."""
    facts: list[str] = []
    for match in _FACT.finditer(text):
        raw = match.group().strip(".,:;-/").lstrip("#$")
        digits = sum(c.isdigit() for c in raw)
        if "@" not in raw and digits < 3 and not _CODE.fullmatch(raw):
            continue
        fact = canonical(raw)
        if fact not in facts:
            facts.append(fact)
    return facts


def _said(message: Any) -> str:
    """Everything a message puts on the table: its text, tool-call arguments, tool results."""
    parts = [str(getattr(message, "content", None) or "")]
    for call in getattr(message, "tool_calls", None) or []:
        parts.append(str(call.arguments))
    return "\n".join(parts)


def user_faults(
    task: Task,
    messages: Sequence[Any],
    termination: TerminationReason | str,
    in_database: Callable[[str], bool],
) -> list[UserFault]:
    """The faults of the user side of ``messages`` (an episode on ``task``), in turn order.

    Args:
        task: The task the episode played; its user scenario is what the user may know.
        messages: The episode's conversation (the task's message history first, if any).
        termination: Why the episode ended (``ended_early`` needs a user stop).
        in_database: Whether the domain's database holds a (canonical) fact.
    """
    known = canonical(str(task.user_scenario))
    history = task.initial_state.message_history if task.initial_state else None
    known += "\n" + "\n".join(canonical(_said(m)) for m in history or [])
    faults: list[UserFault] = []
    for turn, message in enumerate(messages):
        if isinstance(message, UserMessage) and message.content:
            for fact in stated_facts(message.content):
                if fact in known:
                    continue
                where = "the database holds it" if in_database(fact) else "nor in the database"
                faults.append(
                    UserFault(
                        kind="invented_fact",
                        turn=turn,
                        detail=f"the user said {fact!r}, in neither its instructions nor the "
                        f"conversation before ({where})",
                    )
                )
        known += "\n" + canonical(_said(message))
    stop = _ended_early(messages, termination)
    if stop is not None:
        faults.append(stop)
    return faults


def _ended_early(messages: Sequence[Any], termination: TerminationReason | str) -> UserFault | None:
    """A user stop in answer to the agent's question (not its closing offer)."""
    if TerminationReason(termination) != TerminationReason.USER_STOP:
        return None
    last_user = next(
        (i for i in range(len(messages) - 1, -1, -1) if isinstance(messages[i], UserMessage)),
        None,
    )
    if last_user is None:
        return None
    content = messages[last_user].content or ""
    if not any(token in content for token in _STOP_TOKENS):
        return None
    asked_at = next(
        (
            i
            for i in range(last_user - 1, -1, -1)
            if isinstance(messages[i], AssistantMessage) and messages[i].has_text_content()
        ),
        None,
    )
    if asked_at is None:
        return None
    question = messages[asked_at].content or ""
    if "?" not in question or _CLOSING.search(question):
        return None
    # A stop after the agent's own tool results is an answer to those, not to the question.
    if any(isinstance(m, ToolMessage) for m in messages[asked_at + 1 : last_user]):
        return None
    asked = question.strip().splitlines()[-1][:120]
    return UserFault(
        kind="ended_early",
        turn=last_user,
        detail=f"the user ended the conversation instead of answering {asked!r}",
    )
