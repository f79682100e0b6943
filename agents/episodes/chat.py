"""Episodes in OpenAI chat format, each message labelled with whose it is: what RL trainers read.

A trainer's rollout sees an episode as chat messages that its chat template renders into tokens;
it learns from the policy's tokens and masks the rest. :func:`source_of` names whose a message
is (``policy``: the assistant turns the trained model writes; ``observation``: tool results;
``user``: the user's turns, and the user's own device-tool traffic in a stored conversation;
``system``: prompts). :class:`ChatEpisode` drives an :class:`~evosyn.agents.episodes.Episode` in
that format, as the trained learner is shown a conversation (``export.learner_view``: the stock
system prompt, then the user's first line; τ²-bench's fixed greeting is left out, as in SFT).

:class:`EpisodeRef` is what an exported row carries to rebuild its episode and score it: the
τ²-bench task, the verified conversation the offline user plays its turns from, and the seed. The
same task and a trajectory score the same through the reward server (``POST /reward`` with the
task inline) as through the episode API.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from tau2.data_model.message import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolMessage,
    UserMessage,
)
from tau2.data_model.simulation import TerminationReason
from tau2.data_model.tasks import Task

from evosyn.agents.episodes.episode import Episode, EpisodeEnv, EpisodeError
from evosyn.agents.episodes.reward import RewardVerdict
from evosyn.agents.episodes.tasks import EpisodeTask
from evosyn.agents.episodes.users import opening_length
from evosyn.agents.learner.export import learner_view
from evosyn.environments.trajectories import parse_message

Source = Literal["system", "policy", "observation", "user"]
"""Whose a message (or token) is: only ``policy`` is the trained model's own output."""

Split = Literal["train", "diagnostic"]
"""``train``, or ``diagnostic``: a task its campaign held out of training."""


def source_of(message: Message | Mapping[str, Any]) -> Source:
    """Whose ``message`` is: a τ²-bench message or an OpenAI chat message.

    Tool results the user's own tools returned (τ²-bench's telecom user acts on its phone) are
    the user's, not observations of the policy's calls.
    """
    if isinstance(message, Mapping):
        role = message.get("role")
        mapped: dict[Any, Source] = {
            "system": "system",
            "assistant": "policy",
            "tool": "observation",
            "user": "user",
        }
        if role not in mapped:
            raise ValueError(f"a message with role {role!r} has no source")
        return mapped[role]
    if isinstance(message, SystemMessage):
        return "system"
    if isinstance(message, AssistantMessage):
        return "policy"
    if isinstance(message, ToolMessage):
        return "observation" if message.requestor == "assistant" else "user"
    if isinstance(message, UserMessage):
        return "user"
    raise ValueError(f"a {type(message).__name__} has no source")


def reference_sources(task: Task, messages: Sequence[Message]) -> list[Source]:
    """Whose each message of a stored conversation of ``task`` is.

    As :func:`source_of`, except the assistant lines of the conversation's opening (τ²-bench's
    fixed greeting, or the task's given history): the orchestrator says them, the policy does
    not, so they are ``system``, as in the prompt of an episode.
    """
    given = opening_length(task)
    sources: list[Source] = []
    seen = 0
    for m in messages:
        source = source_of(m)
        if not isinstance(m, SystemMessage):
            if seen < given and source == "policy":
                source = "system"
            seen += 1
        sources.append(source)
    return sources


