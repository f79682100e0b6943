"""Domain-neutral pieces of the programmatic Generators: count buckets, controls, entities.

Every programmatic Generator (airline, retail, telecom) reads the blueprint's requested
values the same way and counts tool calls against the same ranges; these are those shared
definitions, so that all domains honour ``num_write`` / ``num_read`` / ``difficulty_profile``
identically.
"""

from __future__ import annotations

from typing import Any

from evosyn.agents.generator.base import GeneratorRejection
from evosyn.records import Blueprint

#: Largest count a ``5+`` bucket or a ``hard`` profile is stretched to.
OPEN_END = 99
#: Count ranges of the bucket values of ``num_write`` / ``num_read``.
BUCKET_RANGES: dict[str, tuple[int, int]] = {
    "0": (0, 0),
    "1": (1, 1),
    "2": (2, 2),
    "3-4": (3, 4),
    "5+": (5, OPEN_END),
}
#: Tool calls per difficulty profile.
DIFFICULTY_CALLS: dict[str, tuple[int, int]] = {
    "easy": (2, 3),
    "medium": (4, 5),
    "hard": (6, OPEN_END),
}


def single(blueprint: Blueprint, factor: str) -> str:
    """The one value ``blueprint`` selects for ``factor``; GeneratorRejection otherwise."""
    values = blueprint.selections.get(factor, [])
    if len(values) != 1:
        raise GeneratorRejection(f"{factor} needs exactly one value, got {values}")
    return values[0]


def control(blueprint: Blueprint, name: str) -> str | None:
    """The requested value of a control factor (difficulty controls first), or None."""
    if name in blueprint.difficulty_controls:
        return str(blueprint.difficulty_controls[name])
    values = blueprint.selections.get(name)
    return values[0] if values else None


def collect_entities(value: Any, keys: frozenset[str], out: set[tuple[str, str]]) -> None:
    """Add every (key, id) pair of ``value`` (nested dicts and lists) whose key is in ``keys``."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in keys and isinstance(item, str | int) and not isinstance(item, bool):
                out.add((key, str(item)))
            collect_entities(item, keys, out)
    elif isinstance(value, list):
        for item in value:
            collect_entities(item, keys, out)
