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

import copy
import functools
import math
import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from tau2.data_model.tasks import EnvFunctionCall, Task
from tau2.domains.retail.data_model import Order, OrderItem, RetailDB, User, Variant

from evosyn.buckets import BUCKET_RANGES, DIFFICULTY_CALLS, OPEN_END
from evosyn.environments.kit.acting import method_words
from evosyn.environments.kit.grounding import (
    PROPOSAL_CHALLENGES,
    Draft,
    GroundedGenerator,
    Request,
    Step,
    Unfit,
    first,
    money,
    payment_text,
    with_controls,
)
from evosyn.environments.kit.rules import (
    Asked,
    Checks,
    Conflict,
    calculation_rules,
    computation_rule,
    opening_rules,
)
from evosyn.environments.kit.screen import GeneratorRejection
from evosyn.environments.retail import policy
from evosyn.environments.retail.domain import KNOWLEDGE
from evosyn.records import Answer, Blueprint

FAMILIES = tuple(KNOWLEDGE.family_priority)
#: Writes of each intent kind and the family it realizes.
INTENT_FAMILY = {
    "cancel": "order_cancellation",
    "items": "order_item_modification",
    "address": "order_logistics_modification",
    "payment": "order_logistics_modification",
    "return": "return_delivered_order",
    "exchange": "exchange_delivered_order",
    "user_address": "profile_or_inquiry",
}
#: Computation kinds each (family, outcome) can realize; refusals compute nothing.
COMPUTATIONS: dict[tuple[str, str], frozenset[str]] = {
    (family, "fulfill"): frozenset({"none", "aggregate", "conditional"})
    for family in FAMILIES
    if family != "profile_or_inquiry"
} | {("profile_or_inquiry", "fulfill"): frozenset({"none", "aggregate"})}
_NO_COMPUTATION = frozenset({"none"})
#: Intent kinds each order status allows.
KINDS_BY_STATUS = {
    "pending": ("items", "cancel", "address", "payment"),
    "delivered": ("exchange", "return"),
}
#: Families whose main write refunds or charges a saved payment method the caller may leave
#: open (a proposal challenge varies it).
PROPOSED = frozenset(
    {"order_item_modification", "exchange_delivered_order", "return_delivered_order"}
)
#: Tool-use patterns only a write can show.
WRITE_PATTERNS = frozenset(
    {"lookup_verify_then_modify", "state_change_with_confirmation", "batched_multi_item_action"}
)
#: Families whose main write takes a list of items (a batch of two or more).
BATCH_FAMILIES = frozenset(
    {"order_item_modification", "exchange_delivered_order", "return_delivered_order"}
)
#: Families whose main write has no payment method a caller leaves open to the agent.
UNVARIED = tuple(f for f in FAMILIES if f not in PROPOSED)
#: The family whose one write, if any, is an address change.
INQUIRY = "profile_or_inquiry"
#: Most writes a task composes.
MAX_WRITES = 6
_ORDER_ID = re.compile(r"#W\d{7}")
TRANSFER_MESSAGE = "YOU ARE BEING TRANSFERRED TO A HUMAN AGENT. PLEASE HOLD ON."

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


@dataclass(kw_only=True)
class _Draft(Draft):
    """A retail task under construction: the authenticated caller and their orders."""

    user: User


@dataclass(kw_only=True)
class _Request(Request):
    """What the blueprint asks for, in the retail Generator's terms."""

    writes: int
    #: The requested ``computation``, or the one the Generator makes of the request (a
    #: calculation pattern asks for ``aggregate``; unrequested, it is varied where it fits).
    computation: str | None
    #: Fewest writes the request allows (a retry may step down to it).
    write_floor: int = 0
    #: The requested ``write_mix`` (None: not requested).
    mix: str | None = None


def computations(family: str, outcome: str) -> frozenset[str]:
    """The ``computation`` values a (family, outcome) can realize."""
    return COMPUTATIONS.get((family, outcome), _NO_COMPUTATION)


def _reads_profile(family: str, outcome: str, challenges: Sequence[str]) -> bool:
    """Whether the task must read the caller's profile, whatever it acts on.

    A caller missing their order ids has them found in the profile (which lists the orders);
    a proposal challenge offers the payment methods the profile lists (only a fulfilled family
    in :data:`PROPOSED` proposes one).
    """
    if "missing_information" in challenges:
        return True
    proposal = bool(set(PROPOSAL_CHALLENGES) & set(challenges))
    return proposal and outcome == "fulfill" and family in PROPOSED


