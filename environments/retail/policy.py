"""The retail policy model: τ²-bench retail's written rules as executable predicates.

Written from the domain's policy (``policy.md``): only pending orders can be cancelled or
modified, only delivered ones returned or exchanged; item modification happens once per
order and ends further changes; an item may only become another available variant of the
same product; refunds go to the original payment method or a gift card; a gift card must
cover what it pays; a cancellation needs one of two reasons; the agent authenticates the
caller, confirms every write and transfers only requests outside its actions.

The Generator decides outcomes with these predicates; the replay verifier calls
:func:`violation` on the live database just before each assistant write.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tau2.domains.retail.data_model import Order, PaymentMethod, RetailDB

from evosyn.environments.base import lookup
from evosyn.environments.kit.acting import method_words
from evosyn.environments.kit.phrasing import money

#: The only reasons a pending order may be cancelled for.
CANCEL_REASONS = ("no longer needed", "ordered by mistake")
#: Tools that authenticate the caller.
AUTH_TOOLS = frozenset({"find_user_id_by_email", "find_user_id_by_name_zip"})
#: What the agent can do; anything else is out of scope (and may be transferred).
IN_SCOPE = (
    "cancel or modify pending orders",
    "return or exchange delivered orders",
    "modify the default user address",
    "give information about the caller's own profile, orders and products",
)
#: Assistant writes and the order status each needs (None: no order involved).
REQUIRED_STATUS: dict[str, str | None] = {
    "cancel_pending_order": "pending",
    "modify_pending_order_items": "pending",
    "modify_pending_order_address": "pending",
    "modify_pending_order_payment": "pending",
    "return_delivered_order_items": "delivered",
    "exchange_delivered_order_items": "delivered",
    "modify_user_address": None,
}


def status_allows(order: Order, tool: str) -> tuple[bool, str]:
    """Whether ``order``'s status lets ``tool`` act on it, and why not."""
    wanted = REQUIRED_STATUS.get(tool)
    if wanted is None or order.status == wanted:
        return True, ""
    if wanted == "pending" and order.status.startswith("pending"):
        return False, (
            f"order {order.order_id} already had its items modified, so it cannot be "
            "modified or cancelled anymore"
        )
    verb = {"pending": "cancelled or modified", "delivered": "returned or exchanged"}[wanted]
    return False, (f"order {order.order_id} is {order.status}; only {wanted} orders can be {verb}")


def reason_allowed(reason: str) -> tuple[bool, str]:
    """Whether a cancellation reason is acceptable, and why not."""
    if reason in CANCEL_REASONS:
        return True, ""
    return False, (
        f"the reason {reason!r} is not acceptable; a cancellation must be "
        f"'{CANCEL_REASONS[0]}' or '{CANCEL_REASONS[1]}'"
    )


def variant_swap_allowed(db: RetailDB, order: Order, old: str, new: str) -> tuple[bool, str]:
    """Whether item ``old`` of ``order`` may become item ``new`` (same product, other option)."""
    item = next((i for i in order.items if i.item_id == old), None)
    if item is None:
        return False, f"item {old} is not in order {order.order_id}"
    if old == new:
        return False, f"item {new} is the same item as {old}; a change needs another option"
    product = db.products.get(item.product_id)
    variant = None if product is None else product.variants.get(new)
    if variant is None:
        return False, (
            f"item {new} is not a variant of {item.name}; an item can only change to another "
            "option of the same product"
        )
    if not variant.available:
        return False, f"item {new} ({item.name}) is not available"
    return True, ""


def price_difference(db: RetailDB, order: Order, old: Sequence[str], new: Sequence[str]) -> float:
    """What swapping items ``old`` for ``new`` costs (negative: a refund), rounded to cents."""
    total = 0.0
    for old_id, new_id in zip(old, new, strict=True):
        item = next(i for i in order.items if i.item_id == old_id)
        total += db.products[item.product_id].variants[new_id].price - item.price
    return round(total, 2)


def gift_card_covers(method: PaymentMethod, amount: float) -> tuple[bool, str]:
    """Whether a payment method can pay ``amount`` (only gift cards have a balance)."""
    if method.source != "gift_card" or method.balance >= amount:
        return True, ""
    return False, (
        f"the gift card has a balance of {money(method.balance)}, less than the "
        f"{money(amount)} it would have to pay"
    )


def refund_target_allowed(order: Order, method: PaymentMethod) -> tuple[bool, str]:
    """Whether a return's refund may go to ``method``: the original method or a gift card."""
    original = order.payment_history[0].payment_method_id if order.payment_history else None
    if method.id == original or method.source == "gift_card":
        return True, ""
    return False, (
        f"a refund must go to the original payment method or a gift card, not "
        f"{method_words(method.model_dump(), 'your')}"
    )


