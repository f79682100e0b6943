"""The offline user simulator: a task's stored user turns, played back in order.

τ²-bench's orchestrator asks its user for a turn whenever the agent speaks to the user (or a
user tool answers). :class:`ScriptedUser` answers with the next user turn of a script and,
when the script runs out, with τ²-bench's stop signal. Each scripted turn waits for as many
agent messages as preceded it in the script: a stored conversation may have the agent speak
twice in a row (a remark, then a tool call), which τ²-bench's protocol does not allow, so
where the agent has not yet said as much as the script had before the next turn, the user
acknowledges with :data:`FILLER` and lets the agent go on. The script is the task's verified
reference conversation where the lake stores one; otherwise the domain's programmatic
Teacher writes one for the task with the episode's seed. Either way the user says the same
things to every policy, so two episodes with the same task and seed can differ only by what
the policy does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tau2.data_model.message import (
    AssistantMessage,
    Message,
    SystemMessage,
    UserMessage,
)
from tau2.data_model.tasks import Task
from tau2.user.base import STOP, BaseUser, UserState, ValidUserInputMessage
from tau2.user.user_simulator import UserSimulator
from tau2.utils.utils import get_now

from evosyn.agents.episodes.tasks import EpisodeTask
from evosyn.environments.registry import domain_plugin
from evosyn.records import SynthTask


def opening_length(task: Task) -> int:
    """Messages τ²-bench's orchestrator starts a conversation of ``task`` with.

    The task's message history where it has one, else the agent's fixed greeting.
    """
    history = task.initial_state.message_history if task.initial_state else None
    return len(history) if history else 1


#: What the scripted user says where the script has the agent speak on without a reply.
FILLER = "Okay."


@dataclass(frozen=True)
class UserTurn:
    """A scripted user turn and how many agent messages to the user came before it."""

    after: int
    message: UserMessage


@dataclass(frozen=True)
class Script:
    """The turns of a conversation after its opening, by speaker."""

    #: The user's turns (text or user tool calls), in order.
    user: tuple[UserTurn, ...]
    #: The agent's turns (text or tool calls), in order.
    agent: tuple[AssistantMessage, ...]


def script_of(item: EpisodeTask, domain: str, seed: int) -> Script:
    """The script of ``item``: its reference conversation, else the programmatic Teacher's."""
    messages = item.reference
    if messages is None:
        synth = SynthTask(
            campaign_id=item.campaign_id or "episodes",
            round=item.round or 0,
            task_id=item.task_id,
            blueprint_id="episode",
            domain=domain,
            task=item.task,
        )
        messages = domain_plugin(domain).teacher().rollout(synth, seed).messages
    return split_turns(item.task, messages)


def split_turns(task: Task, messages: Sequence[Message]) -> Script:
    """The user's and the agent's turns of ``messages`` after the orchestrator's opening."""
    body = [m for m in messages if not isinstance(m, SystemMessage)]
    start = opening_length(task)
    user: list[UserTurn] = []
    spoken = 0
    for index, message in enumerate(body):
        if _to_user(message):
            spoken += 1
        elif isinstance(message, UserMessage) and index >= start:
            user.append(UserTurn(spoken, message))
    return Script(
        user=tuple(user),
        agent=tuple(m for m in body[start:] if isinstance(m, AssistantMessage)),
    )


def _to_user(message: Message) -> bool:
    """An agent message addressed to the user (text, not tool calls)."""
    return isinstance(message, AssistantMessage) and not message.is_tool_call()


def fresh(message: Message) -> Any:
    """A copy of ``message`` without cost, usage, turn number or time stamp."""
    return message.model_copy(
        deep=True, update={"timestamp": None, "turn_idx": None, "cost": None, "usage": None}
    )


class ScriptedUser(BaseUser):  # type: ignore[misc]  # tau2 is untyped here
    """A user that says its script's turns in order, then τ²-bench's stop signal.

    Args:
        turns: The user's turns, text or user tool calls, each with the number of agent
            messages to the user it waits for.
    """

    def __init__(self, turns: Sequence[UserTurn]) -> None:
        super().__init__(instructions=None, llm=None)
        self.turns = tuple(turns)
        #: Scripted turns said so far.
        self.said = 0
        #: Agent messages to the user heard so far (the opening's included).
        self.heard = 0

    def get_init_state(self, message_history: list[Message] | None = None) -> UserState:
        """An empty state; the agent messages of a task's history count as heard."""
        self.heard = sum(_to_user(m) for m in message_history or [])
        return UserState(system_messages=[], messages=[])

    def generate_next_message(
        self, message: ValidUserInputMessage, state: UserState
    ) -> tuple[UserMessage, UserState]:
        """The script's next turn, :data:`FILLER` while it waits, or the stop signal."""
        if _to_user(message):
            self.heard += 1
        if self.said >= len(self.turns):
            return UserMessage(role="user", content=STOP), state
        turn = self.turns[self.said]
        if turn.after > self.heard:
            return UserMessage(role="user", content=FILLER), state
        self.said += 1
        said: UserMessage = fresh(turn.message)
        said.timestamp = get_now()  # τ²-bench orders a conversation by its time stamps
        return said, state

    @classmethod
    def is_stop(cls, message: UserMessage) -> bool:
        """τ²-bench's user stop rule (stop, transfer or out-of-scope signal)."""
        return bool(UserSimulator.is_stop(message))

    def set_seed(self, seed: int) -> None:
        """Nothing to seed: the seed already chose the script."""

    def stop(self, message: UserMessage | None = None, state: UserState | None = None) -> None:
        """Nothing to release."""
