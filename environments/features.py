"""Realized features of a trajectory, re-derived from the tool calls it actually made.

The Planner asks for properties (how many writes, which task family...); these functions say
which properties a trajectory really has, so the Verifier can record them and Feedback can
compare intended with realized coverage.

The ``computation`` a trajectory realized is read from its tool calls alone, the strongest
kind present winning (``conditional`` > ``constrained_opt`` > ``aggregate`` > ``none``):

* ``conditional``: a compute call (e.g. ``calculate``) whose expression uses an amount the
  user stated in money form (``$250``): the agent checks a computed quantity against the
  user's condition before it decides whether to act;
* ``constrained_opt``: a write picks some, but not all, of two or more alternatives (same
  entity key, e.g. ``flight_number``) that one earlier read returned as a list, e.g. the
  cheapest of the flights a search found (which one is right is the optimisation; the rule
  sees only that a choice among options was made);
* ``aggregate``: any other compute call, or a numeric argument no earlier user turn or source
  observation stated (a derived value such as a total or a difference);
* ``none``: none of these. Numbers the agent only says (never passes to a tool) do not count.

The ``tool_use_patterns`` a trajectory shows (values of airline's seed factor
``tool_use_pattern``; other domains name their patterns differently and are not derived yet):

* ``search_compare_then_book``: a write picks one of several alternatives a read listed;
* ``lookup_verify_then_modify``: a write acts on an entity an earlier read looked up;
* ``multi_entity_retrieval``: reads cover two or more entities of one kind;
* ``price_or_fee_recalculation``: some evidence of ``aggregate`` or ``conditional`` above (a
  calculation or a derived amount), even where a stronger kind is the computation;
* ``state_change_with_confirmation``: a user turn comes right before a write (the answer to
  the agent's request for confirmation);
* ``partial_update_or_split_action``: two or more writes, or a write that updates part of a
  record (an ``update_`` / ``modify_`` tool);
* ``policy_check_before_action`` is not derivable from tool calls (the check is the agent's
  reasoning over what it read), so it is never listed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
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

from evosyn.buckets import bucket
from evosyn.environments.base import FunctionalSymbol, Tau2Domain

# A number is a token of its own: digits inside an id (``HAT005``, ``credit_card_8191674``) or a
# date (``2024-05-20``) are not a number anyone stated, so a derived argument equal to them
# still counts as derived.
_NUMBER = re.compile(r"(?<![\w.\-])-?\d+(?:\.\d+)?(?![\w\-])")
_AMOUNT = re.compile(r"\$\s?(\d+(?:\.\d+)?)")
_SOURCE_SYMBOLS = {FunctionalSymbol.READ, FunctionalSymbol.WRITE, FunctionalSymbol.TRANSFER}
_DECISIVE = (FunctionalSymbol.WRITE, FunctionalSymbol.COMPUTE, FunctionalSymbol.TRANSFER)
#: Values of the ``computation`` feature, weakest first (the strongest present is realized).
COMPUTATIONS = ("none", "aggregate", "constrained_opt", "conditional")
#: ``tool_use_pattern`` values no trajectory can show (see the module docstring).
UNDERIVABLE_PATTERNS = frozenset({"policy_check_before_action"})
#: Factor -> realized key listing the several values a trajectory shows, separated by ';'.
SET_KEYS = {
    "tool_use_pattern": "tool_use_patterns",
    # Set by synthesis from the dialogue (environments.dialogue_acts), not by the replay.
    "interaction_challenge": "interaction_challenges",
    # Read from the gold (environments.shapes): a telecom task may set up several faults.
    "fault_kind": "fault_kinds",
}
_PARTIAL_WRITES = ("update_", "modify_")


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
    tool_use_patterns: list[str] | None = Field(
        default=None,
        description="tool_use_pattern values the calls show, sorted (see the module docstring); "
        "None where the domain's patterns are not derived.",
    )
    computation: str = Field(
        default="none",
        description="What the agent computed before acting: none, aggregate, constrained_opt "
        "or conditional (see the module docstring for the rule).",
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
            "computation": self.computation,
        } | (
            {}
            if self.tool_use_patterns is None
            else {"tool_use_patterns": ";".join(self.tool_use_patterns) or "none"}
        )


def factor_values(realized: Mapping[str, str], factor: str) -> tuple[str, ...]:
    """The values of ``factor`` that flat realized values (``as_values``) show, if any."""
    key = SET_KEYS.get(factor)
    if key is None:
        return (realized[factor],) if factor in realized else ()
    return tuple(v for v in realized.get(key, "").split(";") if v and v != "none")


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


def string_leaves(value: Any) -> Iterator[str]:
    """Every string in a JSON-like ``value`` (tool-call arguments), depth first."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from string_leaves(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from string_leaves(item)


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


def _amounts_in_text(text: str | None) -> set[float]:
    if not text:
        return set()
    return {float(m) for m in _AMOUNT.findall(text.replace(",", ""))}


