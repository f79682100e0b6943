"""The retail policy model: rules as predicates, and the verifier hook on the live database."""

from __future__ import annotations

from typing import Any

import pytest
from tau2.data_model.message import ToolCall

from evosyn.environments import FunctionalSymbol, get_domain
from evosyn.environments.retail import policy


@pytest.fixture(scope="module")
def domain() -> Any:
    return get_domain("retail")


def _db(domain: Any) -> Any:
    return domain.blank_state().env.tools.db


def _order(db: Any, status: str) -> Any:
    return next(o for k, o in sorted(db.orders.items()) if o.status == status)


def test_official_gold_actions_never_trip_the_hook(domain: Any) -> None:
    """Every write of every official task passes ``violation``; ``broken_rule`` only flags
    calls the tool itself rejects (τ²-bench's gold makes a few such attempts)."""
    flagged = []
    for task in domain.tasks():
        state = domain.initial_state(task)
        for index, action in enumerate(task.evaluation_criteria.actions or []):
            db = state.env.tools.db
            write = domain.symbol(action.name) == FunctionalSymbol.WRITE
            assert not write or policy.violation(db, action.name, action.arguments) is None
            rule = policy.broken_rule(db, action.name, action.arguments) if write else None
            call = ToolCall(id=f"c{index}", name=action.name, arguments=action.arguments)
            observation = state.execute(call)
            if rule is not None:
                flagged.append(task.id)
                assert observation.error, (task.id, rule)
    assert flagged, "the official tasks make some calls the tool rejects"


def test_status_rules(domain: Any) -> None:
    db = _db(domain)
    pending, delivered = _order(db, "pending"), _order(db, "delivered")
    assert policy.status_allows(pending, "cancel_pending_order")[0]
    ok, why = policy.status_allows(delivered, "cancel_pending_order")
    assert not ok and "only pending orders" in why
    assert policy.status_allows(delivered, "return_delivered_order_items")[0]
    assert not policy.status_allows(pending, "exchange_delivered_order_items")[0]
    assert policy.broken_rule(db, "cancel_pending_order", {"order_id": delivered.order_id})


def test_cancellation_reasons() -> None:
    assert policy.reason_allowed("no longer needed")[0]
    assert policy.reason_allowed("ordered by mistake")[0]
    ok, why = policy.reason_allowed("found it cheaper")
    assert not ok and "no longer needed" in why


def test_variant_and_balance_rules(domain: Any) -> None:
    db = _db(domain)
    order = _order(db, "pending")
    item = order.items[0]
    product = db.products[item.product_id]
    others = [v for v in product.variants.values() if v.item_id != item.item_id and v.available]
    assert others
    assert policy.variant_swap_allowed(db, order, item.item_id, others[0].item_id)[0]
    assert not policy.variant_swap_allowed(db, order, item.item_id, item.item_id)[0]
    foreign = next(
        v.item_id
        for p in db.products.values()
        if p.product_id != item.product_id
        for v in p.variants.values()
    )
    ok, why = policy.variant_swap_allowed(db, order, item.item_id, foreign)
    assert not ok and "same product" in why
    card = next(
        m for u in db.users.values() for m in u.payment_methods.values() if m.source == "gift_card"
    )
    assert policy.gift_card_covers(card, card.balance)[0]
    assert not policy.gift_card_covers(card, card.balance + 1)[0]


def test_refund_target_rule(domain: Any) -> None:
    db = _db(domain)
    for order in db.orders.values():
        if order.status != "delivered":
            continue
        user = db.users[order.user_id]
        original = order.payment_history[0].payment_method_id
        for method in user.payment_methods.values():
            ok, _ = policy.refund_target_allowed(order, method)
            assert ok == (method.id == original or method.source == "gift_card")


def test_once_per_order_lock_blocks_later_changes(domain: Any) -> None:
    state = domain.blank_state()
    db = state.env.tools.db
    order = _order(db, "pending")
    item = order.items[0]
    new = next(
        v.item_id
        for v in db.products[item.product_id].variants.values()
        if v.item_id != item.item_id and v.available
    )
    address = {"address1": "1 Main St", "address2": "", "city": "Austin", "state": "TX"}
    address |= {"country": "USA", "zip": "78701", "order_id": order.order_id}
    assert policy.violation(db, "modify_pending_order_address", address) is None
    methods = db.users[order.user_id].payment_methods
    diff = policy.price_difference(db, order, [item.item_id], [new])
    method = next(k for k, m in sorted(methods.items()) if policy.gift_card_covers(m, diff)[0])
    call = ToolCall(
        id="lock",
        name="modify_pending_order_items",
        arguments={
            "order_id": order.order_id,
            "item_ids": [item.item_id],
            "new_item_ids": [new],
            "payment_method_id": method,
        },
    )
    assert not state.execute(call).error
    rule = policy.violation(state.env.tools.db, "modify_pending_order_address", address)
    assert rule is not None and "already had its items modified" in rule
    assert "\n" not in rule


def test_unknown_tools_and_records_pass(domain: Any) -> None:
    db = _db(domain)
    assert policy.violation(db, "book_reservation", {}) is None
    assert policy.violation(db, "cancel_pending_order", {"order_id": "#W0"}) is None
    assert policy.broken_rule(db, "modify_user_address", {"user_id": "x"}) is None


def test_procedure_rules() -> None:
    ok = [("find_user_id_by_email", "read", False), ("cancel_pending_order", "write", True)]
    assert policy.procedure_violation(ok) is None
    unauthenticated = [
        ("get_order_details", "read", False),
        ("cancel_pending_order", "write", True),
    ]
    assert "authenticated" in (policy.procedure_violation(unauthenticated) or "")
    unconfirmed = [
        ("find_user_id_by_email", "read", False),
        ("cancel_pending_order", "write", False),
    ]
    assert "confirmation" in (policy.procedure_violation(unconfirmed) or "")
    assert policy.transfer_allowed(in_scope=False)[0]
    assert not policy.transfer_allowed(in_scope=True)[0]
