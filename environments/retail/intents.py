"""What a retail caller may ask for: one write on an order or the profile, and its reads."""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from tau2.domains.retail.data_model import Order, OrderItem, RetailDB, User, Variant

from evosyn.environments.kit.acting import method_words
from evosyn.environments.kit.grounding import Step
from evosyn.environments.retail import policy

if TYPE_CHECKING:
    from evosyn.environments.retail.generator import RetailGenerator


@dataclass
class _Intent:
    """One write the caller asks for, with what the agent must read first."""

    kind: str
    write: Step
    reads: list[Step]
    text: str
    #: Expression of the amount the intent turns on, its words, and whether more is better.
    amount: str = ""
    amount_label: str = ""
    at_least: bool = False
    #: The request with its payment method left open, and the method said on its own
    #: (for a proposal challenge); empty where the write charges or refunds nothing.
    open_text: str = ""
    method_text: str = ""
    #: Saved payment methods policy allows for the write, the gold one included.
    methods: list[str] = field(default_factory=list)
    #: Whether ``text`` is ``open_text`` (the method is said only in the instructions).
    left_open: bool = False


def _options(item: OrderItem | Variant) -> str:
    """The options as a caller says them: "size 10, not waterproof, with water resistance"."""
    return ", ".join(_option(k, str(v)) for k, v in item.options.items())


def _option(key: str, value: str) -> str:
    if value.lower() not in ("yes", "no"):
        return f"{key} {value}"
    if " " in key:  # "water resistance"
        return f"{'with' if value.lower() == 'yes' else 'without'} {key}"
    return key if value.lower() == "yes" else f"not {key}"  # "waterproof"


def _option_values(options: Mapping[str, object]) -> set[str]:
    return {
        f"{k} {v}" if str(v).lower() in ("yes", "no") else str(v).lower()
        for k, v in options.items()
    }


def _told_apart(db: RetailDB, product_id: str, item_id: str) -> bool:
    """Whether a caller naming the option values of variant ``item_id`` names no other variant.

    Values are words without their option names: a variant whose values all belong to
    another ("brown, brown, polarized, plastic" and "black, brown, polarized, plastic") is
    not told apart by them.
    """
    variants = db.products[product_id].variants
    own = variants.get(item_id)
    if own is None:
        return False
    values = _option_values(own.options)
    return not any(values <= _option_values(v.options) for k, v in variants.items() if k != item_id)


def _address(source: User | Order) -> dict[str, str]:
    fields = ("address1", "address2", "city", "state", "country", "zip")
    return {k: getattr(source.address, k) for k in fields}


def _intent(
    gen: RetailGenerator,
    kind: str,
    user: User,
    order: Order | None,
    rng: random.Random,
    least: int = 1,
) -> _Intent | None:
    """An intent of ``kind`` on ``order`` that policy allows, or None.

    ``least`` is the fewest items a return, modification or exchange takes.
    """
    read = [Step("get_order_details", {"order_id": order.order_id})] if order else []
    if kind == "user_address":
        donor = rng.choice(gen._users)
        if donor.address.zip == user.address.zip:
            return None
        args = {"user_id": user.user_id, **_address(donor)}
        return _Intent(
            kind,
            Step("modify_user_address", args),
            [],
            f"You want your default address changed to {_address_text(args)}.",
        )
    if order is None:
        raise ValueError(f"a {kind} intent needs an order")
    prices = " + ".join(str(i.price) for i in order.items)
    if kind == "cancel":
        reason = rng.choice(policy.CANCEL_REASONS)
        return _Intent(
            kind,
            Step("cancel_pending_order", {"order_id": order.order_id, "reason": reason}),
            read,
            f"You want to cancel order {order.order_id} because it is {reason}.",
            prices,
            "the refund for the cancelled order",
            at_least=True,
        )
    if kind == "address":
        donor = rng.choice(gen._users)
        args = {"order_id": order.order_id, **_address(donor)}
        if args["zip"] == order.address.zip:
            return None
        return _Intent(
            kind,
            Step("modify_pending_order_address", args),
            read,
            f"You want order {order.order_id} shipped to {_address_text(args)}.",
            prices,
            "the order total",
        )
    if kind == "payment":
        paid = order.payment_history[0]
        targets = [
            m
            for k, m in sorted(user.payment_methods.items())
            if policy.payment_change_allowed(order, m)[0]
        ]
        if len(order.payment_history) != 1 or not targets:
            return None
        target = rng.choice(targets)
        return _Intent(
            kind,
            Step(
                "modify_pending_order_payment",
                {"order_id": order.order_id, "payment_method_id": target.id},
            ),
            read + _method_reads(user, order, target.id),
            f"You want order {order.order_id} paid with {gen._pay_text(user, target.id)} "
            f"instead of {gen._pay_text(user, paid.payment_method_id)}.",
            prices,
            "the amount moved to the new payment method",
        )
    if kind == "return":
        nameable = [i for i in order.items if i.item_id not in gen._unnamed]
        if len(nameable) < least:
            return None
        chosen = rng.sample(nameable, rng.randint(least, len(nameable)))
        original = order.payment_history[0].payment_method_id
        methods = [original] + [
            k for k, m in sorted(user.payment_methods.items()) if m.source == "gift_card"
        ]
        method = rng.choice(sorted(set(methods)))
        names = "; ".join(f"the {i.name} ({_options(i)})" for i in chosen)
        opened = f"You want to return {names} from order {order.order_id}."
        return _Intent(
            kind,
            Step(
                "return_delivered_order_items",
                {
                    "order_id": order.order_id,
                    "item_ids": sorted(i.item_id for i in chosen),
                    "payment_method_id": method,
                },
            ),
            read + _method_reads(user, order, method),
            f"You want to return {names} from order {order.order_id}, refunded to "
            f"{gen._pay_text(user, method)}.",
            " + ".join(str(i.price) for i in chosen),
            "the refund for the returned items",
            at_least=True,
            open_text=opened,
            method_text=f"You want the refund to go to {gen._pay_text(user, method)}.",
            methods=sorted(set(methods)),
        )
    return _swap(gen, kind, user, order, rng, read, least)


