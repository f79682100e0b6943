"""Refused retail requests: what policy forbids, ending in an answer or a transfer."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from tau2.data_model.tasks import EnvFunctionCall
from tau2.domains.retail.data_model import Order, OrderItem, User

from evosyn.environments.kit.grounding import Step
from evosyn.environments.kit.screen import GeneratorRejection
from evosyn.environments.retail import policy
from evosyn.environments.retail.drafts import _Draft, _Request
from evosyn.environments.retail.feasibility import _transfers
from evosyn.environments.retail.intents import _swap
from evosyn.records import Answer

if TYPE_CHECKING:
    from evosyn.environments.retail.generator import RetailGenerator


_BAD_REASONS = (
    "I found it cheaper somewhere else",
    "the delivery is taking too long",
    "I want to use a coupon code instead",
)
_OUT_OF_SCOPE = (
    "You want to place a brand-new order for an item you saw on the website.",
    "You want a price-match credit for an item that went on sale after you bought it.",
    "You want to change the email address on your account.",
)


def _refuse_on(
    gen: RetailGenerator,
    user: User,
    request: _Request,
    order: Order,
    ask: str,
    why: str,
    rule: str,
    refused: Step,
) -> _Draft:
    """The refusal of ``ask`` on ``order`` because ``why`` (policy forbids it: ``rule``).

    ``refused`` is the write the caller asks for, with the arguments their request names.

    On the scope focus the caller, refused, insists on a human agent and the agent
    transfers them (:func:`_escalated`); otherwise the caller accepts the refusal.
    """
    draft = gen._base(user, request, ask, f"Refused {request.family.replace('_', ' ')}.")
    draft.known.append(f"Your order id(s): {order.order_id}.")
    draft.steps.append(Step("get_order_details", {"order_id": order.order_id}))
    draft.note = why
    draft.refused.append(refused)
    if _transfers(request.family, request.outcome, request.focus):
        return _escalated(draft, user, order, why, rule)
    draft.instructions.append("If the agent cannot do it, accept and end the call.")
    draft.nl_assertions.append(f"Agent does not {rule} because {why}.")
    # A positive check: a refusal is earned by looking the order up and saying what it
    # shows, so an agent that greets and stops does not pass.
    draft.communicate.append(Answer(value=order.status, topic="the status of the order"))
    return draft


def _lock(
    gen: RetailGenerator, user: User, order: Order, rng: random.Random
) -> EnvFunctionCall | None:
    """The earlier item modification that locks ``order`` (an initialization action)."""
    intent = _swap(gen, "items", user, order, rng, [])
    if intent is None:
        return None
    return EnvFunctionCall(
        env_type="assistant",
        func_name="modify_pending_order_items",
        arguments=intent.write.arguments,
    )


def _wrong_status(gen: RetailGenerator, user: User, request: _Request, wanted: str) -> Order | None:
    orders = [o for o in gen._orders(user) if o.status != wanted]
    return request.rng.choice(orders) if orders else None


def _refuse_cancel(gen: RetailGenerator, user: User, request: _Request) -> _Draft | None:
    rng = request.rng
    if "cancellation_reason_validity" in request.focus:
        pending = gen._orders(user, "pending")
        if not pending:
            return None
        order = rng.choice(pending)
        bad = rng.choice(_BAD_REASONS)
        why = policy.reason_allowed(bad)[1]
        return _refuse_on(
            gen,
            user,
            request,
            order,
            f"You want to cancel order {order.order_id} because {bad}. You give no other reason.",
            why,
            "cancel the order",
            Step("cancel_pending_order", {"order_id": order.order_id, "reason": bad}),
        )
    return _refuse_status(gen, user, request, "cancel_pending_order", "cancel")


def _refuse_status(
    gen: RetailGenerator, user: User, request: _Request, tool: str, verb: str
) -> _Draft | None:
    rng = request.rng
    lock = "once_per_order_action_lock" in request.focus and "pending_order" in tool
    init: EnvFunctionCall | None = None
    order: Order | None
    if lock:
        pending = gen._orders(user, "pending")
        if not pending:
            return None
        order = rng.choice(pending)
        init = _lock(gen, user, order, rng)
        if init is None:
            return None
        why = (
            f"order {order.order_id} already had its items modified, so it cannot be "
            "modified or cancelled anymore"
        )
    else:
        wanted = policy.REQUIRED_STATUS[tool] or ""
        order = _wrong_status(gen, user, request, wanted)
        if order is None:
            return None
        why = policy.status_allows(order, tool)[1]
    ask = {
        "cancel": "You want to cancel order {} because it is "
        + rng.choice(policy.CANCEL_REASONS)
        + ".",
        "change the items of": "You want to change the size or colour of an item in order {}.",
        "change the shipping address of": "You want order {} shipped to a different address.",
        "return items of": "You want to return the items of order {}.",
        "exchange items of": "You want to exchange an item of order {} for another option.",
    }[verb].format(order.order_id)
    refused = Step(tool, {"order_id": order.order_id})
    draft = _refuse_on(gen, user, request, order, ask, why, f"{verb} the order", refused)
    if init is not None:
        draft.init.append(init)
    return draft


def _other_product(
    gen: RetailGenerator, request: _Request, orders: Sequence[Order]
) -> tuple[Order, OrderItem, str]:
    """One of ``orders``, its first item, and another product the item cannot become."""
    order = request.rng.choice(orders)
    item = order.items[0]
    names = sorted(p.name for p in gen.db.products.values() if p.name != item.name)
    return order, item, request.rng.choice(names)


def _refuse_items(gen: RetailGenerator, user: User, request: _Request) -> _Draft | None:
    rng = request.rng
    pending = gen._orders(user, "pending")
    if "product_variant_match" in request.focus and pending:
        order, item, other = _other_product(gen, request, pending)
        why = (
            f"an item can only change to another option of the same product, so the {item.name} "
            f"cannot become a {other}"
        )
        return _refuse_on(
            gen,
            user,
            request,
            order,
            f"In order {order.order_id} you want to swap the {item.name} for a {other}.",
            why,
            "modify the items",
            Step(
                "modify_pending_order_items",
                {"order_id": order.order_id, "item_ids": [item.item_id]},
            ),
        )
    if "payment_or_giftcard_balance" in request.focus:
        for order in pending:
            intent = _swap(gen, "items", user, order, rng, [])
            if intent is None:
                continue
            args = intent.write.arguments
            diff = policy.price_difference(gen.db, order, args["item_ids"], args["new_item_ids"])
            for method in user.payment_methods.values():
                ok, why = policy.gift_card_covers(method, diff)
                if not ok:
                    return _refuse_on(
                        gen,
                        user,
                        request,
                        order,
                        intent.text.split("; any price")[0]
                        + f", paying the difference with {gen._pay_text(user, method.id)} only.",
                        why,
                        "modify the items",
                        Step(
                            "modify_pending_order_items",
                            {**args, "payment_method_id": method.id},
                        ),
                    )
        return None
    return _refuse_status(gen, user, request, "modify_pending_order_items", "change the items of")


def _refuse_logistics(gen: RetailGenerator, user: User, request: _Request) -> _Draft | None:
    if "payment_or_giftcard_balance" in request.focus:
        for order in gen._orders(user, "pending"):
            for method in user.payment_methods.values():
                ok, why = policy.payment_change_allowed(order, method)
                if not ok and method.source == "gift_card" and "balance" in why:
                    return _refuse_on(
                        gen,
                        user,
                        request,
                        order,
                        f"You want order {order.order_id} paid with "
                        f"{gen._pay_text(user, method.id)}.",
                        why,
                        "change the payment method",
                        Step(
                            "modify_pending_order_payment",
                            {"order_id": order.order_id, "payment_method_id": method.id},
                        ),
                    )
        return None
    return _refuse_status(
        gen, user, request, "modify_pending_order_address", "change the shipping address of"
    )


def _refuse_return(gen: RetailGenerator, user: User, request: _Request) -> _Draft | None:
    if "payment_or_giftcard_balance" in request.focus:
        for order in gen._orders(user, "delivered"):
            for method in user.payment_methods.values():
                ok, why = policy.refund_target_allowed(order, method)
                if not ok:
                    return _refuse_on(
                        gen,
                        user,
                        request,
                        order,
                        f"You want to return the items of order {order.order_id} with the "
                        f"refund going to {gen._pay_text(user, method.id)}, and nowhere else.",
                        why,
                        "process the return",
                        Step(
                            "return_delivered_order_items",
                            {
                                "order_id": order.order_id,
                                "item_ids": [item.item_id for item in order.items],
                                "payment_method_id": method.id,
                            },
                        ),
                    )
        return None
    return _refuse_status(gen, user, request, "return_delivered_order_items", "return items of")


def _refuse_exchange(gen: RetailGenerator, user: User, request: _Request) -> _Draft | None:
    delivered = gen._orders(user, "delivered")
    if "product_variant_match" in request.focus and delivered:
        order, item, other = _other_product(gen, request, delivered)
        why = (
            f"an item can only be exchanged for another option of the same product, so the "
            f"{item.name} cannot become a {other}"
        )
        return _refuse_on(
            gen,
            user,
            request,
            order,
            f"You want to exchange the {item.name} of order {order.order_id} for a {other}.",
            why,
            "exchange the item",
            Step(
                "exchange_delivered_order_items",
                {"order_id": order.order_id, "item_ids": [item.item_id]},
            ),
        )
    return _refuse_status(gen, user, request, "exchange_delivered_order_items", "exchange items of")


def _refuse_profile(gen: RetailGenerator, user: User, request: _Request) -> _Draft | None:
    rng = request.rng
    if "scope_or_escalation_boundary" in request.focus:
        ask = rng.choice(_OUT_OF_SCOPE)
        draft = gen._base(user, request, ask, "Out-of-scope request; the agent transfers it.")
        draft.steps.append(Step("get_user_details", {"user_id": user.user_id}))
        draft.steps.append(
            Step(
                "transfer_to_human_agents",
                {"summary": f"User {user.user_id}: {ask[len('You want ') :].rstrip('.')}"},
            )
        )
        draft.instructions.append("If the agent transfers you, wait for the human agent.")
        draft.note = "transfer"
        return draft
    other = rng.choice([u for u in gen._users if u.user_id != user.user_id and u.orders])
    ask = (
        f"You want to cancel order {other.orders[0]}, which your friend "
        f"{other.name.first_name} placed on their own account."
    )
    draft = gen._base(user, request, ask, "Request about another user's order; refused.")
    draft.steps.append(Step("get_user_details", {"user_id": user.user_id}))
    why = "the agent can only help the authenticated user with their own orders"
    draft.note = why
    draft.nl_assertions.append(f"Agent does not act on another user's order because {why}.")
    return draft


def _escalated(draft: _Draft, user: User, order: Order, why: str, rule: str) -> _Draft:
    """``draft``'s refusal ending in a transfer: the caller insists on a human agent.

    Policy has the agent transfer only a request it cannot handle within its actions: once
    it has checked the order, what the caller insists on (``rule`` on ``order``, which policy
    forbids because ``why``) is one. The hand-over ends the conversation, so the task asks
    for no answer the closing would give.
    """
    draft.instructions.append(
        "If the agent says it cannot do it, you insist on speaking to a human agent and accept "
        "a transfer to one."
    )
    draft.steps.append(
        Step(
            "transfer_to_human_agents",
            {
                "summary": f"User {user.user_id} asked the agent to {rule}, order "
                f"{order.order_id}, which policy does not allow; the user asks for a human agent."
            },
        )
    )
    draft.purpose = f"{draft.purpose[:-1]}; the caller insists on a human agent, who takes over."
    draft.nl_assertions.append(
        f"Agent does not {rule} because {why}, and transfers the user to a human agent."
    )
    return draft


def _refusing(
    refuse: Callable[[RetailGenerator, User, _Request], _Draft | None],
) -> Callable[[RetailGenerator, _Request], _Draft]:
    """The builder of a refusal: ``refuse`` on the first caller it can refuse on."""

    def build(gen: RetailGenerator, request: _Request) -> _Draft:
        for user in gen._shuffled_users(request):
            draft = refuse(gen, user, request)
            if draft is not None:
                return draft
        raise GeneratorRejection(f"no user has an order to refuse {request.family} on")

    return build
