"""Holds on the spend ledger: concurrent calls keep a cap as calls made one at a time do."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from evosyn.agents.gateway import BudgetExceeded
from evosyn.agents.gateway.budget import SpendLedger


def _call(ledger: SpendLedger, usd: float, round: int | None = 1, **caps: float | None) -> None:
    """One call of cost ``usd`` under a hold, counted as the gateway counts it."""
    with ledger.hold("learner", round, caps.get("budget"), caps.get("round_budget")) as held:
        time.sleep(0.01)
        ledger.add(usd, round)
        held.settle(usd)


def test_one_call_at_a_time_is_capped_as_without_holds() -> None:
    ledger = SpendLedger()
    for _ in range(3):
        _call(ledger, 4.0, round_budget=10.0)  # 0, 4, 8: each under the cap when sent
    with pytest.raises(BudgetExceeded, match=r"round 1's model calls cost \$12.0000 of its \$10"):
        _call(ledger, 4.0, round_budget=10.0)
    assert ledger.round_spent(1) == 12.0


def test_the_first_call_goes_alone_until_its_cost_is_known() -> None:
    ledger = SpendLedger()
    first = ledger.hold("learner", 1, None, 10.0)
    first.__enter__()
    second_in = threading.Event()

    def second() -> None:
        with ledger.hold("learner", 1, None, 10.0):
            second_in.set()

    thread = threading.Thread(target=second)
    thread.start()
    assert not second_in.wait(0.2)  # no cost seen yet: nothing to size the hold by
    first.__exit__(None, None, None)
    thread.join(5)
    assert second_in.is_set()


@pytest.mark.parametrize("caps", [{"round_budget": 10.0}, {"budget": 10.0}])
def test_concurrent_calls_pass_a_cap_by_at_most_one_call(caps: dict[str, float]) -> None:
    ledger = SpendLedger()
    refused: list[BudgetExceeded] = []

    def work() -> None:
        try:
            _call(ledger, 1.0, **caps)
        except BudgetExceeded as exc:
            refused.append(exc)

    with ThreadPoolExecutor(16) as pool:
        for _ in range(64):
            pool.submit(work)
    # Without holds 16 calls in flight would each pass a check at $9 and end near $25.
    assert 10.0 <= ledger.spent_usd <= 11.0
    assert len(refused) == 64 - ledger.spent_usd


def test_a_cap_leaves_room_for_many_calls_at_once_while_far_from_it() -> None:
    ledger = SpendLedger()
    _call(ledger, 1.0, round_budget=100.0)
    inside = 0
    most = 0
    lock = threading.Lock()

    def work() -> None:
        nonlocal inside, most
        with ledger.hold("learner", 1, None, 100.0) as held:
            with lock:
                inside += 1
                most = max(most, inside)
            time.sleep(0.05)
            with lock:
                inside -= 1
            ledger.add(1.0, 1)
            held.settle(1.0)

    with ThreadPoolExecutor(8) as pool:
        for _ in range(8):
            pool.submit(work)
    assert most == 8 and ledger.round_spent(1) == 9.0


def test_other_rounds_are_not_held_back_by_a_capped_round() -> None:
    ledger = SpendLedger({1: 10.0})
    with pytest.raises(BudgetExceeded):
        _call(ledger, 1.0, round=1, round_budget=10.0)
    _call(ledger, 1.0, round=2, round_budget=10.0)
    _call(ledger, 1.0, round=None, round_budget=10.0)  # outside any round: no round cap
    assert ledger.spent_usd == 12.0