def _swap(
    gen: RetailGenerator,
    kind: str,
    user: User,
    order: Order,
    rng: random.Random,
    read: list[Step],
    least: int = 1,
) -> _Intent | None:
    """Item modification (pending) or exchange (delivered) to other variants."""
    pairs: list[tuple[OrderItem, Variant]] = []
    seen: set[str] = set()
    for item in order.items:
        if item.item_id in seen:
            continue
        seen.add(item.item_id)
        product = gen.db.products[item.product_id]
        if item.item_id in gen._unnamed:
            continue  # the caller could not name it
        options = [
            v
            for v in product.variants.values()
            if policy.variant_swap_allowed(gen.db, order, item.item_id, v.item_id)[0]
            and v.item_id not in gen._unnamed
        ]
        if options:
            pairs.append((item, rng.choice(sorted(options, key=lambda v: v.item_id))))
    if len(pairs) < least:
        return None
    pairs = rng.sample(pairs, rng.randint(least, max(least, min(2, len(pairs)))))
    old = [i.item_id for i, _ in pairs]
    new = [v.item_id for _, v in pairs]
    diff = policy.price_difference(gen.db, order, old, new)
    original = order.payment_history[0].payment_method_id
    methods = [
        k for k, m in sorted(user.payment_methods.items()) if policy.gift_card_covers(m, diff)[0]
    ]
    if not methods:
        return None
    method = original if original in methods else rng.choice(methods)
    reads = read + [
        Step("get_product_details", {"product_id": pid})
        for pid in dict.fromkeys(i.product_id for i, _ in pairs)
    ]
    if read:
        reads += _method_reads(user, order, method)
    changes = "; ".join(
        f"the {i.name} ({_options(i)}) to the option {_options(v)}" for i, v in pairs
    )
    verb = "change" if kind == "items" else "exchange"
    opened = (
        f"In order {order.order_id} you want to {verb} {changes}. These are all the items "
        f"you want to {verb}."
    )
    tool = "modify_pending_order_items" if kind == "items" else "exchange_delivered_order_items"
    expression = (
        f"({' + '.join(str(v.price) for _, v in pairs)}) - "
        f"({' + '.join(str(i.price) for i, _ in pairs)})"
    )
    return _Intent(
        kind,
        Step(
            tool,
            {
                "order_id": order.order_id,
                "item_ids": old,
                "new_item_ids": new,
                "payment_method_id": method,
            },
        ),
        reads,
        f"In order {order.order_id} you want to {verb} {changes}; any price difference "
        f"goes through {gen._pay_text(user, method)}. These are all the items you want to "
        f"{verb}.",
        expression,
        "the price difference",
        open_text=opened,
        method_text=f"Any price difference goes through {gen._pay_text(user, method)}.",
        methods=methods,
    )


def _method_reads(user: User, order: Order, method: str) -> list[Step]:
    """The look-up that shows the agent ``method``, a saved payment method of ``user``.

    None for the order's own payment method (its payment history names it); the caller's
    profile for another.
    """
    if order.payment_history and order.payment_history[0].payment_method_id == method:
        return []
    return [Step("get_user_details", {"user_id": user.user_id})]


def _left_open(intent: _Intent, user: User) -> _Intent | None:
    """``intent`` with its payment method left open for a proposal challenge, or None.

    The agent's first proposal must be another method policy allows that the user would
    name differently (another card, or a gift card rather than a card); the user names
    the one they want only once the agent proposes.
    """
    said = {method_words(user.payment_methods[k].model_dump()) for k in intent.methods}
    if not intent.open_text or len(said) < 2:
        return None
    return replace(intent, text=intent.open_text, left_open=True)


def _address_text(args: Mapping[str, str]) -> str:
    line2 = f" {args['address2']}," if args["address2"] else ""
    return (
        f"{args['address1']},{line2} {args['city']}, {args['state']} {args['zip']}, "
        f"{args['country']}"
    )
