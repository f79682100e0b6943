"""Fulfilled retail requests: a main request composed with further ones, and inquiries."""

from __future__ import annotations

import copy
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tau2.domains.retail.data_model import User

from evosyn.environments.kit.grounding import PROPOSAL_CHALLENGES, Step, money
from evosyn.environments.kit.screen import GeneratorRejection
from evosyn.environments.retail.drafts import _Draft, _Request
from evosyn.environments.retail.feasibility import (
    FAMILIES,
    INTENT_FAMILY,
    KINDS_BY_STATUS,
    _adds_to,
)
from evosyn.environments.retail.intents import _Intent, _intent, _left_open
from evosyn.records import Answer

if TYPE_CHECKING:
    from evosyn.environments.retail.generator import RetailGenerator


@dataclass(eq=False)
class _Further:
    """A further request of the caller: intents on one order (or, order-less, the profile)."""

    order: str
    intents: list[_Intent]
    #: An address change of the main request's order, made before the main write.
    before: bool = False

    @property
    def key(self) -> str:
        """What one further request may act on: an order, or the main order's address."""
        return f"{self.order}-before" if self.before else self.order

    def reads(self, seen: set[tuple[str, str]]) -> int:
        """The look-ups it adds to those ``seen``."""
        return len({(s.name, str(s.arguments)) for i in self.intents for s in i.reads} - seen)


@dataclass
class _Composition:
    """The caller's main request and the further requests they could make with it."""

    primary: _Intent
    further: list[_Further]


def _composition(gen: RetailGenerator, user: User, request: _Request) -> _Composition | None:
    """The main request on one of ``user``'s orders and the further ones they could add.

    The further requests: each policy-allowed intent on another pending or delivered
    order, a change of a pending order's address and items together, an address change
    of the main order before its items change, and a change of the default address. Only
    families the main one outranks, so the realized family stays the requested one.
    """
    rng = request.rng
    allowed = set(FAMILIES[FAMILIES.index(request.family) :])
    primary: _Intent | None = None
    further: list[_Further] = []
    orders = gen._orders(user, "pending", "delivered")
    rng.shuffle(orders)
    for order in orders:
        kinds = [k for k in KINDS_BY_STATUS[order.status] if INTENT_FAMILY[k] in allowed]
        rng.shuffle(kinds)
        own = [k for k in kinds if INTENT_FAMILY[k] == request.family]
        if primary is None and own:
            least = 2 if "batched_multi_item_action" in request.patterns else 1
            primary = _intent(gen, own[0], user, order, rng, least)
            if primary is not None and set(PROPOSAL_CHALLENGES) & set(request.challenges):
                primary = _left_open(primary, user)
            if primary is not None:
                if primary.kind == "items":
                    # Its address changes first: an item change ends further changes.
                    address = _intent(gen, "address", user, order, rng)
                    if address is not None:
                        further.append(_Further(order.order_id, [address], before=True))
                continue
        # One request per further order keeps every write on a fresh, unmodified order.
        for kind in kinds:
            intent = _intent(gen, kind, user, order, rng)
            if intent is not None:
                further.append(_Further(order.order_id, [intent]))
        if {"address", "items"} <= set(kinds):
            address = _intent(gen, "address", user, order, rng)
            items = _intent(gen, "items", user, order, rng)
            if address is not None and items is not None:
                further.append(_Further(order.order_id, [address, items]))
    if primary is None:
        return None
    profile = _intent(gen, "user_address", user, None, rng)
    if profile is not None:
        further.append(_Further("", [profile]))
    return _Composition(primary, further)


def _select(
    composition: _Composition,
    writes: int,
    way: str,
    rng: random.Random,
    mix: str | None = None,
) -> list[_Further] | None:
    """Further requests making ``writes`` writes with the main one, chosen ``way``; or None.

    ``varied``: at random (:func:`_weight`), mostly requests of a kind not made yet on an
    order; ``cheap``: fewest look-ups first, so tight read counts fit; ``orders``: a request
    on another order first (two orders read). ``mix`` is the requested ``write_mix``:
    ``one_kind`` takes only requests of the main one's write tool, ``several_kinds`` one of
    another tool first.
    """
    primary = composition.primary
    seen = {(s.name, str(s.arguments)) for s in primary.reads}
    kinds = {primary.kind}
    tools = {primary.write.name}
    taken: set[str] = set()
    chosen: list[_Further] = []
    need = writes - 1
    while need > 0:
        open_ = [
            f
            for f in composition.further
            if len(f.intents) <= need
            and f not in chosen
            and (not f.order or f.key not in taken)
            and _adds_to(mix, tools, {i.write.name for i in f.intents})
        ]
        if not open_:
            return None
        if way == "varied":
            weights = [_weight(f, kinds) for f in open_]
            pick = rng.choices(open_, weights=weights)[0]
        elif way == "orders":
            pick = min(open_, key=lambda f: (f.reads(seen) == 0, f.reads(seen)))
        else:
            pick = min(open_, key=lambda f: f.reads(seen))
        chosen.append(pick)
        taken.add(pick.key)
        kinds |= {i.kind for i in pick.intents}
        tools |= {i.write.name for i in pick.intents}
        need -= len(pick.intents)
    return chosen


