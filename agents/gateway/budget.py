"""What a campaign's model calls have cost, in all and per round, shared by its gateways.

The spend of a campaign is its ``llm_calls`` rows in the lake (summed once, when the first of
its gateways is bound to it in a process) plus every attempt priced in this process since. It
therefore survives a restart (a resumed campaign starts from what its rows say) and counts a
call the moment it returns, before its row is flushed. A round's spend is the same sum over
the rows of that round (the round a call's row is stored under, so the Reflector's review of
round r counts toward round r).

Calls in flight at once would each pass a check of the spend so far and together overshoot a
cap by all of them. A caller that runs calls concurrently therefore takes a ``hold`` on the
ledger for each call: the call is sent only when the caps leave room for it beside the calls
already held (each held at the largest cost of one call seen so far; before any call has come
back, one at a time), and otherwise waits until a held call returns. A capped spend then passes
its cap by at most one call, as a serial run's does, give or take a call that costs more than
any before it.
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from evosyn.agents.gateway.errors import BudgetExceeded

logger = logging.getLogger(__name__)


class SpendLedger:
    """The USD spent by one campaign's model calls, in all and per round (thread-safe).

    Args:
        stored: USD already spent, by round (the campaign's stored rows).

    """

    def __init__(self, stored: Mapping[int, float] | None = None) -> None:
        self._lock = threading.Condition()
        # None: calls made outside any round (they count toward the campaign only).
        self._by_round: defaultdict[int | None, float] = defaultdict(float)
        for round, usd in (stored or {}).items():
            self._by_round[round] += usd
        # Calls in flight under a hold, by round: how many, and the USD held for them.
        self._holds: defaultdict[int | None, int] = defaultdict(int)
        self._held: defaultdict[int | None, float] = defaultdict(float)
        # The largest cost of one call that came back under a hold (None: none has yet).
        self._largest: float | None = None

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
            self._lock.notify_all()

    @contextmanager
    def hold(
        self,
        role: str,
        round: int | None,
        budget_usd: float | None,
        round_budget_usd: float | None,
    ) -> Iterator[SpendHold]:
        """Hold room under the caps for one call of ``role`` while the block runs it.

        Waits while the calls already held leave no room for this one under ``budget_usd``
        (the campaign's cap) or ``round_budget_usd`` (``round``'s); the block reports what the
        call cost with :meth:`SpendHold.settle`, and the cost itself is counted by :meth:`add`
        as usual. With no call held, a call is let through whenever the spend is under its
        caps, so calls made one at a time are capped exactly as without a hold.

        Raises:
            BudgetExceeded: the spend has reached a cap (checked again after every wait).
        """
        caps: list[tuple[int | None, float | None]] = [(None, budget_usd)]
        if round is not None:
            caps.append((round, round_budget_usd))
        with self._lock:
            while not self._room(role, caps):
                self._lock.wait()
            estimate = self._largest or 0.0
            self._holds[round] += 1
            self._held[round] += estimate
        taken = SpendHold()
        try:
            yield taken
        finally:
            with self._lock:
                self._holds[round] -= 1
                self._held[round] -= estimate
                if taken.usd is not None:
                    self._largest = max(self._largest or 0.0, taken.usd)
                self._lock.notify_all()

    def _room(self, role: str, caps: list[tuple[int | None, float | None]]) -> bool:
        """Whether one more call fits under ``caps`` (scope None: every round); lock held."""
        fits = True
        for scope, cap in caps:
            if cap is None:
                continue
            rounds = list(self._by_round) if scope is None else [scope]
            spent = sum(self._by_round.get(r, 0.0) for r in rounds)
            if spent >= cap:
                raise BudgetExceeded(role, cap, spent, scope)
            held_rounds = list(self._holds) if scope is None else [scope]
            holds = sum(self._holds.get(r, 0) for r in held_rounds)
            held = sum(self._held.get(r, 0.0) for r in held_rounds)
            if holds and (self._largest is None or spent + held + self._largest > cap):
                fits = False
        return fits


class SpendHold:
    """One call's place under the caps (see :meth:`SpendLedger.hold`)."""

    def __init__(self) -> None:
        self.usd: float | None = None

    def settle(self, usd: float | None) -> None:
        """Report what the call cost (None: nothing known); it sizes the holds that follow."""
        self.usd = usd


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