def _min_reads(
    family: str,
    outcome: str,
    writes: int,
    computation: str | None = None,
    patterns: frozenset[str] = frozenset(),
    profile: bool = False,
) -> int:
    """Fewest reads a task makes: authentication, the orders acted on, their products.

    ``profile``: the task must also read the caller's profile (:func:`_reads_profile`).
    ``multi_entity_retrieval`` needs two orders or two products read: another order is found
    in the profile (read first, unless it is already), a product in an order read.
    """
    multi = "multi_entity_retrieval" in patterns
    if family == INQUIRY:
        lookup = "lookup_verify_then_modify" in patterns
        if outcome == "refuse":
            # The profile, no order: two orders listed in it to add for the pattern.
            return 2 + 2 * multi
        if computation == "aggregate":
            # The caller and the two orders to total (and the profile the write acts on).
            return 3 + ((writes == 1 and lookup) or profile)
        if multi:
            # The caller, the profile and two orders it lists; or one order and two products.
            return 4
        if writes == 1:
            # The address change alone (the profile read, when it must act on what was seen).
            return 1 + (lookup or profile)
        return 2 + profile  # the caller and the order asked about
    # The caller and the order of the main request, its product for a change of items (a
    # batch of two may span two products); every further write after the first extra reads
    # its own order (the first can be the default address, or the main order's address).
    products = 0
    if outcome == "fulfill" and family in ("order_item_modification", "exchange_delivered_order"):
        products = 1 + ("batched_multi_item_action" in patterns)
    extra = max(0, writes - 2) if outcome == "fulfill" else 0
    if multi and products < 2 and writes == 2 and outcome == "fulfill":
        extra += 1  # the further write on another order, rather than on the profile
    elif multi and products < 2 and writes < 2:
        # Another product of the order read, or another order (after the profile).
        extra += 1 if products or profile else 2
    return 2 + products + profile + extra


def _mix_writes(mix: str, lo: int, hi: int) -> tuple[int, int]:
    """The write counts of [lo, hi] a ``write_mix`` value allows: none, or two kinds need two."""
    if mix == "no_write":
        return lo, 0
    if mix == "one_kind":
        return max(lo, 1), hi
    return max(lo, 2), hi


def _adds_to(mix: str | None, tools: set[str], further: set[str]) -> bool:
    """Whether a further request calling ``further`` write tools keeps to ``mix``.

    ``tools`` are the write tools chosen so far: ``one_kind`` adds none, ``several_kinds``
    adds one while there is only one.
    """
    if mix == "one_kind":
        return further <= tools
    if mix == "several_kinds" and len(tools) == 1:
        return bool(further - tools)
    return True


def _write_range(family: str, outcome: str, bucket_value: str | None) -> tuple[int, int]:
    if outcome == "refuse":
        return 0, 0
    if family == INQUIRY:
        lo, hi = BUCKET_RANGES.get(bucket_value or "0", (0, 1))
        return lo, min(hi, 1)
    lo, hi = BUCKET_RANGES.get(bucket_value or "1", (1, 1))
    return max(lo, 1), min(hi, MAX_WRITES)


#: The feasibility rule, one check per rule: no reads (every caller is authenticated by a
#: read), a refusal with writes, a fulfilled order request without one, more than one profile
#: write, a computation the family cannot carry (``constrained_opt`` never: no retail read
#: lists alternatives), a proposal challenge on a family with no payment method to leave open,
#: a pattern the task cannot show, and write, read and tool-call counts that cannot add up (a
#: proposal challenge or a caller missing their order ids also reads the profile).
#: ``.rules`` states each id in a sentence.
CHECKS = Checks()


# A return refunds, and an item change or exchange settles a price difference, through a
# payment method the caller may leave open (the proposal rule); a cancellation refunds the
# original method, and an address, payment or profile change leaves nothing to propose otherwise.
opening_rules(CHECKS, first_read="authenticates the caller with a read", unvaried=UNVARIED)
computation_rule(CHECKS, FAMILIES, computations)


