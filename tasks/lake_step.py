"""One rule for every round task: reuse the stored output, or run the step and store it.

A task's output is found again through its *done-marker*: the rows its ``stored`` lookup reads.
The step writes, in this order, the model calls it made (so a kill after them loses no
accounting: the gateway cache answers the rerun), then its other rows, then the marker. A kill
anywhere before the marker leaves the step undone and the rerun rewrites the same batch keys,
so nothing is lost or duplicated; after the marker the step is never run again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from evosyn.agents.gateway import Gateway
from evosyn.agents.gateway.gateway import calls_batch
from evosyn.records import LakeRecord
from evosyn.storage import Lake

R = TypeVar("R")

Rows = tuple[Sequence[LakeRecord], str]
"""Records of one type and their batch key."""


@dataclass(frozen=True)
class Ran(Generic[R]):
    """What a step computed and the rows that publish it."""

    output: R
    marker: Sequence[Rows]
    """The done-marker: what the step's ``stored`` lookup reads back; written last."""
    rows: Sequence[Rows] = field(default=())
    """Anything else the step publishes; written before the marker."""


@dataclass(frozen=True)
class Calls:
    """Where a step's model calls land: the gateways and the round and batch prefix."""

    gateways: Iterable[Gateway]
    campaign_id: str
    round: int
    batch: str


def lake_step(
    lake: Lake, stored: Callable[[], R | None], run: Callable[[], Ran[R]], calls: Calls | None
) -> R:
    """``stored()`` if it finds the output, else ``run()``'s output once its rows are written.

    The model calls are written even when ``run`` raises: every attempt is accounted for.
    """
    found = stored()
    if found is not None:
        return found
    if calls is not None:
        # The step's calls are charged to the round their rows are stored under.
        for gateway in calls.gateways:
            gateway.for_round(calls.round)
    try:
        ran = run()
    finally:
        if calls is not None:
            flush_calls(lake, calls)
    for records, batch in (*ran.rows, *ran.marker):
        if records:
            lake.write(records, batch=batch)
    return ran.output


def flush_calls(lake: Lake, calls: Calls) -> list[str]:
    """Write every gateway's pending ``llm_calls`` rows under batches ``{batch}-{role}-*``."""
    keys = []
    for gateway in calls.gateways:
        with gateway.drain(calls.campaign_id, calls.round) as rows:
            if rows:
                batch = calls_batch(f"{calls.batch}-{gateway.role}", rows)
                keys.append(lake.write(rows, batch=batch))
    return keys
