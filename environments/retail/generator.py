"""The programmatic retail Generator: grounds blueprints into new τ²-bench tasks on the real DB.

For a blueprint's task family and expected outcome it searches the retail database for a
caller and orders that make the request true under the policy
(:mod:`evosyn.environments.retail.policy`): a pending order to cancel for a fulfilled
cancellation, a delivered one to return, an order whose items were already modified (set up
by the task's initialization actions) for a once-per-order refusal, and so on. Every task
authenticates the caller first (a ``find_user_id_by_*`` read), reads what it acts on, and
makes its writes; refusals write nothing. On the scope focus a refusal ends in a transfer to
a human agent: an inquiry that no tool can serve, or an order request policy forbids after
which the caller insists on a human agent (τ²-bench's official task 10; 12 and 26 write first).

``num_write`` is met by composing the caller's requests, as τ²-bench's tasks with several do:
the main one of the family, then further ones of families below it in the domain's priority (so
the realized family stays the requested one) on the caller's other orders (cancel one and
return from another, exchange and return), on one pending order (its address changed before its
items) or on the default address, chosen at random mostly among kinds not made yet, and among
those needing fewer look-ups where the requested counts are tight (unrequested, one to three
writes); a requested ``write_mix`` (the ontology's candidate factor) keeps further requests to
the main one's write tool (``one_kind``) or adds one of another first (``several_kinds``, two
writes or more). ``num_read`` and ``difficulty_profile`` (tool calls: easy 2-3, medium 4-5,
hard 6+) are met by adding look-ups; ``computation`` by a ``calculate`` call on the main
intent's amount (``aggregate``) or on the user's dollar condition (``conditional``).
``constrained_opt`` cannot be shown: no retail read lists alternatives as records, so
:func:`infeasible` names it. ``tool_use_pattern`` values are met too: a batch of two or more
items in the main write, reads of two orders or two products, a calculation, a write on a
looked-up record (patterns needing a write are infeasible with refusals). A request that cannot
be met raises :class:`GeneratorRejection` with the reason; a candidate that repeats an official
task (same decisive signature and entities) is skipped.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence

from tau2.data_model.tasks import Task
from tau2.domains.retail.data_model import Order, RetailDB, User

from evosyn.buckets import BUCKET_RANGES, DIFFICULTY_CALLS, OPEN_END
from evosyn.environments.feasibility import first
from evosyn.environments.kit.grounding import (
    GroundedGenerator,
    Request,
    Step,
    Unfit,
    payment_text,
    with_controls,
)
from evosyn.environments.retail.drafts import _Draft, _Request
from evosyn.environments.retail.feasibility import (
    CHECKS,
    FAMILIES,
    INQUIRY,
    WRITE_PATTERNS,
    _min_reads,
    _mix_writes,
    _reads_profile,
    _write_range,
    computations,
    infeasible,
)
from evosyn.environments.retail.fulfilment import _fulfil, _profile
from evosyn.environments.retail.intents import _told_apart
from evosyn.environments.retail.refusals import (
    _refuse_cancel,
    _refuse_exchange,
    _refuse_items,
    _refuse_logistics,
    _refuse_profile,
    _refuse_return,
    _refusing,
)
from evosyn.records import Blueprint

__all__ = ["CHECKS", "FAMILIES", "INQUIRY", "RetailGenerator", "infeasible"]


_ORDER_ID = re.compile(r"#W\d{7}")

PERSONAS: tuple[str, ...] = (
    "You are polite and brief; you answer the agent's questions directly.",
    "You are in a hurry and want this done quickly, without small talk.",
    "You are friendly and talkative, but you give the details when asked.",
    "You are careful and double-check every detail before agreeing to anything.",
    "You rarely shop online and are a little unsure how returns and changes work.",
    "You are a regular customer who knows the store's procedures well.",
)
CHALLENGES: dict[str, tuple[str, ...]] = {
    "missing_information": (
        "You do not remember your order ids; describe the items and let the agent find them.",
        "You have lost the order confirmation emails; the agent must look the orders up.",
    ),
    "ambiguous_request": (
        "Start vague (say you want to 'sort out an order') and give the details only when asked.",
        "Describe what you want loosely at first; be precise once the agent asks.",
    ),
    "user_false_claim": (
        "Claim at first that another agent already approved this; accept the records if the "
        "agent shows otherwise.",
        "Insist at first you were promised this by email; drop it when the agent explains.",
    ),
    "preference_change": (
        "Do not name the payment method at first; when the agent proposes another one, change "
        "your mind to the one named here.",
        "Leave the payment method open; if the agent suggests a different one, say you would "
        "rather use the one named here.",
    ),
    "emotional_pressure": (
        "You are frustrated and press the agent to hurry.",
        "You are upset and push the agent to make an exception.",
    ),
    "multi_intent_interleaving": (
        "Mix a side question about your account into the main request.",
        "Interrupt once with an unrelated question about your profile, then go back.",
    ),
    "constraint_hidden_until_late": (
        "Reveal your payment preference only when the agent is about to act.",
        "Hold back which payment method it must be until the agent lists the final details.",
    ),
}


class RetailGenerator(GroundedGenerator[_Draft, _Request, RetailDB]):
    """Grounds retail blueprints into new τ²-bench tasks whose gold actions realize them."""

    domain_name = "retail"
    database = RetailDB

    # ---------------------------------------------------------------- database views

    @functools.cached_property
    def _users(self) -> list[User]:
        return [self.db.users[k] for k in sorted(self.db.users)]

    @functools.cached_property
    def _unnamed(self) -> frozenset[str]:
        """Variants a caller cannot tell apart by their option values (:func:`_told_apart`)."""
        return frozenset(
            item_id
            for product in self.db.products.values()
            for item_id in product.variants
            if not _told_apart(self.db, product.product_id, item_id)
        )

    def _orders(self, user: User, *statuses: str) -> list[Order]:
        orders = [self.db.orders[o] for o in user.orders if o in self.db.orders]
        return [o for o in orders if not statuses or o.status in statuses]

    # ---------------------------------------------------------------- the candidate loop

    def _by_items(self, text: str) -> str:
        """``text`` with every order id replaced by the items of that order."""

        def items(match: re.Match[str]) -> str:
            order = self.db.orders.get(match.group(0))
            if order is None:
                return match.group(0)
            names = self._item_names(order)
            listed = " and ".join(names[:2]) + (" and more" if len(names) > 2 else "")
            return f"the order with the {listed}"

        return _ORDER_ID.sub(items, re.sub(r"\b[Oo]rders? (?=#W)", "", text))

    def _item_names(self, order: Order) -> list[str]:
        """The names of ``order``'s items, those no other order of its owner has first."""
        owner = self.db.users.get(order.user_id)
        others = {
            i.name.lower()
            for o in (owner.orders if owner else [])
            if o != order.order_id and o in self.db.orders
            for i in self.db.orders[o].items
        }
        names = list(dict.fromkeys(i.name.lower() for i in order.items))
        return sorted(names, key=lambda name: name in others)

    def _told_by_items(self, order_id: str) -> bool:
        """Whether the items :meth:`_by_items` names tell the order from its owner's others."""
        order = self.db.orders.get(order_id)
        if order is None:
            return False
        said = set(self._item_names(order)[:2])
        owner = self.db.users.get(order.user_id)
        return not any(
            said <= {i.name.lower() for i in self.db.orders[o].items}
            for o in (owner.orders if owner else [])
            if o != order_id and o in self.db.orders
        )

    def _pay_text(self, user: User, method_id: str) -> str:
        """How ``user`` names their saved payment method ``method_id``."""
        methods = list(user.payment_methods.values())
        return payment_text(user.payment_methods[method_id], methods)

    def _exclude(self, draft: _Draft, request: _Request) -> None:
        request.excluded.add(draft.user.user_id)

    def _retry_unfit(self, draft: _Draft, request: _Request) -> None:
        self._exclude(draft, request)
        if request.writes > request.write_floor:
            request.writes -= 1  # still in the bucket, and fewer look-ups

    def _request(self, blueprint: Blueprint, seed: int) -> _Request:
        asked = Request.read(blueprint, seed, FAMILIES, "a retail family", infeasible)
        family, outcome, rng, patterns = asked.family, asked.outcome, asked.rng, asked.patterns
        write_bucket, computation = asked.controls["num_write"], asked.controls["computation"]
        read_bucket, difficulty = asked.read_bucket, asked.difficulty
        lo, hi = _write_range(family, outcome, write_bucket)
        if write_bucket is None and family == INQUIRY and outcome == "fulfill":
            lo, hi = (1, 1) if read_bucket == "1" or patterns & WRITE_PATTERNS else (0, 1)
        profile = _reads_profile(family, outcome, asked.challenges)
        if computation is None and "price_or_refund_calculation" in patterns:
            computation = "aggregate"
        if computation is None and difficulty != "easy":
            # Not requested: vary it where the counts allow (it is then not measured).
            free = rng.choice(sorted(computations(family, outcome)))
            counted = {"num_write": write_bucket, "num_read": read_bucket}
            selections = with_controls({**blueprint.selections, "computation": [free]}, counted)
            computation = free if infeasible(selections) is None else None
        if write_bucket is None and outcome == "fulfill" and family != INQUIRY:
            # Unrequested: one to three requests, as a fifth of τ²-bench's tasks make three.
            hi = 3
        mix = first(blueprint.selections, "write_mix")
        if mix is not None:
            # The kinds of write asked for bound the count (the rules keep the range non-empty).
            lo, hi = _mix_writes(mix, lo, hi)
        # Within the bucket, a count whose reads and calls can still fit the request.
        computes = 1 if computation in ("aggregate", "conditional") else 0
        r_lo, r_hi = BUCKET_RANGES.get(read_bucket or "", (0, OPEN_END))
        d_hi = DIFFICULTY_CALLS.get(difficulty or "", (0, OPEN_END))[1]
        counts = [
            n
            for n in range(lo, hi + 1)
            if max(_min_reads(family, outcome, n, computation, patterns, profile), r_lo)
            + n
            + computes
            <= d_hi
            and _min_reads(family, outcome, n, computation, patterns, profile) <= r_hi
        ] or [lo]
        return _Request(
            **asked.shared(),
            writes=rng.choice(counts[: 3 if write_bucket is None else 2]),
            computation=computation,
            write_floor=lo,
            mix=mix,
        )

    def _build(self, request: _Request) -> _Draft:
        return _BUILDERS[(request.family, request.outcome)](self, request)

    def _shuffled_users(self, request: _Request) -> list[User]:
        users = [u for u in self._users if u.user_id not in request.excluded]
        request.rng.shuffle(users)
        return users

    def _base(self, user: User, request: _Request, reason: str, purpose: str) -> _Draft:
        draft = _Draft(user=user, reason=reason, purpose=purpose)
        name = user.name
        draft.known.append(f"You are {name.first_name} {name.last_name}.")
        if request.rng.random() < 0.5:
            draft.known.append(f"Your email is {user.email}.")
            draft.steps.append(Step("find_user_id_by_email", {"email": user.email}))
        else:
            draft.known.append(f"Your zip code is {user.address.zip}.")
            draft.steps.append(
                Step(
                    "find_user_id_by_name_zip",
                    {
                        "first_name": name.first_name,
                        "last_name": name.last_name,
                        "zip": user.address.zip,
                    },
                )
            )
        return draft

    # ---------------------------------------------------------------- reads and counts

    def _read_pool(self, draft: _Draft) -> list[Step]:
        """Look-ups the agent could add: the profile, other orders, products, the catalogue."""
        done = {(s.name, str(s.arguments)) for s in draft.steps}
        orders = [s.arguments["order_id"] for s in draft.steps if s.name == "get_order_details"]
        pool = [Step("get_user_details", {"user_id": draft.user.user_id})]
        pool += [
            Step("get_order_details", {"order_id": o})
            for o in draft.user.orders
            if o in self.db.orders and o not in orders
        ]
        # Products of the orders read: the agent finds a product id only in an order it read.
        products = [i.product_id for o in orders for i in self.db.orders[o].items]
        pool += [Step("get_product_details", {"product_id": p}) for p in dict.fromkeys(products)]
        pool.append(Step("list_all_product_types", {}))
        return [s for s in pool if (s.name, str(s.arguments)) not in done]

    def _read_plan(self, draft: _Draft, request: _Request) -> tuple[list[Step], list[int], str]:
        """The look-ups to add, in order, the read counts that meet the request, and why none.

        The counts fit ``num_read`` and the difficulty's tool calls and cover what the task
        must look up (two orders or products for ``multi_entity_retrieval``, the profile for a
        proposal or a caller missing their ids); none fit if this caller's records cannot.
        """
        reads = self._reads(draft)
        others = len(draft.steps) - reads
        pool = self._read_pool(draft)
        floor = reads
        if "multi_entity_retrieval" in request.patterns and not self._multi(draft.steps):
            # Two orders or two products must be looked up: the missing ones come first.
            names = [s.name for s in draft.steps]
            plans = []
            # Products first: an order read lists its products, so the agent has their ids;
            # another order's id it would only find in the profile.
            for kind in ("get_product_details", "get_order_details"):
                need = 2 - names.count(kind)
                more = [s for s in pool if s.name == kind][:need]
                if len(more) == need:
                    plans.append(more)
            if not plans:
                return pool, [], "tool_use_pattern=multi_entity_retrieval: nothing more to look up"
            more = min(plans, key=len)
            profile = [s for s in pool if s.name == "get_user_details"]
            if profile and any(s.name == "get_order_details" for s in more):
                # The caller's other orders are listed in the profile: it is read first.
                more = profile + more
            pool = more + [s for s in pool if s not in more]
            floor = reads + len(more)
        profile = [s for s in pool if s.name == "get_user_details"]
        if profile and _reads_profile(request.family, request.outcome, request.challenges):
            # The profile lists the payment methods a first proposal offers, and the orders
            # of a caller who lacks their ids: without it the agent would have nothing to
            # propose, or an order id it never saw, so it is always looked up.
            if profile[0] not in pool[: floor - reads]:
                floor += 1
            pool = profile + [s for s in pool if s not in profile]
        r_lo, r_hi = BUCKET_RANGES.get(request.read_bucket or "", (0, OPEN_END))
        d_lo, d_hi = DIFFICULTY_CALLS.get(request.difficulty or "", (0, OPEN_END))
        start = max(floor, r_lo, d_lo - others)
        fitting = [n for n in range(start, min(reads + len(pool), r_hi) + 1) if n + others <= d_hi]
        why = (
            f"num_read={request.read_bucket} and difficulty_profile={request.difficulty} do not "
            f"fit: the task needs {floor} read(s) and {others} other call(s) and can reach "
            f"{reads + len(pool)} read(s)"
        )
        return pool, fitting, why

    def _fits(self, draft: _Draft, request: _Request) -> bool:
        """Whether look-ups can bring ``draft`` to the requested counts."""
        return bool(self._read_plan(draft, request)[1])

    def _pad_reads(self, draft: _Draft, request: _Request) -> None:
        """Add look-ups until the reads meet ``num_read`` and the calls the difficulty.

        Raises:
            Unfit: If this caller's records cannot reach a count that fits both.
        """
        reads = self._reads(draft)
        pool, fitting, why = self._read_plan(draft, request)
        if not fitting:
            raise Unfit(why)
        if (
            pool
            and pool[0].name == "get_user_details"
            and "missing_information" in request.challenges
        ):
            # The profile lists the caller's orders: where a missing id is found.
            fitting = [n for n in fitting if n > reads] or fitting
        target = request.rng.choice(fitting[:2])
        if self._lacks_ids(request):
            said = " ".join([draft.reason, *draft.instructions])
            for order_id in dict.fromkeys(_ORDER_ID.findall(said)):
                if not self._told_by_items(order_id):
                    raise Unfit(f"the caller cannot name order {order_id} without its id")
        added = pool[: target - reads]
        at = 1
        profile = next((s for s in draft.steps if s.name == "get_user_details"), None)
        first = _reads_profile(request.family, request.outcome, request.challenges)
        if profile is not None and (first or any(s.name == "get_order_details" for s in added)):
            # The profile lists what the agent needs early (an order id the caller does not
            # give, the payment methods of a first proposal) and the task reads it later for a
            # further request: it is read first (or, where the caller asks for something
            # there, the orders added after it).
            if profile.cue is None:
                draft.steps.remove(profile)
                added = [profile, *added]
            else:
                at = draft.steps.index(profile) + 1
        draft.steps[at:at] = added
        draft.steps = self._products_after_orders(draft.steps)
        first_order = next(
            (s.arguments["order_id"] for s in draft.steps if s.name == "get_order_details"), None
        )
        if (
            first_order is not None
            and not self._lacks_ids(request)
            and not _ORDER_ID.search(draft.reason)
            and not any(first_order in k for k in draft.known)
        ):
            # A caller whose opening names no order is asked which one at the first order
            # read: without missing_information they know its id.
            draft.known.append(f"Your order id(s): {first_order}.")

    def _products_after_orders(self, steps: list[Step]) -> list[Step]:
        """``steps`` with each product look-up moved after the order read that lists it.

        The agent learns a product's id from an order it read; a look-up placed before that
        read would use an id it has not seen.
        """
        ordered: list[Step] = []
        waiting: dict[str, list[Step]] = {}
        for step in steps:
            product = step.arguments.get("product_id")
            if step.name == "get_product_details" and not self._listed(ordered, product):
                listing = next(
                    (
                        s.arguments["order_id"]
                        for s in steps
                        if s.name == "get_order_details" and self._listed([s], product)
                    ),
                    None,
                )
                if listing is not None:
                    waiting.setdefault(listing, []).append(step)
                    continue
            ordered.append(step)
            if step.name == "get_order_details":
                ordered += waiting.pop(step.arguments["order_id"], [])
        return ordered + [s for held in waiting.values() for s in held]

    def _listed(self, steps: Sequence[Step], product: object) -> bool:
        """Whether an order read among ``steps`` lists ``product``."""
        return any(
            s.name == "get_order_details"
            and s.arguments["order_id"] in self.db.orders
            and any(i.product_id == product for i in self.db.orders[s.arguments["order_id"]].items)
            for s in steps
        )

    @staticmethod
    def _multi(steps: Sequence[Step]) -> bool:
        """Whether the reads cover two orders or two products."""
        kinds = [s.name for s in steps if s.name in ("get_order_details", "get_product_details")]
        return max(kinds.count("get_order_details"), kinds.count("get_product_details")) >= 2

    # ---------------------------------------------------------------- assembly

    @staticmethod
    def _known(draft: _Draft, request: _Request) -> list[str]:
        """What the caller knows from the start."""
        if "missing_information" in request.challenges:
            # The challenge is a caller without the ids: they must not be handed over.
            return [k for k in draft.known if not k.startswith("Your order id")]
        return draft.known

    @staticmethod
    def _lacks_ids(request: _Request) -> bool:
        """Whether the caller lacks their order ids: the scenario then names orders by items.

        Only a caller of ``missing_information`` does; any other knows every id they need.
        """
        return "missing_information" in request.challenges

    def _worded(self, text: str, lacks_ids: bool) -> str:
        """``text`` as the scenario words it."""
        # A caller without the ids names each order by what is in it, never by its id.
        return self._by_items(text) if lacks_ids else text

    def _assemble(self, draft: _Draft, request: _Request) -> Task:
        rng, instructions = self._scene(request, draft.instructions, CHALLENGES)
        lacks = self._lacks_ids(request)
        return self._task(
            draft,
            request,
            persona=rng.choice(PERSONAS),
            instructions=[self._worded(i, lacks) for i in instructions],
            reason=self._worded(draft.reason, lacks),
            known=self._known(draft, request),
            unknown="You do not know your order ids." if lacks else None,
            infos=[None if s.info is None else self._worded(s.info, lacks) for s in draft.steps],
        )

    def _cues(self, draft: _Draft, request: _Request, task: Task) -> dict[str, str]:
        lacks = self._lacks_ids(request)
        reason = self._worded(draft.reason, lacks)
        cues = {k: self._worded(v, lacks) for k, v in super()._cues(draft, request, task).items()}
        # A further request is one the caller did not open the call with.
        return {k: v for k, v in cues.items() if v != reason}


_BUILDERS: dict[tuple[str, str], Callable[[RetailGenerator, _Request], _Draft]] = {
    ("order_cancellation", "fulfill"): _fulfil,
    ("order_cancellation", "refuse"): _refusing(_refuse_cancel),
    ("order_item_modification", "fulfill"): _fulfil,
    ("order_item_modification", "refuse"): _refusing(_refuse_items),
    ("order_logistics_modification", "fulfill"): _fulfil,
    ("order_logistics_modification", "refuse"): _refusing(_refuse_logistics),
    ("return_delivered_order", "fulfill"): _fulfil,
    ("return_delivered_order", "refuse"): _refusing(_refuse_return),
    ("exchange_delivered_order", "fulfill"): _fulfil,
    ("exchange_delivered_order", "refuse"): _refusing(_refuse_exchange),
    ("profile_or_inquiry", "fulfill"): _profile,
    ("profile_or_inquiry", "refuse"): _refusing(_refuse_profile),
}
