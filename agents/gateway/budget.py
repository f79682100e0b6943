"""What a campaign's model calls have cost, in all and per round, shared by its gateways.

The spend of a campaign is its ``llm_calls`` rows in the lake (summed once, when the first of
its gateways is bound to it in a process) plus every attempt priced in this process since. It
therefore survives a restart (a resumed campaign starts from what its rows say) and counts a
call the moment it returns, before its row is flushed. A round's spend is the same sum over
the rows of that round (the round a call's row is stored under, so the Reflector's review of
round r counts toward round r).
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path

logger = logging.getLogger(__name__)


class SpendLedger:
    """The USD spent by one campaign's model calls, in all and per round (thread-safe).

    Args:
        stored: USD already spent, by round (the campaign's stored rows).

    """

    def __init__(self, stored: Mapping[int, float] | None = None) -> None:
        self._lock = threading.Lock()
        # None: calls made outside any round (they count toward the campaign only).
        self._by_round: defaultdict[int | None, float] = defaultdict(float)
        for round, usd in (stored or {}).items():
            self._by_round[round] += usd

    @property
    def spent_usd(self) -> float:
        """USD spent so far, all rounds: the stored rows plus what this process added."""
        with self._lock:
            return sum(self._by_round.values())

    def round_spent(self, round: int) -> float:
        """USD spent so far by the calls of ``round``."""
        with self._lock:
            return self._by_round.get(round, 0.0)

    def add(self, usd: float, round: int | None = None) -> None:
        """Count ``usd`` more, toward ``round`` when the call belongs to one."""
        with self._lock:
            self._by_round[round] += usd


_LEDGERS: dict[str, SpendLedger] = {}
_LEDGERS_LOCK = threading.Lock()


def stored_spend_by_round(campaign_id: str, lake_root: str | Path | None) -> dict[int, float]:
    """USD of the ``llm_calls`` rows of ``campaign_id`` in the lake at ``lake_root``, by round.

    Empty when there is no lake there yet (a new campaign). An S3 lake is reached with the
    endpoint boto3 finds in the environment (``AWS_ENDPOINT_URL``).
    """
    if lake_root is None:
        return {}
    from evosyn.records import LLMCall
    from evosyn.storage import Lake
    from evosyn.storage.lake import NoLakeError

    try:
        lake = Lake(lake_root, create=False)
    except NoLakeError:
        return {}
    spent: defaultdict[int, float] = defaultdict(float)
    for row in lake.read(LLMCall, campaign_id):
        spent[row.round] += row.cost or 0.0
    return dict(spent)


def ledger_for(scope: str, campaign_id: str, lake_root: str | Path | None) -> SpendLedger:
    """The process's ledger of the campaign ``scope`` names, read from the lake on first use."""
    with _LEDGERS_LOCK:
        ledger = _LEDGERS.get(scope)
        if ledger is None:
            ledger = SpendLedger(stored_spend_by_round(campaign_id, lake_root))
            _LEDGERS[scope] = ledger
        return ledger


def forget_spend() -> None:
    """Forget every campaign's ledger, as a new process starts without them.

    The next gateway bound to a campaign reads its spend from the lake again.
    """
    with _LEDGERS_LOCK:
        _LEDGERS.clear()
