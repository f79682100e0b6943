"""Domain-neutral pieces of the programmatic Teachers: the dialogue under construction.

A :class:`Dialogue` collects τ²-bench messages and executes every tool call on the task's
state as it is added, so each observation in the trajectory is the real one.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tau2.data_model.message import AssistantMessage, Message, ToolCall, UserMessage
from tau2.data_model.tasks import Action

from evosyn.environments.base import DomainState, Tau2Domain

# Second person in the scenario becomes first person in the user's own words.
_FIRST_PERSON = (
    (re.compile(r"\bYou are\b"), "I am"),
    (re.compile(r"\byou are\b"), "I am"),
    (re.compile(r"\bYou\b"), "I"),
    (re.compile(r"\byou\b"), "I"),
    (re.compile(r"\bYour\b"), "My"),
    (re.compile(r"\byour\b"), "my"),
)


def first_person(text: str) -> str:
    """A scenario sentence ("You want to ...") as the user would say it ("I want to ...")."""
    for pattern, replacement in _FIRST_PERSON:
        text = pattern.sub(replacement, text)
    return text


class Dialogue:
    """Messages so far, with tool calls executed on the state as they are added."""

    def __init__(self, domain: Tau2Domain, state: DomainState) -> None:
        self.domain = domain
        self.state = state
        self.messages: list[Message] = []

    def add(self, message: Any) -> None:
        """Append ``message`` with a fixed turn number and no timestamp."""
        # Fixed turn numbers and no wall-clock stamps keep equal seeds byte-identical.
        message.turn_idx = len(self.messages)
        message.timestamp = None
        self.messages.append(message)

    def user(self, text: str) -> None:
        """A user turn in words."""
        self.add(UserMessage(role="user", content=text))

    def assistant(self, text: str) -> None:
        """An assistant turn in words."""
        self.add(AssistantMessage(role="assistant", content=text))

    def call(self, action: Action) -> None:
        """The tool call of ``action`` by its requestor, and its real observation."""
        call = ToolCall(
            id=f"call_{len(self.messages)}",
            name=action.name,
            arguments=json.loads(json.dumps(action.arguments)),
            requestor=action.requestor,
        )
        turn = UserMessage if action.requestor == "user" else AssistantMessage
        self.add(turn(role=action.requestor, content=None, tool_calls=[call]))
        self.add(self.domain.execute(self.state, call))

    def replay(self, message: Message) -> None:
        """Append a message of the task's history, executing its tool calls."""
        self.messages.append(message)
        if isinstance(message, AssistantMessage | UserMessage):
            for call in message.tool_calls or []:
                self.domain.execute(self.state, call)