def _computation(draft: _Draft, intent: _Intent, request: _Request) -> None:
    if request.computation not in ("aggregate", "conditional") or not intent.amount:
        return
    value = _evaluate(intent.amount)
    if request.computation == "aggregate":
        draft.steps.append(Step("calculate", {"expression": intent.amount}))
        draft.instructions.append(f"You want to be told {intent.amount_label}.")
        draft.communicate.append(money(value, intent.amount_label))
        return
    if intent.at_least:
        bound = max(1, math.floor(value) - request.rng.randint(1, 20))
        expression = f"({intent.amount}) - {bound}"
        words = f"at least ${bound}"
    else:
        bound = max(0, math.ceil(value)) + request.rng.randint(5, 60)
        expression = f"{bound} - ({intent.amount})"
        words = f"at most ${bound}"
    draft.reason += f" But only if {intent.amount_label} is {words}."
    draft.steps.append(Step("calculate", {"expression": expression}))
    draft.communicate.append(money(value, intent.amount_label))


#: Weight of a further request of a kind not made yet on an order (see :func:`_weight`).
NEW_KIND_WEIGHT = 4
#: Weight of a cancellation of another order beside a return, an exchange or an item change
#: (τ²-bench's commonest pairing of two orders: a cancellation and a return, 6 of its 32
#: tasks with several kinds of write): it would otherwise come as seldom as any of a pending
#: order's four kinds of request.
CANCEL_BESIDE_WEIGHT = 6
#: The kinds of request a cancellation of another order is weighted beside.
CANCEL_BESIDE = frozenset({"return", "exchange", "items"})


def _weight(further: _Further, kinds: set[str]) -> int:
    """How often a varied task adds ``further`` to requests of ``kinds``.

    Mostly a kind not made yet on an order, as in τ²-bench's tasks with several requests
    (cancel one order and return from, exchange on or change the items of another, change an
    order's address and items), a cancellation beside those most; seldom the same kind again,
    the default address or a payment change, which they rarely combine.
    """
    new = {i.kind for i in further.intents} - kinds
    if not further.order or not new or new == {"payment"}:
        return 1
    if new == {"cancel"} and kinds & CANCEL_BESIDE:
        return CANCEL_BESIDE_WEIGHT
    return NEW_KIND_WEIGHT


def _evaluate(expression: str) -> float:
    # Same arithmetic as τ²-bench's calculate tool; the expressions are our own.
    return round(float(eval(expression, {"__builtins__": None}, {})), 2)


def _fulfil(gen: RetailGenerator, request: _Request) -> _Draft:
    """A fulfilled order request: ``request.writes`` writes led by one of the family.

    Further requests are chosen to vary the task's shape; where their look-ups would not fit
    the requested counts, ones needing fewer are chosen instead. Several requests are mostly
    on several orders (or on one order's address and items), so a caller with nothing but
    the default address to add is taken only when no other can.
    """
    profile_only: list[tuple[User, _Composition]] = []
    for user in gen._shuffled_users(request):
        composition = _composition(gen, user, request)
        if composition is None:
            continue
        if request.writes > 1 and not any(f.order for f in composition.further):
            profile_only.append((user, composition))
            continue
        draft = _drafted(gen, user, request, composition)
        if draft is not None:
            return draft
    for user, composition in profile_only:
        draft = _drafted(gen, user, request, composition)
        if draft is not None:
            return draft
    raise GeneratorRejection(
        f"no user has orders for {request.writes} write(s) led by {request.family}"
    )


def _drafted(
    gen: RetailGenerator, user: User, request: _Request, composition: _Composition
) -> _Draft | None:
    """The first of ``composition``'s varied, order-first and cheapest drafts that fits.

    If none fits, the cheapest: padding it names why, and another caller is tried. None if
    the caller has too few further requests.
    """
    draft: _Draft | None = None
    for way in ("varied", "orders", "cheap"):
        chosen = _select(composition, request.writes, way, request.rng, request.mix)
        if chosen is None:
            continue
        draft = _composed(gen, user, request, composition.primary, chosen)
        if gen._fits(draft, request):
            return draft
    return draft


