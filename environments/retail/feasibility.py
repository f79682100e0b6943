"""The retail families and intent kinds, the counts a task makes, and the feasibility rule."""

from __future__ import annotations

from collections.abc import Sequence

from evosyn.buckets import BUCKET_RANGES, DIFFICULTY_CALLS, OPEN_END
from evosyn.environments.feasibility import Asked, Checks, Conflict, first
from evosyn.environments.kit.grounding import PROPOSAL_CHALLENGES
from evosyn.environments.kit.rules import calculation_rules, computation_rule, opening_rules
from evosyn.environments.retail.domain import KNOWLEDGE

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

    An inquiry's is a request no tool can do (:data:`.refusals._OUT_OF_SCOPE`); an order
    family's is a request policy forbids, after which the caller insists on a human agent
    (:func:`.refusals._escalated`), as in τ²-bench's official retail task 10 (12 and 26 write
    first).
    """
    return outcome == "refuse" and "scope_or_escalation_boundary" in focus