@CHECKS.rule("refusal_writes")
def _refusal_writes(a: Asked) -> str | None:
    if a.known(FAMILIES) and a.writes is not None and a.outcome == "refuse" and a.writes != "0":
        return f"num_write={a.writes} conflicts with a refusal"
    return None


@CHECKS.rule("fulfil_without_write")
def _fulfil_without_write(a: Asked) -> str | None:
    if a.known(FAMILIES) and a.outcome == "fulfill" and a.family != INQUIRY and a.writes == "0":
        return f"fulfilling {a.family} needs a write, num_write=0"
    return None


@CHECKS.rule("inquiry_writes")
def _inquiry_writes(a: Asked) -> str | None:
    if a.known(FAMILIES) and a.family == INQUIRY and a.writes not in (None, "0", "1"):
        return f"profile_or_inquiry makes at most one write (the address), num_write={a.writes}"
    return None


@CHECKS.rule("pattern_needs_write")
def _pattern_needs_write(a: Asked) -> str | None:
    needing = sorted(a.patterns & WRITE_PATTERNS)
    if a.known(FAMILIES) and needing and (a.outcome == "refuse" or a.writes == "0"):
        return f"tool_use_pattern={needing[0]} needs a write; the task makes none"
    return None


@CHECKS.rule("batch_without_items")
def _batch_without_items(a: Asked) -> str | None:
    if (
        a.known(FAMILIES)
        and "batched_multi_item_action" in a.patterns
        and a.family not in BATCH_FAMILIES
    ):
        return f"tool_use_pattern=batched_multi_item_action needs an item list; {a.family} has none"
    return None


calculation_rules(
    CHECKS,
    FAMILIES,
    computations,
    pattern="price_or_refund_calculation",
    prefix="calculation",
)


# The counts are added up for a selection whose writes, computation and patterns pass their
# rules (they decide the writes, the calculate call and the reads): every rule above but the
# proposal rule, which does not touch them: its profile read counts only for a fulfilled family
# in PROPOSED, which keeps it whichever of two challenges stays (a missing_information caller's
# profile read counts whatever the proposal rule says).
@CHECKS.rule(
    "reads_short",
    "calls_over",
    "calls_under",
    after=CHECKS.ids_but("proposal"),
)
def _counts(a: Asked) -> Conflict | None:
    if not a.known(FAMILIES):
        return None
    w_lo, w_hi = _write_range(a.family, a.outcome, a.writes)
    if a.patterns & WRITE_PATTERNS:
        w_lo = max(w_lo, 1)
    computation = a.computation
    if computation is None and "price_or_refund_calculation" in a.patterns:
        computation = "aggregate"  # what the Generator makes of the pattern
    computes = 1 if computation in ("aggregate", "conditional") else 0
    if _transfers(a.family, a.outcome, a.values("policy_or_constraint_focus")):
        computes += 1  # the hand-off is a call too
    profile = _reads_profile(a.family, a.outcome, a.values("interaction_challenge"))
    base = _min_reads(a.family, a.outcome, w_lo, computation, a.patterns, profile)
    r_lo, r_hi = BUCKET_RANGES.get(a.reads or "", (base, OPEN_END))
    if a.reads is not None and base > r_hi:
        return Conflict(
            "reads_short",
            f"num_read={a.reads} does not fit: {a.family}/{a.outcome} needs {base} read(s)",
        )
    if a.difficulty in DIFFICULTY_CALLS:
        d_lo, d_hi = DIFFICULTY_CALLS[a.difficulty]
        fewest = max(base, r_lo) + w_lo + computes
        if fewest > d_hi:
            return Conflict(
                "calls_over",
                f"difficulty_profile={a.difficulty} allows {d_hi} tool calls; the task needs "
                f"{fewest}",
            )
        if r_hi + w_hi + computes < d_lo:
            return Conflict(
                "calls_under",
                f"difficulty_profile={a.difficulty} needs {d_lo}+ tool calls; the counts allow "
                f"{r_hi + w_hi + computes}",
            )
    return None