def _alternatives(content: str | None, keys: frozenset[str]) -> dict[str, set[str]]:
    """Entity key -> values of a read result that is a list of two or more records."""
    if not content or not content.lstrip().startswith("["):
        return {}
    try:
        rows = json.loads(content)
    except json.JSONDecodeError:
        return {}
    out: dict[str, set[str]] = {}
    if not isinstance(rows, list) or len(rows) < 2:
        return out
    for row in rows:
        if isinstance(row, dict):
            for key in keys & row.keys():
                out.setdefault(key, set()).add(str(row[key]))
    return {k: v for k, v in out.items() if len(v) >= 2}


def _picks_one_of(arguments: Any, options: list[dict[str, set[str]]], keys: frozenset[str]) -> bool:
    """Whether a call's entity arguments choose some but not all of some listed alternatives."""
    used: dict[str, set[str]] = {}
    _entities(arguments, keys, used)
    for listed in options:
        for key, values in listed.items():
            chosen = used.get(key, set()) & values
            if chosen and chosen != values:
                return True
    return False


def collapse(symbols: Sequence[str]) -> str:
    """Join symbols with '-' after merging runs of equal ones; 'none' for no symbols."""
    merged: list[str] = []
    for symbol in symbols:
        if not merged or merged[-1] != symbol:
            merged.append(symbol)
    return "-".join(merged) or "none"


def realized_features(
    domain: Tau2Domain, messages: Sequence[Message], refused: Sequence[str] = ()
) -> RealizedFeatures:
    """Features a trajectory realized, from the tool calls it made (errors included).

    Args:
        domain: The domain whose tools the trajectory calls.
        messages: The trajectory in τ²-bench's message format.
        refused: The write tools the user asked for and the agent refused
            (``SynthTask.refused``): a refusal's family is that of the write it refused,
            which no tool call shows.

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
    user_amounts: set[float] = set()
    listed: list[dict[str, set[str]]] = []
    kinds: set[str] = set()
    patterns: set[str] = set()
    looked_up: dict[str, set[str]] = {}
    answered = False  # a user turn since the last tool call
    writes = 0
    derived = 0
    total = 0

    def observe(tool_message: ToolMessage) -> None:
        # Observations of compute tools are derivations themselves, not sources.
        symbol = call_symbols.get(tool_message.id)
        if symbol in _SOURCE_SYMBOLS:
            seen_numbers.update(_numbers_in_text(tool_message.content))
        if symbol == FunctionalSymbol.READ:
            options = _alternatives(tool_message.content, knowledge.entity_keys)
            if options:
                listed.append(options)

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
            user_amounts.update(_amounts_in_text(message.content))
            answered = answered or bool(message.content)
        if not isinstance(message, AssistantMessage | UserMessage) or not message.tool_calls:
            continue
        for call in message.tool_calls:
            total += 1
            spec = domain.tool_spec(call.name, call.requestor)
            call_symbols[call.id] = None if spec is None else spec.symbol
            fresh = sum(1 for n in _numeric_leaves(call.arguments) if n not in seen_numbers)
            derived += fresh
            if fresh:
                kinds.add("aggregate")
            _entities(call.arguments, knowledge.entity_keys, entities)
            if spec is None:
                unknown.append(call.name)
                continue
            counts[spec.symbol] += 1
            symbols.append(spec.symbol.value)
            if spec.symbol == FunctionalSymbol.COMPUTE:
                used = {n for text in string_leaves(call.arguments) for n in _numbers_in_text(text)}
                kinds.add("conditional" if used & user_amounts else "aggregate")
            elif spec.symbol == FunctionalSymbol.READ:
                _entities(call.arguments, knowledge.entity_keys, looked_up)
            elif spec.symbol == FunctionalSymbol.WRITE:
                writes += 1
                if _picks_one_of(call.arguments, listed, knowledge.entity_keys):
                    kinds.add("constrained_opt")
                    patterns.add("search_compare_then_book")
                touched: dict[str, set[str]] = {}
                _entities(call.arguments, knowledge.entity_keys, touched)
                if any(v & looked_up.get(k, set()) for k, v in touched.items()):
                    patterns.add("lookup_verify_then_modify")
                if answered:
                    patterns.add("state_change_with_confirmation")
                if call.name.startswith(_PARTIAL_WRITES):
                    patterns.add("partial_update_or_split_action")
            answered = False
            if spec.symbol in _DECISIVE:
                who = "user/" if call.requestor == "user" else ""
                signature.append(f"{spec.symbol.value}:{who}{call.name}")
            if spec.symbol == FunctionalSymbol.WRITE and call.name in knowledge.family_by_write:
                families.add(knowledge.family_by_write[call.name])

    # A refusal is about the write it refused, not the look-ups around it; ranked with the
    # writes made (a telecom caller may fix their phone before a refuel is refused).
    families.update(knowledge.family_by_write[t] for t in refused if t in knowledge.family_by_write)
    computation = max(kinds, key=COMPUTATIONS.index, default="none")
    if writes >= 2:
        patterns.add("partial_update_or_split_action")
    if any(len(v) >= 2 for v in looked_up.values()):
        patterns.add("multi_entity_retrieval")
    if kinds & {"aggregate", "conditional"}:
        patterns.add("price_or_fee_recalculation")
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
        tool_use_patterns=sorted(patterns) if knowledge.tool_use_patterns else None,
        computation=computation,
    )
