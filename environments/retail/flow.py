"""What the retail caller chooses, which writes move money, which ids stay internal."""

from __future__ import annotations

from evosyn.environments.information_flow import Choice, FlowRules
from evosyn.environments.kit import choices

_ORDER = choices.entity("items")
_ITEM = choices.entity("name", "options")
_REASON = choices.phrases(
    {
        "no longer needed": ("no longer need", "don't need", "do not need", "not needed"),
        "ordered by mistake": ("mistake", "by accident", "accidentally", "wrong thing"),
    }
)

_SAY_ORDER = choices.say_record("the order with the {items}", "items")
_SAY_ITEM = choices.say_record("the {name}", "name")
_SAY_NEW = choices.say_record("the one with {options}", "options")
_ASK_PAY = "which payment method to use"
_ITEM_WRITES = ("exchange_delivered_order_items", "modify_pending_order_items")
_ORDER_WRITES = (
    *_ITEM_WRITES,
    "return_delivered_order_items",
    "cancel_pending_order",
    "modify_pending_order_address",
    "modify_pending_order_payment",
)
_PAYING = (*_ITEM_WRITES, "return_delivered_order_items", "modify_pending_order_payment")


def _order(tool: str) -> Choice:
    return Choice(tool, "order_id", "the order", _ORDER, "which order", _SAY_ORDER)


def _items(tool: str) -> Choice:
    return Choice(tool, "item_ids[]", "this item", _ITEM, "which items", _SAY_ITEM)


def _address(tool: str) -> Choice:
    return Choice(tool, "address1", "the new address", ask="the new address")


RULES = FlowRules(
    choices=(
        *(_order(tool) for tool in _ORDER_WRITES),
        *(_items(tool) for tool in (*_ITEM_WRITES, "return_delivered_order_items")),
        *(
            Choice(
                tool,
                "new_item_ids[]",
                "this new item",
                _ITEM,
                "which options you want instead",
                _SAY_NEW,
            )
            for tool in _ITEM_WRITES
        ),
        *(choices.payment_choice(tool, "payment_method_id", _ASK_PAY) for tool in _PAYING),
        Choice("cancel_pending_order", "reason", "the reason", _REASON, "why you want to cancel"),
        _address("modify_pending_order_address"),
        _address("modify_user_address"),
    ),
    priced_writes=frozenset(
        {
            "cancel_pending_order",
            "return_delivered_order_items",
            "exchange_delivered_order_items",
            "modify_pending_order_items",
        }
    ),
    internal_patterns=(r"\b(?:credit_card|gift_card|paypal)_\d+\b",),
    internal_ids=frozenset(
        {"payment_method_id", "payment_methods", "id", "item_id", "product_id", "user_id"}
    ),
    distinctive=frozenset({r"order (?:id|number)", r"e-?mail"}),
    identifiers={
        r"\bzip\b|postal code": r"\b\d{5}\b",
        r"e-?mail": r"[\w.+-]+@[\w-]+\.\w+",
        r"order (?:id|number)": r"#W\d{7}",
    },
)
