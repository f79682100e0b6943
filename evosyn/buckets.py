"""Count buckets and difficulty profiles: the one definition every role and report uses.

Count factors (``num_write``, ``num_read``, ...) take the values ``0``, ``1``, ``2``, ``3-4`` and
``5+``; ``difficulty_profile`` is ``easy``, ``medium`` or ``hard`` by the number of tool calls.
"""

from __future__ import annotations

import re

BUCKETS: tuple[str, ...] = ("0", "1", "2", "3-4", "5+")
"""The count buckets, in order."""
OPEN_END = 99
"""Largest count a ``5+`` bucket or a ``hard`` profile is stretched to."""
BUCKET_RANGES: dict[str, tuple[int, int]] = {
    "0": (0, 0),
    "1": (1, 1),
    "2": (2, 2),
    "3-4": (3, 4),
    "5+": (5, OPEN_END),
}
"""Counts (lowest, highest) of each bucket."""
DIFFICULTY_CALLS: dict[str, tuple[int, int]] = {
    "easy": (2, 3),
    "medium": (4, 5),
    "hard": (6, OPEN_END),
}
"""Tool calls (lowest, highest) of each difficulty profile."""
_BUCKET = re.compile(r"^(\d+)(?:-(\d+)|(\+))?$")


def bucket(count: int) -> str:
    """The bucket of ``count``: ``0``, ``1``, ``2``, ``3-4`` or ``5+``."""
    if count < 0:
        raise ValueError(f"count must be non-negative, got {count}")
    if count <= 2:
        return str(count)
    return "3-4" if count <= 4 else "5+"


def in_bucket(count: int, value: str) -> bool | None:
    """Whether ``count`` is in the bucket written ``value``; None if it is not a bucket.

    ``value`` is one of :data:`BUCKETS` or any ``N``, ``N-M`` or ``N+`` a model writes.
    """
    match = _BUCKET.match(value.strip())
    if match is None:
        return None
    lo = int(match.group(1))
    if match.group(3):
        return count >= lo
    hi = int(match.group(2)) if match.group(2) else lo
    return lo <= count <= hi


def difficulty_of(num_tool_calls: int) -> str:
    """Difficulty by tool-call count: easy up to 3, medium 4-5, hard 6 or more."""
    return "easy" if num_tool_calls <= 3 else "medium" if num_tool_calls <= 5 else "hard"
