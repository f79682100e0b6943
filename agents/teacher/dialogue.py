"""Domain-neutral pieces of the programmatic Teachers: the dialogue under construction.

A :class:`Dialogue` collects τ²-bench messages and executes every tool call on the task's
state as it is added, so each observation in the trajectory is the real one. The
:class:`ScriptedTeacher` base and the confirmation and closing turns are what the airline,
retail and telecom Teachers share; each domain writes its own conversation.
"""

from __future__ import annotations

import abc
import json
import random
import re
from typing import Any, ClassVar

from tau2.data_model.message import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    UserMessage,
)
from tau2.data_model.tasks import Action, Task

from evosyn.agents.teacher import phrasing
from evosyn.environments.base import DomainState, FunctionalSymbol, Tau2Domain
from evosyn.environments.registry import get_domain
from evosyn.records import SynthTask, Trajectory

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


def scenario(task: Task, default_reason: str) -> tuple[str, str]:
    """The user's reason for calling (``default_reason`` if none) and what they know."""
    instructions = task.user_scenario.instructions
    reason = str(getattr(instructions, "reason_for_call", "") or default_reason)
    known = str(getattr(instructions, "known_info", "") or "")
    return reason, known


def confirm(dialogue: Dialogue, details: str, rng: random.Random, summaries: list[str]) -> None:
    """The agent lists a write's ``details`` and the user says yes; the write is summarised."""
    dialogue.assistant(phrasing.pick(rng, phrasing.ASK_CONFIRM, details=details))
    dialogue.user(phrasing.pick(rng, phrasing.CONFIRM))
    summaries.append(details)


def close(
    dialogue: Dialogue,
    task: Task,
    summaries: list[str],
    rng: random.Random,
    *,
    note_after_writes: bool = False,
) -> None:
    """The closing turns: what was done (or why not), every ``communicate_info``, goodbye.

    Args:
        dialogue: The conversation so far.
        task: The task whose notes and evaluation criteria the closing states.
        summaries: What each write did, in order (empty: nothing was written).
        rng: The rollout's seeded wording.
        note_after_writes: Also state the task's note after the writes (what the user should
            now see, where the outcome is on their side).
    """
    criteria = task.evaluation_criteria
    communicate = list((criteria.communicate_info if criteria else None) or [])
    note = (task.description.notes if task.description else None) or ""
    nl = (criteria.nl_assertions if criteria else None) or []
    if summaries:
        closing = phrasing.pick(rng, phrasing.DONE, summary="; ".join(summaries))
        if note_after_writes and note:
            closing += f" Now {note}."
    elif nl and note:
        closing = phrasing.pick(rng, phrasing.REFUSE, reason=note)
    elif note:
        closing = phrasing.pick(rng, phrasing.INFORM, summary=note)
    else:
        closing = "I have checked your records."
    if communicate:
        closing += " For your records: " + "; ".join(communicate) + "."
    dialogue.assistant(f"{closing} {phrasing.pick(rng, phrasing.ANYTHING_ELSE)}")
    dialogue.user(phrasing.pick(rng, phrasing.GOODBYE))


class ScriptedTeacher(abc.ABC):
    """A programmatic Teacher: the gold actions of a task inside a scripted dialogue.

    Holds what every domain does alike (the rollout record, the opening system turn, the
    symbol of a call); the domain writes the conversation in :meth:`messages`. Without a
    ``domain`` it rolls out on the shared instance of :attr:`domain_name`.
    """

    #: The τ²-bench domain this Teacher rolls out tasks of.
    domain_name: ClassVar[str]
    name = "programmatic"

    def __init__(self, domain: Tau2Domain | None = None) -> None:
        self.domain = domain or get_domain(self.domain_name)

    def rollout(self, task: SynthTask, seed: int, attempt: int = 0) -> Trajectory:
        """The trajectory for ``task``: its gold actions inside a policy-following dialogue.

        Args:
            task: The synthesized task.
            seed: Seed of the wording.
            attempt: 0 for the first rollout, k for the k-th repair (varies the wording).

        Returns:
            The trajectory in τ²-bench's message format.
        """
        return Trajectory(
            campaign_id=task.campaign_id,
            round=task.round,
            trajectory_id=f"{task.task_id}-traj{attempt}",
            task_id=task.task_id,
            messages=self.messages(task.task, seed, attempt),
            teacher=self.name,
            attempt=attempt,
        )

    @abc.abstractmethod
    def messages(self, task: Task, seed: int, attempt: int = 0) -> list[Message]:
        """The conversation for a τ²-bench task of the domain."""

    def _open(self, task: Task, seed: int, attempt: int) -> tuple[random.Random, Dialogue]:
        """The rollout's seeded wording and a dialogue opened by the system policy."""
        rng = phrasing.seeded(seed, task.id, attempt, "rollout")
        dialogue = Dialogue(self.domain, self.domain.initial_state(task))
        dialogue.add(SystemMessage(role="system", content=self.domain.policy()))
        return rng, dialogue

    def _symbol(self, action: Action) -> FunctionalSymbol | None:
        spec = self.domain.tool_spec(action.name, action.requestor)
        return None if spec is None else spec.symbol
