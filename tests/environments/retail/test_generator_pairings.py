"""Which further request a retail caller adds: a cancellation beside a return or exchange.

τ²-bench's commonest pairing of two orders is a pending order cancelled and a delivered one
returned from or exchanged on (``cancel_pending_order`` with ``return_delivered_order_items``:
6 official tasks; with ``exchange_delivered_order_items``: 1). Among two-write tasks led by a
return or an exchange, the cancellation is the further request made most often.
"""

from __future__ import annotations

from collections import Counter

import pytest
from synthesis_checks import hand_blueprint

from evosyn.environments.retail.generator import RetailGenerator
from evosyn.environments.shapes import write_combination

SEEDS = 40
CANCEL = "cancel_pending_order"


@pytest.mark.parametrize(
    ("family", "main"),
    [
        ("return_delivered_order", "return_delivered_order_items"),
        ("exchange_delivered_order", "exchange_delivered_order_items"),
    ],
)
def test_a_cancellation_is_the_commonest_request_beside_a_delivered_order(
    family: str, main: str
) -> None:
    generator = RetailGenerator()
    bp = hand_blueprint(
        family,
        "fulfill",
        focus=["order_status_precondition"],
        patterns=["authenticate_then_act"],
        controls={"num_write": "2"},
        difficulty="hard",
        blueprint_id=f"bp-pair-{family}",
    )
    further: Counter[str] = Counter()
    for seed in range(SEEDS):
        writes = write_combination("retail", generator.generate(bp, seed).task)
        assert main in writes
        further.update(writes - {main})
    (top, count), (_, runner_up) = further.most_common(2)
    assert top == CANCEL and count > runner_up, further