def payment_change_allowed(order: Order, method: PaymentMethod) -> tuple[bool, str]:
    """Whether a pending order's payment may move to ``method``."""
    history = order.payment_history
    if len(history) != 1 or history[0].transaction_type != "payment":
        return False, f"order {order.order_id} does not have exactly one payment to move"
    if history[0].payment_method_id == method.id:
        return False, (
            f"{method_words(method.model_dump(), 'your')} already pays for order {order.order_id}"
        )
    return gift_card_covers(method, history[0].amount)


def transfer_allowed(in_scope: bool) -> tuple[bool, str]:
    """Whether a transfer to a human is right: only for requests outside the agent's actions."""
    if in_scope:
        return False, "the request is within the agent's actions, so it must not be transferred"
    return True, ""


def procedure_violation(calls: Sequence[tuple[str, str, bool]]) -> str | None:
    """The first conversation-level rule broken by a sequence of assistant calls, or None.

    Args:
        calls: ``(tool, symbol, confirmed)`` per assistant call in order, where ``symbol`` is
            the call's functional symbol (``read``, ``write``...) and ``confirmed`` says
            whether the user said yes right before it.
    """
    authenticated = False
    for tool, symbol, confirmed in calls:
        if tool in AUTH_TOOLS:
            authenticated = True
        elif symbol == "write" and not authenticated:
            return f"{tool}: the user must be authenticated (email or name + zip) first"
        elif symbol == "write" and not confirmed:
            return f"{tool}: a write needs the user's explicit confirmation right before it"
    return None


def broken_rule(db: RetailDB, tool: str, arguments: Mapping[str, object]) -> str | None:
    """The first retail rule an assistant write would break on ``db``, or None.

    Every rule of the module is checked, including those the tool itself enforces (its call
    then fails with an error); the Generator uses it to keep gold actions clean.
    """
    if tool not in REQUIRED_STATUS or tool == "modify_user_address":
        return None
    order = lookup(db.orders, arguments.get("order_id"))
    if order is None:
        return None
    ok, why = status_allows(order, tool)
    if not ok:
        return f"{tool}: {why}"
    user = db.users.get(order.user_id)
    methods: dict[str, PaymentMethod] = {} if user is None else user.payment_methods
    method = lookup(methods, arguments.get("payment_method_id"))
    if tool == "cancel_pending_order":
        ok, why = reason_allowed(str(arguments.get("reason")))
    elif tool in ("modify_pending_order_items", "exchange_delivered_order_items"):
        ok, why = _swap_ok(db, order, arguments, method, same_ok=tool.startswith("exchange"))
    elif tool == "modify_pending_order_payment" and method is not None:
        ok, why = payment_change_allowed(order, method)
    elif tool == "return_delivered_order_items" and method is not None:
        ok, why = refund_target_allowed(order, method)
    return None if ok else f"{tool}: {why}"


def violation(db: RetailDB, tool: str, arguments: Mapping[str, object]) -> str | None:
    """The policy rule an assistant write would break, checked just before it runs.

    Only rules the tool does not enforce itself are named: a call the tool rejects fails
    with its own error (which the verifier reports as a tool issue), and τ²-bench's gold
    sometimes makes such calls on purpose (official tasks 12, 13, 64, 105). What remains is
    the once-per-order lock: after its items were modified, an order may not have its
    address or payment changed either. Authentication and confirmation are conversation
    rules (:func:`procedure_violation`).

    Args:
        db: The live retail database (``RetailDB``), before the call executes.
        tool: Name of the tool the assistant calls.
        arguments: Its arguments.

    Returns:
        One line naming the broken rule and why, or None (also for unknown tools and for
        calls on unknown records).
    """
    if tool not in ("modify_pending_order_address", "modify_pending_order_payment"):
        return None
    order = lookup(db.orders, arguments.get("order_id"))
    if order is None or order.status == "pending" or not order.status.startswith("pending"):
        return None
    return f"{tool}: {status_allows(order, tool)[1]}"


def _swap_ok(
    db: RetailDB,
    order: Order,
    arguments: Mapping[str, object],
    method: PaymentMethod | None,
    same_ok: bool = False,
) -> tuple[bool, str]:
    old = _ids(arguments.get("item_ids"))
    new = _ids(arguments.get("new_item_ids"))
    if old and "new_item_ids" not in arguments:
        # Asked for with no option of the item's product to change to: another product.
        names = ", ".join(dict.fromkeys(i.name for i in order.items if i.item_id in old))
        return False, (
            "an item can only change to another option of the same product, and what you "
            f"asked for is not an option of the {names}"
        )
    if len(old) != len(new) or not old:
        return False, "every item to change needs exactly one new item"
    for old_id, new_id in zip(old, new, strict=True):
        if same_ok and old_id == new_id:
            continue
        ok, why = variant_swap_allowed(db, order, old_id, new_id)
        if not ok:
            return ok, why
    if method is None:
        return True, ""
    return gift_card_covers(method, price_difference(db, order, old, new))


def _ids(value: object) -> list[str]:
    """The ids of a JSON array argument (``item_ids``); [] if it is no array."""
    return [str(item) for item in value] if isinstance(value, list) else []