def _composed(
    gen: RetailGenerator,
    user: User,
    request: _Request,
    primary: _Intent,
    further: Sequence[_Further],
) -> _Draft:
    """The draft of ``primary`` and the ``further`` requests, in the order the caller makes them.

    An address change of the main order is asked for with it and made before it; every other
    further request the caller makes on the way, before the agent looks anything up for it.
    """
    # Copies: the gold steps get their cues here, and a caller's requests are tried in turn.
    primary, further = copy.deepcopy((primary, list(further)))
    before = [i for f in further if f.before for i in f.intents]
    later = [f for f in further if not f.before]
    intents = [*before, primary, *(i for f in later for i in f.intents)]
    draft = gen._base(
        user,
        request,
        reason=" ".join([primary.text, *(i.text for i in before)]),
        purpose=f"{request.family.replace('_', ' ')} with {len(intents)} write(s).",
    )
    ids = [i.write.arguments["order_id"] for i in intents if "order_id" in i.write.arguments]
    if ids:
        draft.known.append(f"Your order id(s): {', '.join(dict.fromkeys(ids))}.")
    if primary.left_open:
        draft.instructions.append(primary.method_text)
    draft.instructions += [i.text for f in later for i in f.intents]
    draft.steps += primary.reads
    _computation(draft, primary, request)
    draft.steps += [i.write for i in before]
    draft.steps.append(primary.write)
    for intent in (i for f in later for i in f.intents):
        read = {(s.name, str(s.arguments)) for s in draft.steps}
        fresh = [s for s in intent.reads if (s.name, str(s.arguments)) not in read]
        # The caller asks for it on the way, before the agent looks anything up.
        first = (fresh or [intent.write])[0]
        first.info = first.cue = intent.text
        draft.steps += fresh
        draft.steps.append(intent.write)
    return draft


def _profile(gen: RetailGenerator, request: _Request) -> _Draft:
    """An inquiry about one or two orders, with or without a change of the default address."""
    rng = request.rng
    for user in gen._shuffled_users(request):
        orders = gen._orders(user)
        aggregate = request.computation == "aggregate"
        if not orders or (aggregate and len(orders) < 2):
            continue
        chosen = rng.sample(orders, 2 if aggregate else 1)
        if aggregate:
            reason = (
                f"You want to know how much you paid in total for orders "
                f"{chosen[0].order_id} and {chosen[1].order_id}."
            )
        else:
            reason = f"You want to know the status of order {chosen[0].order_id}."
        draft = gen._base(user, request, reason, "Profile and order inquiry.")
        intent = _intent(gen, "user_address", user, None, rng) if request.writes else None
        if request.writes and intent is None:
            continue
        # The address change alone needs no order: authenticated, the agent writes.
        lookup = "lookup_verify_then_modify" in request.patterns
        alone = (
            intent is not None
            and not aggregate
            and (request.read_bucket == "1" or lookup or rng.random() < 0.5)
        )
        if intent is not None and lookup:
            # The write acts on the profile the agent looked up.
            draft.steps.append(Step("get_user_details", {"user_id": user.user_id}))
        if intent is not None and alone:
            draft.reason = intent.text
        elif intent is not None:
            draft.instructions.append(intent.text)
            intent.write.info = intent.write.cue = intent.text
        if not alone:
            draft.known.append(f"Your order id(s): {', '.join(o.order_id for o in chosen)}.")
            draft.steps += [Step("get_order_details", {"order_id": o.order_id}) for o in chosen]
            if aggregate:
                amount = " + ".join(str(o.payment_history[0].amount) for o in chosen)
                draft.steps.append(Step("calculate", {"expression": amount}))
                paid = money(_evaluate(amount), "the total you paid for the two orders")
                draft.communicate.append(paid)
                draft.note = f"{paid.topic} is {paid.said}"
            else:
                draft.communicate.append(
                    Answer(
                        value=chosen[0].status,
                        topic=f"the status of order {chosen[0].order_id}",
                    )
                )
                draft.note = f"order {chosen[0].order_id} is {chosen[0].status}"
        elif aggregate:
            continue
        if intent is not None:
            draft.steps.append(intent.write)
        return draft
    raise GeneratorRejection("no user has the orders the inquiry needs")