def chat_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """τ²-bench messages as OpenAI chat messages (arguments as JSON strings, results by call id)."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if isinstance(m, AssistantMessage) and m.tool_calls:
            calls = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {
                        "name": c.name,
                        "arguments": json.dumps(c.arguments, ensure_ascii=False),
                    },
                }
                for c in m.tool_calls
            ]
            out.append({"role": "assistant", "content": m.content or "", "tool_calls": calls})
        elif isinstance(m, ToolMessage):
            out.append({"role": "tool", "tool_call_id": m.id, "content": m.content or ""})
        else:
            out.append({"role": m.role, "content": m.content or ""})
    return out


class EpisodeRef(BaseModel):
    """What an exported row carries to replay and score its task's episodes."""

    model_config = ConfigDict(extra="forbid")

    task_id: str = Field(description="Campaign-qualified task id (CAMPAIGN:LOCAL), as task.id.")
    campaign_id: str = Field(description="Campaign the task comes from.")
    round: int = Field(description="Round the task was synthesized in.")
    split: Split = Field(
        description="train, or diagnostic: a task the campaign held out of training."
    )
    domain: str = Field(description="τ²-bench domain the task runs in.")
    seed: int = Field(description="Seed of the task's episodes.")
    reference: list[dict[str, Any]] = Field(
        description="The verified conversation (τ²-bench messages as JSON): the offline user "
        "says its user turns; the reward server scores any conversation of the task."
    )
    reference_sources: list[Source] = Field(
        description="Whose each message of the reference is, in order (reference_sources)."
    )

    @classmethod
    def of(cls, item: EpisodeTask, domain: str, split: Split, seed: int) -> EpisodeRef:
        """The reference of a verified task (``item.task.id`` already campaign-qualified)."""
        if item.reference is None or item.campaign_id is None or item.round is None:
            raise ValueError(f"task {item.task_id}: no verified conversation, campaign or round")
        return cls(
            task_id=item.task_id,
            campaign_id=item.campaign_id,
            round=item.round,
            split=split,
            domain=domain,
            seed=seed,
            reference=[m.model_dump(mode="json") for m in item.reference],
            reference_sources=reference_sources(item.task, item.reference),
        )

    def columns(self, task: Task) -> dict[str, Any]:
        """The reference and ``task`` flat, for a columnar row (nested JSON as strings).

        Parquet types a column by all its rows; τ²-bench tasks and messages differ in shape
        from row to row, so they travel as JSON text. :meth:`from_columns` reads it back.
        """
        flat = self.model_dump(exclude={"reference"})
        flat["reference"] = json.dumps(self.reference, ensure_ascii=False)
        flat["task"] = task.model_dump_json()
        return flat

    @classmethod
    def from_columns(cls, columns: Mapping[str, Any]) -> tuple[EpisodeRef, Task]:
        """The reference and task of a row written with :meth:`columns` (extra keys ignored)."""
        fields = {k: columns[k] for k in cls.model_fields if k in columns}
        fields["reference"] = json.loads(fields.get("reference") or "null")
        fields["reference_sources"] = list(fields.get("reference_sources") or [])
        ref = cls.model_validate(fields)
        return ref, Task.model_validate_json(columns["task"])

    def item(self, task: Task | Mapping[str, Any]) -> EpisodeTask:
        """The episode task of this reference and its τ²-bench ``task``."""
        parsed = task if isinstance(task, Task) else Task.model_validate(task)
        if parsed.id != self.task_id:
            raise ValueError(f"task {parsed.id!r} is not the reference's {self.task_id!r}")
        return EpisodeTask(
            task=parsed,
            reference=[parse_message(m) for m in self.reference],
            campaign_id=self.campaign_id,
            round=self.round,
        )


class ChatTurn(BaseModel):
    """What one assistant turn of a :class:`ChatEpisode` brought back."""

    model_config = ConfigDict(extra="forbid")

    messages: list[dict[str, Any]] = Field(
        description="What the policy hears back (tool results, or the user's next turn)."
    )
    sources: list[Source] = Field(description="Whose each of those messages is.")
    done: bool = Field(description="The episode ended.")
    verdict: RewardVerdict | None = Field(default=None, description="Set once it ended.")
    termination_reason: str | None = Field(default=None, description="Set once it ended.")


class ChatEpisode:
    """An episode as OpenAI chat messages, in the learner's view.

    Args:
        env: The episode environment of the task's domain.
        item: The task.
        seed: The episode's seed.

    Raises:
        EpisodeError: If the conversation ends before the policy is asked anything.
    """

    def __init__(self, env: EpisodeEnv, item: EpisodeTask, seed: int) -> None:
        self.episode: Episode = env.reset(item, seed)
        if self.episode.done:
            raise EpisodeError(f"episode of {item.task_id} ended before the agent spoke")
        opening = self.episode.opening
        #: The prompt: the system prompt, then the conversation up to the policy's first turn.
        self.prompt: list[dict[str, Any]] = [
            {"role": "system", "content": opening.system_prompt},
            *chat_messages(learner_view(opening.messages)),
        ]
        #: The agent's tools, OpenAI function schemas.
        self.tools: list[dict[str, Any]] = opening.tools
        self.verdict: RewardVerdict | None = None
        self.termination_reason: str | None = None

    @property
    def done(self) -> bool:
        """Whether the episode has ended (or was cut)."""
        return self.verdict is not None

    def step(self, message: Mapping[str, Any]) -> ChatTurn:
        """Send the policy's assistant message (OpenAI format); what it hears back.

        Raises:
            EpisodeError: If the episode has ended.
        """
        if self.done:
            raise EpisodeError(f"episode of {self.episode.item.task_id} has ended")
        turn = self.episode.step(message)
        heard = chat_messages(turn.messages)
        if turn.outcome is not None:
            self.verdict = turn.outcome.verdict
            self.termination_reason = turn.outcome.termination_reason
        return ChatTurn(
            messages=heard,
            sources=[source_of(m) for m in turn.messages],
            done=turn.done,
            verdict=self.verdict,
            termination_reason=self.termination_reason,
        )

    def cut(self, why: str) -> RewardVerdict:
        """End an unfinished episode at a trainer's limit (context or turns): reward 0.

        τ²-bench scores a conversation stopped by its step limit 0 without replaying it; a
        trainer's limit stops it the same way, with ``why`` as the reason.
        """
        if self.verdict is None:
            verdict = self.episode.scorer.score(self.episode.task, [], TerminationReason.MAX_STEPS)
            self.verdict = verdict.model_copy(update={"reasons": [why]})
            self.termination_reason = TerminationReason.MAX_STEPS.value
        return self.verdict
