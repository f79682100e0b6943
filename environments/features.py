"""Realized features of a trajectory, re-derived from the tool calls it actually made.

The Planner asks for properties (how many writes, which task family...); these functions say
which properties a trajectory really has, so the Verifier can record them and Feedback can
compare intended with realized coverage.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from tau2.data_model.message import (
    AssistantMessage,
    Message,
    MultiToolMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)

from evosyn.environments.base import FunctionalSymbol, Tau2Domain

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_SOURCE_SYMBOLS = {FunctionalSymbol.READ, FunctionalSymbol.WRITE, FunctionalSymbol.TRANSFER}
_DECISIVE = (FunctionalSymbol.WRITE, FunctionalSymbol.COMPUTE, FunctionalSymbol.TRANSFER)


def bucket(count: int) -> str:
    """The count bucket used for factor values: ``0``, ``1``, ``2``, ``3-4`` or ``5+``."""
    if count < 0:
        raise ValueError(f"count must be non-negative, got {count}")
    if count <= 2:
        return str(count)
    return "3-4" if count <= 4 else "5+"


class RealizedFeatures(BaseModel):
    """Properties a trajectory realized through its tool calls."""

    model_config = ConfigDict(extra="forbid")

    num_read: int = Field(ge=0, description="Calls of read tools.")
    num_write: int = Field(ge=0, description="Calls of write tools.")
    num_compute: int = Field(ge=0, description="Calls of compute tools (e.g. calculate).")
    num_transfer: int = Field(ge=0, description="Calls of transfer tools (hand-offs).")
    num_tool_calls: int = Field(ge=0, description="All tool calls, unknown tools included.")
    num_numeric_args: int = Field(
        ge=0,
        description="Numeric arguments not seen earlier in a user turn or a non-compute "
        "observation: values the agent derived.",
    )
    functional_pattern: str = Field(
        description="Symbols of the calls with runs merged, e.g. read-write-read; 'none'."
    )
    decisive_signature: list[str] = Field(
        default_factory=list,
        description="Ordered write/compute/transfer calls as symbol:tool (user tools: "
        "symbol:user/tool).",
    )
    entities: dict[str, list[str]] = Field(
        default_factory=dict, description="Entity argument name -> ids touched, sorted."
    )
    task_family: str = Field(description="Task family implied by the writes.")
    task_families: list[str] = Field(
        default_factory=list, description="Every family some write implies, in priority order."
    )
    unknown_tools: list[str] = Field(
        default_factory=list, description="Called tools the domain does not have."
    )

    def as_values(self) -> dict[str, str]:
        """Flat factor-style values for ``Verification.realized``."""
        return {
            "num_read": bucket(self.num_read),
            "num_write": bucket(self.num_write),
            "num_compute": bucket(self.num_compute),
            "num_transfer": bucket(self.num_transfer),
            "num_tool_calls": bucket(self.num_tool_calls),
            "num_numeric_args": bucket(self.num_numeric_args),
            "functional_pattern": self.functional_pattern,
            "decisive_signature": " > ".join(self.decisive_signature) or "none",
            "entities": ";".join(f"{k}={','.join(v)}" for k, v in sorted(self.entities.items())),
            "task_family": self.task_family,
        }


def iter_tool_calls(messages: Sequence[Message]) -> Iterator[ToolCall]:
    """Tool calls of agent and user turns, in order."""
    for message in messages:
        if isinstance(message, AssistantMessage | UserMessage) and message.tool_calls:
            yield from message.tool_calls


def _numbers_in_text(text: str | None) -> set[float]:
    if not text:
        return set()
    return {float(m) for m in _NUMBER.findall(text.replace(",", ""))}


def _numeric_leaves(value: Any) -> Iterator[float]:
    if isinstance(value, bool):
        return
    if isinstance(value, int | float):
        yield float(value)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _numeric_leaves(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _numeric_leaves(item)


def _entities(value: Any, keys: frozenset[str], out: dict[str, set[str]]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if key in keys:
                ids = item if isinstance(item, list) else [item]
                for one in ids:
                    if isinstance(one, str | int) and not isinstance(one, bool):
                        out.setdefault(key, set()).add(str(one))
            _entities(item, keys, out)
    elif isinstance(value, list):
        for item in value:
            _entities(item, keys, out)


def collapse(symbols: Sequence[str]) -> str:
    """Join symbols with '-' after merging runs of equal ones; 'none' for no symbols."""
    merged: list[str] = []
    for symbol in symbols:
        if not merged or merged[-1] != symbol:
            merged.append(symbol)
    return "-".join(merged) or "none"


def realized_features(domain: Tau2Domain, messages: Sequence[Message]) -> RealizedFeatures:
    """Features a trajectory realized, from the tool calls it made (errors included).

    Args:
        domain: The domain whose tools the trajectory calls.
        messages: The trajectory in τ²-bench's message format.

    Returns:
        The realized features.
    """
    knowledge = domain.knowledge
    counts = dict.fromkeys(FunctionalSymbol, 0)
    symbols: list[str] = []
    signature: list[str] = []
    unknown: list[str] = []
    families: set[str] = set()
    entities: dict[str, set[str]] = {}
    seen_numbers: set[float] = set()
    call_symbols: dict[str, FunctionalSymbol | None] = {}
    derived = 0
    total = 0

    def observe(tool_message: ToolMessage) -> None:
        # Observations of compute tools are derivations themselves, not sources.
        if call_symbols.get(tool_message.id) in _SOURCE_SYMBOLS:
            seen_numbers.update(_numbers_in_text(tool_message.content))

    for message in messages:
        if isinstance(message, ToolMessage):
            observe(message)
            continue
        if isinstance(message, MultiToolMessage):
            for tool_message in message.tool_messages:
                observe(tool_message)
            continue
        if isinstance(message, UserMessage):
            seen_numbers.update(_numbers_in_text(message.content))
        if not isinstance(message, AssistantMessage | UserMessage) or not message.tool_calls:
            continue
        for call in message.tool_calls:
            total += 1
            spec = domain.tool_spec(call.name, call.requestor)
            call_symbols[call.id] = None if spec is None else spec.symbol
            derived += sum(1 for n in _numeric_leaves(call.arguments) if n not in seen_numbers)
            _entities(call.arguments, knowledge.entity_keys, entities)
            if spec is None:
                unknown.append(call.name)
                continue
            counts[spec.symbol] += 1
            symbols.append(spec.symbol.value)
            if spec.symbol in _DECISIVE:
                who = "user/" if call.requestor == "user" else ""
                signature.append(f"{spec.symbol.value}:{who}{call.name}")
            if spec.symbol == FunctionalSymbol.WRITE and call.name in knowledge.family_by_write:
                families.add(knowledge.family_by_write[call.name])

    ordered = [f for f in knowledge.family_priority if f in families]
    ordered += sorted(families - set(ordered))
    return RealizedFeatures(
        num_read=counts[FunctionalSymbol.READ],
        num_write=counts[FunctionalSymbol.WRITE],
        num_compute=counts[FunctionalSymbol.COMPUTE],
        num_transfer=counts[FunctionalSymbol.TRANSFER],
        num_tool_calls=total,
        num_numeric_args=derived,
        functional_pattern=collapse(symbols),
        decisive_signature=signature,
        entities={k: sorted(v) for k, v in entities.items()},
        task_family=ordered[0] if ordered else knowledge.default_family,
        task_families=ordered,
        unknown_tools=unknown,
    )