# ``write_mix`` (``ontology.yaml``'s candidate, whose rule sentences state these ids): no
# write goes with a refusal or an inquiry that changes nothing; several kinds need two writes
# of a fulfilled family that composes them, within the requested counts.
@CHECKS.rule("write_mix_outcome")
def _write_mix_outcome(a: Asked) -> str | None:
    mix = first(a.selections, "write_mix")
    if mix is None or not a.known(FAMILIES):
        return None
    lo, hi = _write_range(a.family, a.outcome, a.writes)
    if a.writes is None and a.outcome == "fulfill":
        # Unrequested, a fulfilled request makes what its family composes (an inquiry: the
        # address change, or nothing), as the Generator's request reads it.
        hi = 1 if a.family == INQUIRY else MAX_WRITES
        if a.family == INQUIRY and (a.reads == "1" or a.patterns & WRITE_PATTERNS):
            lo = 1
    w_lo, w_hi = _mix_writes(mix, lo, hi)
    if w_lo > w_hi:
        counted = "" if a.writes is None else f" with num_write={a.writes}"
        return f"write_mix={mix} does not fit {a.family}/{a.outcome}{counted}"
    return None


@CHECKS.rule("write_mix_counts", after=("write_mix_outcome", "reads_short", "calls_over"))
def _write_mix_counts(a: Asked) -> str | None:
    if first(a.selections, "write_mix") != "several_kinds" or a.writes is not None:
        return None
    if not a.known(FAMILIES):
        return None
    # Two writes or more: the counts rule, asked with the write buckets that allow it.
    if all(_counts(Asked.of({**a.selections, "num_write": [b]})) for b in ("2", "3-4")):
        return (
            "write_mix=several_kinds makes two writes or more, which the requested read and "
            "tool-call counts leave no room for"
        )
    return None


#: Why a combination of selections can never be realized, or None (a Planner rule): the reason of
#: the first conflict :data:`CHECKS` finds.
infeasible = CHECKS.first


