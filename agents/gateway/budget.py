"""What a campaign's model calls have cost, shared by the gateways of its roles.

The spend of a campaign is its ``llm_calls`` rows in the lake (summed once, when the first of
its gateways is bound to it in a process) plus every attempt priced in this process since. It
therefore survives a restart (a resumed campaign starts from what its rows say) and counts a
call the moment it returns, before its row is flushed.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

logger = logging.getLogger(__name__)


class SpendLedger:
    """The USD spent by one campaign's model calls (thread-safe)."""

    def __init__(self, stored_usd: float = 0.0) -> None:
        self._lock = threading.Lock()
        self._spent = stored_usd

    @property
    def spent_usd(self) -> float:
        """USD spent so far: the stored rows plus what this process added."""
        with self._lock:
            return self._spent

    def add(self, usd: float) -> None:
        """Count ``usd`` more."""
        with self._lock:
            self._spent += usd


_LEDGERS: dict[str, SpendLedger] = {}
_LEDGERS_LOCK = threading.Lock()


def stored_spend(campaign_id: str, lake_root: str | Path | None) -> float:
    """USD of the ``llm_calls`` rows of ``campaign_id`` in the lake at ``lake_root``.

    0 when there is no lake there yet (a new campaign). An S3 lake is reached with the
    endpoint boto3 finds in the environment (``AWS_ENDPOINT_URL``).
    """
    if lake_root is None:
        return 0.0
    from evosyn.records import LLMCall
    from evosyn.storage import Lake
    from evosyn.storage.lake import NoLakeError

    try:
        lake = Lake(lake_root, create=False)
    except NoLakeError:
        return 0.0
    return float(sum(row.cost or 0.0 for row in lake.read(LLMCall, campaign_id)))


def ledger_for(scope: str, campaign_id: str, lake_root: str | Path | None) -> SpendLedger:
    """The process's ledger of the campaign ``scope`` names, read from the lake on first use."""
    with _LEDGERS_LOCK:
        ledger = _LEDGERS.get(scope)
        if ledger is None:
            ledger = SpendLedger(stored_spend(campaign_id, lake_root))
            _LEDGERS[scope] = ledger
        return ledger


def forget_spend() -> None:
    """Forget every campaign's ledger, as a new process starts without them.

    The next gateway bound to a campaign reads its spend from the lake again.
    """
    with _LEDGERS_LOCK:
        _LEDGERS.clear()
