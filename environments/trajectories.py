"""Trajectories in τ²-bench's message format: gold trajectories of tasks and JSON I/O."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from tau2.data_model.message import (
    AssistantMessage,
    Message,
    MultiToolMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from tau2.data_model.tasks import Action, Task

from evosyn.environments.base import Tau2Domain

_ROLES: dict[str, type[BaseModel]] = {
    "system": SystemMessage,
    "assistant": AssistantMessage,
    "user": UserMessage,
    "tool": ToolMessage,
}


def gold_trajectory(domain: Tau2Domain, task: Task) -> list[Message]:
    """The trajectory that performs ``task``'s gold actions and states its required info.

    Starts with the task's message history, then one turn per gold action (from the action's
    requestor, observation produced by executing it in order on a fresh state) and ends with
    an assistant message containing every ``communicate_info`` string.

    Args:
        domain: The task's domain.
        task: An official or synthesized task.

    Returns:
        The messages, ready for a verifier.
    """
    criteria = task.evaluation_criteria
    actions = (criteria.actions or []) if criteria else []
    return trajectory_from_actions(domain, task, actions)


def trajectory_from_actions(
    domain: Tau2Domain, task: Task, actions: Sequence[Action], closing: bool = True
) -> list[Message]:
    """A trajectory that makes ``actions`` in order, observations from executing them.

    Args:
        domain: The task's domain.
        task: The task (its initial state and ``communicate_info`` are used).
        actions: The tool calls to make, each from its requestor.
        closing: End with an assistant message stating the task's ``communicate_info``.

    Returns:
        The messages.
    """
    initial = task.initial_state
    messages: list[Message] = list(initial.message_history or []) if initial else []
    state = domain.initial_state(task, sync=False)
    # Bring the state to where the history leaves it, as a replay would.
    for message in messages:
        for call in _calls(message):
            state.execute(call)
    criteria = task.evaluation_criteria
    for index, action in enumerate(actions):
        call = ToolCall(
            id=f"gold_{index}",
            name=action.name,
            arguments=json.loads(json.dumps(action.arguments)),
            requestor=action.requestor,
        )
        turn_class = UserMessage if action.requestor == "user" else AssistantMessage
        messages.append(turn_class(role=action.requestor, content=None, tool_calls=[call]))
        messages.append(state.execute(call))
    if closing:
        info = criteria.communicate_info if criteria else None
        text = "Done." if not info else "To confirm: " + "; ".join(info) + "."
        messages.append(AssistantMessage(role="assistant", content=text))
    return messages


def _calls(message: Message) -> list[ToolCall]:
    if isinstance(message, AssistantMessage | UserMessage) and message.tool_calls:
        return list(message.tool_calls)
    return []


def parse_message(data: dict[str, Any]) -> Message:
    """One message from its JSON form (τ²-bench's message models, chosen by ``role``).

    Raises:
        ValueError: If the role is unknown or the fields do not fit the message model.
    """
    if not isinstance(data, dict):
        raise ValueError(f"a message must be a JSON object, got {type(data).__name__}")
    role = data.get("role")
    multi = role == "tool" and "tool_messages" in data
    cls: type[BaseModel] | None = MultiToolMessage if multi else _ROLES.get(str(role))
    if cls is None:
        raise ValueError(f"unknown message role {role!r}; expected one of {sorted(_ROLES)}")
    try:
        message: Message = cls.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ValueError(f"invalid {role} message: {where}: {first['msg']}") from None
    return message


class TrajectoryLine(BaseModel):
    """One line of a trajectories JSONL file: the task it attempts and its messages."""

    model_config = ConfigDict(extra="allow")

    task_id: str = Field(description="Id of the task the trajectory attempts.")
    trajectory_id: str | None = Field(default=None, description="Optional trajectory id.")
    messages: list[dict[str, Any]] = Field(description="Messages in τ²-bench's format.")


def read_trajectories(path: Path) -> Iterator[tuple[int, TrajectoryLine, list[Message]]]:
    """Parse a JSONL file of trajectories, one object per line (blank lines skipped).

    Yields:
        Line number, the line record and its parsed messages.

    Raises:
        ValueError: Naming the file and line of the first malformed line.
    """
    with path.open("rb") as handle:
        for number, data in enumerate(handle, start=1):
            try:
                raw = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ValueError(f"{path}:{number}: not UTF-8 (byte {exc.start})") from None
            if not raw.strip():
                continue
            try:
                line = TrajectoryLine.model_validate(json.loads(raw))
                messages = [parse_message(m) for m in line.messages]
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{number}: not valid JSON ({exc.msg})") from None
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"]) or "line"
                raise ValueError(f"{path}:{number}: {where}: {first['msg']}") from None
            except ValueError as exc:
                raise ValueError(f"{path}:{number}: {exc}") from None
            yield number, line, messages


def read_tasks(path: Path) -> list[Task]:
    """Parse a tasks JSON file: a list of τ²-bench tasks or an object with a ``tasks`` list.

    Raises:
        ValueError: If the file is not valid JSON or a task does not validate.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if isinstance(data, dict) and isinstance(data.get("tasks"), list):
        data = data["tasks"]
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a list of tasks or an object with 'tasks'")
    tasks: list[Task] = []
    for index, item in enumerate(data):
        try:
            tasks.append(Task.model_validate(item))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise ValueError(f"{path}: task #{index}: {where}: {first['msg']}") from None
    return tasks


def dump_message(message: Message) -> dict[str, Any]:
    """The JSON form of a message (round-trips through :func:`parse_message`)."""
    data: dict[str, Any] = message.model_dump(mode="json")
    return data