def _transfers(family: str, outcome: str, focus: Sequence[str]) -> bool:
    """Whether the task ends in a transfer: every refusal on the scope focus.

    An inquiry's is a request no tool can do (:data:`_OUT_OF_SCOPE`); an order family's is a
    request policy forbids, after which the caller insists on a human agent
    (:func:`_escalated`), as in τ²-bench's official retail task 10 (12 and 26 write first).
    """
    return outcome == "refuse" and "scope_or_escalation_boundary" in focus


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

    # ---------------------------------------------------------------- intents

    def _intent(
        self, kind: str, user: User, order: Order | None, rng: random.Random, least: int = 1
    ) -> _Intent | None:
        """An intent of ``kind`` on ``order`` that policy allows, or None.

        ``least`` is the fewest items a return, modification or exchange takes.
        """
        read = [Step("get_order_details", {"order_id": order.order_id})] if order else []
        if kind == "user_address":
            donor = rng.choice(self._users)
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
            donor = rng.choice(self._users)
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
                f"You want order {order.order_id} paid with {self._pay_text(user, target.id)} "
                f"instead of {self._pay_text(user, paid.payment_method_id)}.",
                prices,
                "the amount moved to the new payment method",
            )
        if kind == "return":
            nameable = [i for i in order.items if i.item_id not in self._unnamed]
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
                f"{self._pay_text(user, method)}.",
                " + ".join(str(i.price) for i in chosen),
                "the refund for the returned items",
                at_least=True,
                open_text=opened,
                method_text=f"You want the refund to go to {self._pay_text(user, method)}.",
                methods=sorted(set(methods)),
            )
        return self._swap(kind, user, order, rng, read, least)

    def _swap(
        self,
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
            product = self.db.products[item.product_id]
            if item.item_id in self._unnamed:
                continue  # the caller could not name it
            options = [
                v
                for v in product.variants.values()
                if policy.variant_swap_allowed(self.db, order, item.item_id, v.item_id)[0]
                and v.item_id not in self._unnamed
            ]
            if options:
                pairs.append((item, rng.choice(sorted(options, key=lambda v: v.item_id))))
        if len(pairs) < least:
            return None
        pairs = rng.sample(pairs, rng.randint(least, max(least, min(2, len(pairs)))))
        old = [i.item_id for i, _ in pairs]
        new = [v.item_id for _, v in pairs]
        diff = policy.price_difference(self.db, order, old, new)
        original = order.payment_history[0].payment_method_id
        methods = [
            k
            for k, m in sorted(user.payment_methods.items())
            if policy.gift_card_covers(m, diff)[0]
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
            f"goes through {self._pay_text(user, method)}. These are all the items you want to "
            f"{verb}.",
            expression,
            "the price difference",
            open_text=opened,
            method_text=f"Any price difference goes through {self._pay_text(user, method)}.",
            methods=methods,
        )

    def _composition(self, user: User, request: _Request) -> _Composition | None:
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
        orders = self._orders(user, "pending", "delivered")
        rng.shuffle(orders)
        for order in orders:
            kinds = [k for k in KINDS_BY_STATUS[order.status] if INTENT_FAMILY[k] in allowed]
            rng.shuffle(kinds)
            own = [k for k in kinds if INTENT_FAMILY[k] == request.family]
            if primary is None and own:
                least = 2 if "batched_multi_item_action" in request.patterns else 1
                primary = self._intent(own[0], user, order, rng, least)
                if primary is not None and set(PROPOSAL_CHALLENGES) & set(request.challenges):
                    primary = _left_open(primary, user)
                if primary is not None:
                    if primary.kind == "items":
                        # Its address changes first: an item change ends further changes.
                        address = self._intent("address", user, order, rng)
                        if address is not None:
                            further.append(_Further(order.order_id, [address], before=True))
                    continue
            # One request per further order keeps every write on a fresh, unmodified order.
            for kind in kinds:
                intent = self._intent(kind, user, order, rng)
                if intent is not None:
                    further.append(_Further(order.order_id, [intent]))
            if {"address", "items"} <= set(kinds):
                address = self._intent("address", user, order, rng)
                items = self._intent("items", user, order, rng)
                if address is not None and items is not None:
                    further.append(_Further(order.order_id, [address, items]))
        if primary is None:
            return None
        profile = self._intent("user_address", user, None, rng)
        if profile is not None:
            further.append(_Further("", [profile]))
        return _Composition(primary, further)

    @staticmethod
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

    def _computation(self, draft: _Draft, intent: _Intent, request: _Request) -> None:
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

    # ---------------------------------------------------------------- refusals

    def _refuse_on(
        self,
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
        draft = self._base(user, request, ask, f"Refused {request.family.replace('_', ' ')}.")
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

    def _lock(self, user: User, order: Order, rng: random.Random) -> EnvFunctionCall | None:
        """The earlier item modification that locks ``order`` (an initialization action)."""
        intent = self._swap("items", user, order, rng, [])
        if intent is None:
            return None
        return EnvFunctionCall(
            env_type="assistant",
            func_name="modify_pending_order_items",
            arguments=intent.write.arguments,
        )

    def _wrong_status(self, user: User, request: _Request, wanted: str) -> Order | None:
        orders = [o for o in self._orders(user) if o.status != wanted]
        return request.rng.choice(orders) if orders else None


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
        composition = gen._composition(user, request)
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
        chosen = gen._select(composition, request.writes, way, request.rng, request.mix)
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
    gen._computation(draft, primary, request)
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
        intent = gen._intent("user_address", user, None, rng) if request.writes else None
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


def _refuse_cancel(gen: RetailGenerator, user: User, request: _Request) -> _Draft | None:
    rng = request.rng
    if "cancellation_reason_validity" in request.focus:
        pending = gen._orders(user, "pending")
        if not pending:
            return None
        order = rng.choice(pending)
        bad = rng.choice(_BAD_REASONS)
        why = policy.reason_allowed(bad)[1]
        return gen._refuse_on(
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
        init = gen._lock(user, order, rng)
        if init is None:
            return None
        why = (
            f"order {order.order_id} already had its items modified, so it cannot be "
            "modified or cancelled anymore"
        )
    else:
        wanted = policy.REQUIRED_STATUS[tool] or ""
        order = gen._wrong_status(user, request, wanted)
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
    draft = gen._refuse_on(user, request, order, ask, why, f"{verb} the order", refused)
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
        return gen._refuse_on(
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
            intent = gen._swap("items", user, order, rng, [])
            if intent is None:
                continue
            args = intent.write.arguments
            diff = policy.price_difference(gen.db, order, args["item_ids"], args["new_item_ids"])
            for method in user.payment_methods.values():
                ok, why = policy.gift_card_covers(method, diff)
                if not ok:
                    return gen._refuse_on(
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
                    return gen._refuse_on(
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
                    return gen._refuse_on(
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
        return gen._refuse_on(
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
