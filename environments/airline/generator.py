"""The programmatic airline Generator: grounds blueprints into new τ²-bench tasks on the real DB.

For a blueprint's task family and expected outcome it searches the airline database for
entities that make the request true under the policy (:mod:`evosyn.environments.airline.policy`):
a reservation the policy lets the agent cancel for ``fulfill``, one it forbids cancelling for
``refuse``, and so on. It then writes the user scenario (persona, known facts, reason for the
call, behaviour under the selected interaction challenges) and the evaluation criteria: the
gold reads, then the writes (none for a refusal), the facts to communicate, and τ²-bench's
airline reward basis (DB and COMMUNICATE).

A task takes its family's plain shape (its own kind of write, repeated) or, seeded and only
where every requested value can still show, a mixed :class:`Shape` as τ²-bench's tasks do: a
flight change with more bags and another passenger, a passenger swap, one trip cancelled and
another changed or a new one booked, a delayed trip cancelled and compensated, a partly flown
trip transferred to a human agent. New trips are one-way, round trips or one-stop connections,
paid with one saved method or a gift card or certificate topped up by a credit card.

The ontology's candidate factors are hard requests: ``write_mix`` picks among the shapes by
the kinds of write they make (``several_kinds`` only a mixed one of two kinds or more),
``trip_shape`` the kind of every new trip and ``payment_split`` how every booking is paid.

Write and read counts requested through ``num_write`` / ``num_read`` are met by composing
several intents and extra look-ups; the ``difficulty_profile`` (tool calls: easy 2-3, medium
4-5, hard 6+) by choosing how many look-ups to add; the ``computation`` by what the gold
actions derive (:mod:`evosyn.environments.features` says how each kind is recognised):

* ``none``: no calculation, no choice among listed options, no derived numeric argument;
* ``aggregate``: a ``calculate`` call for the total or difference the task turns on (refund
  total, bag fee, fare difference, booking total, compensation, bag allowance);
* ``constrained_opt``: the cheapest (booking) or earliest (date change) of two or more flights
  a search lists;
* ``conditional``: the user's condition in dollars ("only if it costs at most $300"), checked
  with a ``calculate`` call before the write.

Every requested ``tool_use_pattern`` is a hard request too (except
``policy_check_before_action``, which no tool call shows): a search whose flights the task
chooses among, a look-up of what is changed, two look-ups of one kind, a calculation, a
confirmed write, a split or partial update. ``policy_or_constraint_focus`` stays a soft
preference (entities showing the focused rule are preferred): the rule a task hinges on is
not visible in its tool calls.

A request that cannot be met raises :class:`GeneratorRejection` with the reason, never a
substitute. Candidates whose gold actions would repeat an official airline task (same
decisive signature and entities) are skipped.
"""

from __future__ import annotations

import collections
import functools
import random
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from tau2.data_model.tasks import Task
from tau2.domains.airline.data_model import (
    CabinClass,
    Flight,
    FlightDateStatusAvailable,
    FlightDB,
    PaymentMethod,
    Reservation,
    User,
)

from evosyn.buckets import BUCKET_RANGES, DIFFICULTY_CALLS, OPEN_END, in_bucket
from evosyn.environments.airline import policy
from evosyn.environments.base import FunctionalSymbol
from evosyn.environments.contamination import collect_entities
from evosyn.environments.kit import phrasing
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
from evosyn.records import Answer, Blueprint

#: Families this Generator grounds.
FAMILIES = (
    "flight_cancellation",
    "seat_or_baggage_service",
    "flight_change",
    "refund_or_compensation",
    "flight_booking",
    "loyalty_or_membership_service",
)
#: Most writes of one kind a task may compose (τ²-bench allots three new ids per task).
MAX_BOOKINGS = 3
MAX_CERTIFICATES = 3
#: Callers tried for one whose words tell the reservations a task changes from their others.
AMBIGUITY_TRIES = 12
#: An airport code or an ISO date in a scenario's words.
_CODE_OR_DATE = re.compile(r"\b(?:[A-Z]{3}|\d{4}-\d{2}-\d{2})\b")
#: Fitting users tried for one that also matches the focus (a soft preference).
PREFERENCE_SCAN = 60
#: Cabins, in the order a change or a booking tries them.
CABINS: tuple[CabinClass, ...] = ("economy", "business", "basic_economy")
#: Dates whose flights are still for sale in the airline DB.
BOOKABLE_FROM = "2024-05-16"

#: Computation kinds each (family, outcome) can realize; refusals compute nothing.
COMPUTATIONS: dict[tuple[str, str], frozenset[str]] = {
    ("flight_cancellation", "fulfill"): frozenset({"none", "aggregate", "conditional"}),
    ("seat_or_baggage_service", "fulfill"): frozenset({"aggregate", "conditional"}),
    ("flight_change", "fulfill"): frozenset(
        {"none", "aggregate", "constrained_opt", "conditional"}
    ),
    ("refund_or_compensation", "fulfill"): frozenset({"aggregate"}),
    ("flight_booking", "fulfill"): frozenset({"aggregate", "constrained_opt", "conditional"}),
    ("loyalty_or_membership_service", "fulfill"): frozenset({"none", "aggregate"}),
}
_NO_COMPUTATION = frozenset({"none"})
#: Patterns only a write can show.
WRITE_PATTERNS = frozenset(
    {
        "lookup_verify_then_modify",
        "state_change_with_confirmation",
        "partial_update_or_split_action",
        "search_compare_then_book",
    }
)
#: Families whose single write is neither split nor partial: the pattern needs two writes.
_WHOLE_WRITES = frozenset({"flight_cancellation", "flight_booking", "refund_or_compensation"})
_UNKNOWN_IDS = "You do not know your reservation ids."


@dataclass(kw_only=True)
class _Draft(Draft):
    """An airline task under construction: the caller and the reservations it knows and reads."""

    user: User
    known_reservations: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    # Reservations the agent reads, so read padding knows what is already looked up.
    read_reservations: list[str] = field(default_factory=list)


@dataclass(kw_only=True)
class _Request(Request):
    """What the blueprint asks for, in the airline Generator's terms."""

    writes: int
    #: The ``calculate`` call the task makes: "aggregate", "conditional" or None.
    calc: str | None
    #: Flight searches must list "one" flight or "many" (a choice); None for either.
    choice: str | None
    #: The :class:`Shape` the task takes (:data:`PLAIN`: the family's own kind of write).
    shape: str = "plain"
    #: The writes of the plain shape, should the task fall back to it.
    plain_writes: int = 0
    #: Candidates of a mixed shape that could not meet the counts so far.
    shape_misses: int = 0
    #: The requested ``write_mix``, ``trip_shape`` and ``payment_split`` (None: not requested).
    mix: str | None = None
    trip: str | None = None
    pay: str | None = None

    @property
    def computation(self) -> str | None:
        """The requested ``computation``, or None."""
        return self.controls["computation"]


#: The shape of a family's own kind of write, repeated ``num_write`` times.
PLAIN = "plain"
#: Tool-use patterns any task shows or may be padded to show (the check is not in the calls;
#: a second look-up of one kind is added by the read padding).
_ANY_PATTERNS = frozenset({"policy_check_before_action", "multi_entity_retrieval"})


@dataclass(frozen=True)
class Shape:
    """A composition of gold calls a (family, outcome) may take besides its plain one.

    τ²-bench's airline tasks mix kinds of write (a flight change with added bags and a new
    passenger, a cancellation with a new booking or a change of another trip) and end in a
    transfer where only a human agent can help. A shape makes one such mix, always so that the
    family its writes imply (``DomainKnowledge.family_priority``) is the requested one; it is
    chosen, seeded, only where it can show every requested pattern, computation and count.
    """

    name: str
    family: str
    outcome: str
    #: Writes it makes.
    writes: int
    #: Fewest reads: the caller, the reservations it reads, its searches and status checks.
    reads: int
    #: Calls that neither read nor write (a transfer to a human agent).
    other: int = 0
    #: Reservations it reads (two show multi-entity retrieval without padding).
    reservations: int = 1
    #: Seeded weight against the family's other shapes (the plain one's is in PLAIN_WEIGHTS).
    weight: int = 1
    #: Whether some write charges a saved payment method a proposal challenge can vary.
    pays: bool = True
    #: Whether some write has derived numbers (bags, amounts), so computation=none cannot show.
    derives: bool = True
    #: Whether a write picks a flight a search lists (so a choice among several can show).
    searches: bool = False
    #: Whether it has a money total to add up in a ``calculate`` call.
    totals: bool = True
    #: Whether some write is a partial update (``update_*``).
    updates: bool = False
    #: Kinds of write tool it calls (``write_mix``: two or more are ``several_kinds``).
    kinds: int = 1

    @property
    def patterns(self) -> frozenset[str]:
        """The tool-use patterns its gold calls can show."""
        shown = set(_ANY_PATTERNS)
        if self.writes:
            shown |= {"lookup_verify_then_modify", "state_change_with_confirmation"}
        if self.writes >= 2 or self.updates:
            shown.add("partial_update_or_split_action")
        if self.totals:
            shown.add("price_or_fee_recalculation")
        if self.searches:
            shown.add("search_compare_then_book")
        return frozenset(shown)


#: The mixed shapes, by family and outcome (their writes imply the family they are listed
#: under: a flight change outranks a booking, a booking a cancellation, a cancellation a
#: certificate).
SHAPES = (
    # A flight or cabin change, then more checked bags, on one reservation.
    Shape(
        "change_and_bags",
        "flight_change",
        "fulfill",
        2,
        2,
        weight=2,
        searches=True,
        updates=True,
        kinds=2,
    ),
    # Another traveller in place of one passenger (same number of passengers).
    Shape(
        "passenger_swap",
        "flight_change",
        "fulfill",
        1,
        2,
        pays=False,
        derives=False,
        totals=False,
        updates=True,
    ),
    # A flight or cabin change, another traveller and more bags, on one reservation.
    Shape(
        "change_passenger_bags",
        "flight_change",
        "fulfill",
        3,
        2,
        searches=True,
        updates=True,
        kinds=3,
    ),
    # One reservation cancelled, another one's flights or cabin changed.
    Shape(
        "cancel_and_change",
        "flight_change",
        "fulfill",
        2,
        3,
        reservations=2,
        weight=2,
        derives=False,
        searches=True,
        updates=True,
        kinds=2,
    ),
    # A reservation cancelled and a new trip booked instead.
    Shape("cancel_and_book", "flight_booking", "fulfill", 2, 3, weight=2, searches=True, kinds=2),
    # A trip with a delayed flight cancelled, then the delay compensated with a certificate.
    Shape("delayed_cancel", "flight_cancellation", "fulfill", 2, 3, pays=False, kinds=2),
    # One reservation cancelled; another is partly flown, which only a human agent can handle.
    # Weighted up: few requested patterns fit it, and it is one of two shapes that transfer.
    Shape(
        "cancel_and_transfer",
        "flight_cancellation",
        "fulfill",
        1,
        3,
        other=1,
        reservations=2,
        weight=2,
        pays=False,
        derives=False,
        totals=False,
    ),
    # A partly flown trip the caller wants cancelled: the agent transfers, as policy requires.
    Shape(
        "flown_transfer",
        "flight_cancellation",
        "refuse",
        0,
        2,
        other=1,
        pays=False,
        derives=False,
        totals=False,
        kinds=0,
    ),
)
#: Seeded weight of the plain shape where a family has mixed ones.
PLAIN_WEIGHTS = {
    ("flight_change", "fulfill"): 2,
    ("flight_booking", "fulfill"): 2,
    ("flight_cancellation", "fulfill"): 2,
    ("flight_cancellation", "refuse"): 1,
}


#: The family that only looks things up: an inquiry, which writes nothing.
READ_ONLY = "loyalty_or_membership_service"
#: The (family, outcome) that books new trips: the one ``trip_shape`` and ``payment_split`` fit.
_BOOKING = ("flight_booking", "fulfill")
_MAX_WRITES = {"flight_booking": MAX_BOOKINGS, "refund_or_compensation": MAX_CERTIFICATES}
#: Families whose writes charge no payment method the user could choose otherwise (a
#: certificate, a cancellation, an inquiry): no proposal for a challenge to answer.
NO_PAYMENT_CHOICE = (
    "refund_or_compensation",
    "loyalty_or_membership_service",
    "flight_cancellation",
)


def _base_reads(family: str, outcome: str, writes: int, choice: str | None) -> int:
    """Fewest reads a (family, outcome) task with ``writes`` writes makes."""
    if outcome == "refuse":
        return 1 if family in ("flight_booking", READ_ONLY) else 2
    if family == READ_ONLY:
        return 2
    if family == "refund_or_compensation":
        return 1 + 2 * writes  # each reservation and the status of its cancelled flight
    if family == "flight_change" and choice == "many":
        return 2 + writes  # each reservation and a search for some new flight
    return 1 + writes


def _multi_extra(family: str, outcome: str, writes: int) -> int:
    """Reads to add so that two entities of one kind are looked up (multi-entity retrieval)."""
    if outcome == "refuse" or family == READ_ONLY:
        return 2 if family in ("flight_booking", READ_ONLY) else 1
    if family == "flight_booking":
        return 2  # bookings read no reservation: two of the caller's
    return 0 if writes >= 2 else 1


def _min_writes(family: str, outcome: str, patterns: frozenset[str]) -> int:
    """Fewest writes a (family, outcome) with these patterns composes."""
    if outcome == "refuse" or family == READ_ONLY:
        return 0
    split = "partial_update_or_split_action" in patterns and family in _WHOLE_WRITES
    return 2 if split else 1


def computations(family: str, outcome: str) -> frozenset[str]:
    """The ``computation`` values a (family, outcome) can realize."""
    return COMPUTATIONS.get((family, outcome), _NO_COMPUTATION)


#: The feasibility rule, one check per rule: only combinations that fail whatever the
#: database holds are named (a refusal or a read-only inquiry with writes, a fulfilled write
#: request without one, more writes than a family can compose, no reads at all, a computation
#: or a tool-use pattern the family and outcome cannot show, and write, read and tool-call
#: counts that cannot add up). ``.rules`` states each id in a sentence.
CHECKS = Checks()


def _writing(a: Asked) -> bool:
    """Whether the (family, outcome) must write (a fulfilled family other than the inquiry)."""
    return a.outcome == "fulfill" and a.family in FAMILIES and a.family != READ_ONLY


opening_rules(CHECKS, first_read="reads the caller's profile", unvaried=NO_PAYMENT_CHOICE)


@CHECKS.rule("booking_without_id")
def _booking_without_id(a: Asked) -> str | None:
    if a.family == "flight_booking" and "missing_information" in a.values("interaction_challenge"):
        return (
            "interaction_challenge=missing_information needs an id to look up; a new booking "
            "has none"
        )
    return None


computation_rule(CHECKS, FAMILIES, computations)


@CHECKS.rule("refusal_writes")
def _refusal_writes(a: Asked) -> str | None:
    if a.writes is not None and a.outcome == "refuse" and a.writes != "0":
        return f"num_write={a.writes} conflicts with a refusal"
    return None


@CHECKS.rule("inquiry_writes")
def _inquiry_writes(a: Asked) -> str | None:
    if a.writes is not None and a.family == READ_ONLY and a.writes != "0":
        return f"num_write={a.writes} conflicts with a read-only inquiry"
    return None


@CHECKS.rule("fulfil_without_write")
def _fulfil_without_write(a: Asked) -> str | None:
    if _writing(a) and a.writes == "0":
        return f"fulfilling {a.family} needs a write, num_write=0"
    return None


@CHECKS.rule("too_many_writes")
def _too_many_writes(a: Asked) -> str | None:
    hi = _MAX_WRITES.get(a.family)
    if _writing(a) and hi is not None and a.writes == "5+":
        return f"{a.family} composes at most {hi} writes; num_write={a.writes}"
    return None


@CHECKS.rule("pattern_needs_write")
def _pattern_needs_write(a: Asked) -> str | None:
    needing = sorted(a.patterns & WRITE_PATTERNS)
    if a.known(FAMILIES) and (a.outcome == "refuse" or a.family == READ_ONLY) and needing:
        return f"tool_use_pattern={needing[0]} needs a write; {a.family}/{a.outcome} makes none"
    return None


@CHECKS.rule("search_without_search")
def _search_without_search(a: Asked) -> str | None:
    if (
        a.known(FAMILIES)
        and "search_compare_then_book" in a.patterns
        and a.family not in ("flight_booking", "flight_change")
    ):
        return (
            f"tool_use_pattern=search_compare_then_book needs a flight search; {a.family} "
            "has none to choose from"
        )
    return None


@CHECKS.rule("search_without_choice")
def _search_without_choice(a: Asked) -> str | None:
    if (
        a.known(FAMILIES)
        and "search_compare_then_book" in a.patterns
        and a.computation in ("none", "aggregate")
    ):
        return (
            f"tool_use_pattern=search_compare_then_book is a choice among flights, which "
            f"computation={a.computation} excludes"
        )
    return None


calculation_rules(
    CHECKS,
    FAMILIES,
    computations,
    pattern="price_or_fee_recalculation",
    prefix="recalculation",
)


@CHECKS.rule("split_needs_two_writes")
def _split_needs_two_writes(a: Asked) -> str | None:
    if a.known(FAMILIES) and a.writes == "1" and _min_writes(a.family, a.outcome, a.patterns) > 1:
        return f"tool_use_pattern=partial_update_or_split_action needs two {a.family} writes"
    return None


# The counts are added up for a selection whose writes, computation and patterns pass their
# rules (they decide the writes, the calculate call and the searches): every rule above but
# the challenge rules, which do not touch them.
@CHECKS.rule(
    "reads_short",
    "calls_over",
    "calls_under",
    after=CHECKS.ids_but("proposal", "booking_without_id"),
)
def _counts(a: Asked) -> Conflict | None:
    if not a.known(FAMILIES):
        return None
    return _count_conflict(
        a.family, a.outcome, a.writes, a.reads, a.computation, a.difficulty, None, a.patterns
    )


# The factors beyond the seed space the Generator honours (``ontology.yaml``'s candidates,
# whose rule sentences state these ids): the kinds of write, and a new booking's trip and
# payment.
@CHECKS.rule("write_mix_outcome")
def _write_mix_outcome(a: Asked) -> str | None:
    mix = first(a.selections, "write_mix")
    if mix is None or not a.known(FAMILIES):
        return None
    writes_nothing = a.outcome == "refuse" or a.family == READ_ONLY
    if mix == "no_write" and not writes_nothing:
        return f"write_mix=no_write conflicts with fulfilling {a.family}, which writes"
    if mix != "no_write" and writes_nothing:
        return f"write_mix={mix} needs a write; {a.family}/{a.outcome} makes none"
    return None


@CHECKS.rule("write_mix_several", after=("write_mix_outcome",))
def _write_mix_several(a: Asked) -> str | None:
    if first(a.selections, "write_mix") != "several_kinds" or not a.known(FAMILIES):
        return None
    if any(s.kinds >= 2 for s in _fitting_shapes(a)):
        return None
    return (
        f"write_mix=several_kinds: no mixed shape of {a.family}/{a.outcome} makes two kinds of "
        "write with the requested computation, patterns, challenges and counts"
    )


@CHECKS.rule("trip_without_booking")
def _trip_without_booking(a: Asked) -> str | None:
    trip = first(a.selections, "trip_shape")
    if trip is None or not a.known(FAMILIES) or (a.family, a.outcome) == _BOOKING:
        return None
    return f"trip_shape={trip} needs a new booking; {a.family}/{a.outcome} books none"


@CHECKS.rule("connection_choice", after=("trip_without_booking",))
def _connection_choice(a: Asked) -> str | None:
    if first(a.selections, "trip_shape") == "connection" and _choice(a.computation, a.patterns) == (
        "many"
    ):
        return "trip_shape=connection is no choice among direct flights, which the request asks for"
    return None


@CHECKS.rule(
    "round_trip_counts",
    after=("trip_without_booking", "connection_choice", "reads_short", "calls_over", "calls_under"),
)
def _round_trip_counts(a: Asked) -> str | None:
    if first(a.selections, "trip_shape") != "round_trip" or not a.known(FAMILIES):
        return None
    found = _count_conflict(
        a.family,
        a.outcome,
        a.writes,
        a.reads,
        a.computation,
        a.difficulty,
        None,
        a.patterns,
        "round_trip",
    )
    return None if found is None else f"trip_shape=round_trip searches each way: {found.reason}"


@CHECKS.rule("payment_without_booking")
def _payment_without_booking(a: Asked) -> str | None:
    pay = first(a.selections, "payment_split")
    if pay is None or not a.known(FAMILIES) or (a.family, a.outcome) == _BOOKING:
        return None
    return f"payment_split={pay} needs a new booking; {a.family}/{a.outcome} pays for none"


@CHECKS.rule("split_with_proposal", after=("payment_without_booking",))
def _split_with_proposal(a: Asked) -> str | None:
    pay = first(a.selections, "payment_split")
    proposed = sorted(set(PROPOSAL_CHALLENGES) & set(a.values("interaction_challenge")))
    if _SPLIT_SOURCES.get(pay or "") is not None and proposed:
        return (
            f"payment_split={pay} pays with two methods; interaction_challenge={proposed[0]} "
            "varies the one method a booking charges"
        )
    return None


#: Why a combination of selections can never be realized, or None (a Planner rule): the reason of
#: the first conflict :data:`CHECKS` finds.
infeasible = CHECKS.first


def _count_conflict(
    family: str,
    outcome: str,
    write_bucket: str | None,
    read_bucket: str | None,
    computation: str | None,
    difficulty: str | None,
    exact_writes: int | None = None,
    patterns: frozenset[str] = frozenset(),
    trip: str | None = None,
) -> Conflict | None:
    """Why the requested write, read and tool-call counts cannot add up, or None.

    With ``exact_writes`` the task has exactly that many writes (a count in the bucket); a
    ``trip`` (``trip_shape``) of ``round_trip`` searches twice per booking.
    """
    writes = 0
    if exact_writes is not None:
        writes = exact_writes
    elif outcome == "fulfill" and family != READ_ONLY:
        fewest = _min_writes(family, outcome, patterns)
        lo, hi = BUCKET_RANGES.get(write_bucket or "", (fewest, fewest))
        writes = max(lo, fewest)
        if writes > min(hi, _MAX_WRITES.get(family, OPEN_END)):
            return None  # reported by the write-count rules
    computes = 1 if _calculation(computation, patterns) else 0
    base = _base_reads(family, outcome, writes, _choice(computation, patterns))
    if trip == "round_trip":
        base += writes
    if "multi_entity_retrieval" in patterns:
        base += _multi_extra(family, outcome, writes)
    r_lo, r_hi = BUCKET_RANGES.get(read_bucket or "", (base, OPEN_END))
    if read_bucket is not None and base > r_hi:
        return Conflict(
            "reads_short",
            f"num_read={read_bucket} does not fit: {family}/{outcome} with {writes} write(s) "
            f"needs {base} read(s)",
        )
    if difficulty not in DIFFICULTY_CALLS:
        return None
    d_lo, d_hi = DIFFICULTY_CALLS[difficulty]
    fewest = max(base, r_lo) + writes + computes
    if fewest > d_hi:
        return Conflict(
            "calls_over",
            f"difficulty_profile={difficulty} allows at most {d_hi} tool calls; the task "
            f"needs {fewest}",
        )
    single = exact_writes is not None or write_bucket in (None, "0", "1", "2")
    if r_hi + writes + computes < d_lo and single:
        return Conflict(
            "calls_under",
            f"difficulty_profile={difficulty} needs {d_lo}+ tool calls; num_read={read_bucket} "
            f"allows at most {r_hi + writes + computes}",
        )
    return None


def _calculation(computation: str | None, patterns: frozenset[str]) -> str | None:
    """The kind of ``calculate`` call the task makes (conditional, aggregate), or None."""
    if computation in ("aggregate", "conditional"):
        return computation
    if "price_or_fee_recalculation" in patterns and computation != "none":
        return "aggregate"
    return None


def _choice(computation: str | None, patterns: frozenset[str]) -> str | None:
    """Whether searches must list one flight, several (a choice), or either (None)."""
    if computation == "constrained_opt" or "search_compare_then_book" in patterns:
        return "many"
    return "one" if computation in ("none", "aggregate") else None


def _shape_fits(
    shape: Shape,
    *,
    computation: str | None,
    patterns: frozenset[str],
    challenges: Sequence[str],
    writes: str | None,
    reads: str | None,
    difficulty: str | None,
) -> bool:
    """Whether ``shape`` can show everything a request of these values asks for.

    The counts are checked roughly: a draft that misses them falls back to the plain shape
    (unless ``write_mix=several_kinds`` was asked for: the request is then rejected).
    """
    calc, choice = _calculation(computation, patterns), _choice(computation, patterns)
    if computation == "conditional" or (computation == "none" and shape.derives):
        return False
    if calc is not None and not shape.totals:
        return False
    if choice == "many" and not shape.searches:
        return False
    if set(PROPOSAL_CHALLENGES) & set(challenges) and not shape.pays:
        return False
    if not patterns <= shape.patterns:
        return False
    if writes is not None and in_bucket(shape.writes, writes) is not True:
        return False
    multi = "multi_entity_retrieval" in patterns and shape.reservations < 2
    shape_reads = shape.reads + (1 if multi else 0)
    others = shape.writes + shape.other + (1 if calc else 0)
    r_lo, r_hi = BUCKET_RANGES.get(reads or "", (0, OPEN_END))
    d_lo, d_hi = DIFFICULTY_CALLS.get(difficulty or "", (0, OPEN_END))
    return shape_reads <= r_hi and max(shape_reads, r_lo) + others <= d_hi and r_hi + others >= d_lo


def _fitting_shapes(a: Asked) -> list[Shape]:
    """The mixed shapes of the selection's (family, outcome) that can show all it asks for."""
    return [
        s
        for s in SHAPES
        if (s.family, s.outcome) == (a.family, a.outcome)
        and _shape_fits(
            s,
            computation=a.computation,
            patterns=a.patterns,
            challenges=a.values("interaction_challenge"),
            writes=a.writes,
            reads=a.reads,
            difficulty=a.difficulty,
        )
    ]


def _shape_for(request: _Request) -> str:
    """The shape the task takes: the plain one or a fitting mixed one, seeded by weight.

    ``write_mix=several_kinds`` takes a mixed shape of several kinds of write (GeneratorRejection
    if none fits), ``one_kind`` the plain shape or a mixed one of one kind.
    """
    key = (request.family, request.outcome)
    asked = Asked.of(with_controls(request.blueprint.selections, request.controls))
    fitting = _fitting_shapes(asked)
    if request.mix == "several_kinds":
        fitting = [s for s in fitting if s.kinds >= 2]
        if not fitting:
            raise GeneratorRejection(
                f"write_mix=several_kinds: no mixed shape of {request.family}/{request.outcome} "
                "fits the requested computation, patterns, challenges and counts"
            )
    elif request.mix == "one_kind":
        fitting = [s for s in fitting if s.kinds == 1]
    if not fitting:
        return PLAIN
    rng = phrasing.seeded(request.seed, request.blueprint.blueprint_id, "shape")
    names = [s.name for s in fitting]
    weights = [s.weight for s in fitting]
    if request.mix != "several_kinds":
        names, weights = [PLAIN, *names], [PLAIN_WEIGHTS.get(key, 1), *weights]
    return rng.choices(names, weights)[0]


def _count_in(bucket_value: str, rng: random.Random, lo: int, hi: int) -> int | None:
    """A count of the bucket ``bucket_value`` within [lo, hi], seeded; None if none fits."""
    if bucket_value in BUCKET_RANGES:
        low, high = BUCKET_RANGES[bucket_value]
        start = max(low, lo) if high == OPEN_END else low
        options = list(range(start, min(high, start + 1) + 1))
    else:
        try:
            options = [int(bucket_value)]
        except ValueError:
            return None
    fitting = [n for n in options if lo <= n <= hi]
    return rng.choice(fitting) if fitting else None


def _money(amount: float) -> str:
    # τ²-bench strips commas from replies before matching, so no thousands separators.
    return str(int(amount)) if float(amount).is_integer() else f"{amount:.2f}"


def _can_vary_payment(user: User) -> bool:
    """Whether the user has two saved methods, other than certificates, named differently."""
    named = {
        (m.source, getattr(m, "brand", None), getattr(m, "last_four", None))
        for m in user.payment_methods.values()
        if m.source != "certificate"
    }
    return len(named) >= 2


def _method_text(user: User, method: PaymentMethod) -> str:
    return payment_text(method, list(user.payment_methods.values()))


def _record_words(reservation: Reservation) -> set[str]:
    """The codes, dates and flight numbers a reservation's record holds."""
    words = {reservation.origin, reservation.destination}
    for flight in reservation.flights:
        words |= {flight.origin, flight.destination, flight.date, flight.flight_number}
    return words


def _trip_text(reservation: Reservation) -> str:
    # The segments' route, since some round trips store the same origin and destination.
    flights = reservation.flights
    route = "-".join([flights[0].origin] + [f.destination for f in flights])
    kind = "round trip" if reservation.flight_type == "round_trip" else "one-way trip"
    return f"the {kind} {route} departing {flights[0].date}"


class AirlineGenerator(GroundedGenerator[_Draft, _Request, FlightDB]):
    """Grounds airline blueprints into new τ²-bench tasks whose gold actions realize them."""

    domain_name = "airline"
    database = FlightDB

    # ---------------------------------------------------------------- database views

    @functools.cached_property
    def _users(self) -> list[User]:
        return [self.db.users[k] for k in sorted(self.db.users)]

    @functools.cached_property
    def _routes(self) -> list[tuple[str, str]]:
        """Every (origin, destination) some direct flight serves."""
        return sorted({(f.origin, f.destination) for f in self.db.flights.values()})

    @functools.cached_property
    def _departing(self) -> dict[str, list[Flight]]:
        """The flights leaving each airport, in the database's order."""
        out: dict[str, list[Flight]] = {}
        for flight in self.db.flights.values():
            out.setdefault(flight.origin, []).append(flight)
        return out

    def _reservations(self, user: User) -> list[Reservation]:
        return [self.db.reservations[r] for r in user.reservations if r in self.db.reservations]

    def _shuffled_users(self, request: _Request) -> list[User]:
        users = [u for u in self._users if u.user_id not in request.excluded]
        if set(PROPOSAL_CHALLENGES) & set(request.challenges):
            # A change of mind or a late condition needs a second method to propose first.
            users = [u for u in users if _can_vary_payment(u)]
        request.rng.shuffle(users)
        return users

    # ---------------------------------------------------------------- the candidate loop

    def _build(self, request: _Request) -> _Draft:
        for _ in range(AMBIGUITY_TRIES):
            draft = self._build_once(request)
            if self._told_apart(draft):
                return draft
            request.excluded.add(draft.user.user_id)
        return draft

    def _told_apart(self, draft: _Draft) -> bool:
        """Whether the caller's words tell each reservation a write acts on from the others.

        The information-flow gate's test (``choices.entity``): the airport codes and dates the
        caller says that are a reservation's own must not all belong to another of theirs too
        ("the one-way trip CLT-LGA-CLT on May 23" beside a round trip DEN-CLT-LGA-CLT-DEN).
        """
        said = set(_CODE_OR_DATE.findall(" ".join([draft.reason, *draft.instructions])))
        mine = self._reservations(draft.user)
        for step in draft.steps:
            rid = step.arguments.get("reservation_id")
            if rid is None or self._symbol(step) != FunctionalSymbol.WRITE:
                continue
            own = _record_words(self.db.reservations[rid]) & said
            if any(r.reservation_id != rid and own <= _record_words(r) for r in mine):
                return False
        return True

    def _build_once(self, request: _Request) -> _Draft:
        if request.shape != PLAIN:
            # A fallback to the plain shape draws as if no mixed one had been tried.
            drawn = request.rng.getstate()
            try:
                draft: _Draft | None = _SHAPE_BUILDERS[request.shape](self, request)
            except GeneratorRejection:
                draft = None
            if draft is not None and self._room(draft, request):
                return draft
            request.rng.setstate(drawn)
            self._plain(request)
        return _BUILDERS[(request.family, request.outcome)](self, request)

    def _exclude(self, draft: _Draft, request: _Request) -> None:
        request.excluded.add(draft.user.user_id)

    def _retry_unfit(self, draft: _Draft, request: _Request) -> None:
        self._exclude(draft, request)
        if request.shape != PLAIN:
            request.shape_misses += 1
            if request.shape_misses >= 2:
                self._plain(request)

    def _request(self, blueprint: Blueprint, seed: int) -> _Request:
        asked = Request.read(blueprint, seed, FAMILIES, "an airline family", infeasible)
        family, outcome, rng, patterns = asked.family, asked.outcome, asked.rng, asked.patterns
        write_bucket, computation = asked.controls["num_write"], asked.controls["computation"]
        read_bucket, difficulty = asked.read_bucket, asked.difficulty
        writes = 0
        if outcome == "fulfill" and family != READ_ONLY:
            hi = _MAX_WRITES.get(family, 6)
            lo = _min_writes(family, outcome, patterns)
            count = lo if write_bucket is None else _count_in(write_bucket, rng, lo, hi)
            if count is None:
                raise GeneratorRejection(
                    f"{family} composes {lo} to {hi} writes here; num_write={write_bucket}"
                )
            # Within the bucket, a count whose reads and calls can still fit the request.
            lo_w, hi_w = BUCKET_RANGES.get(write_bucket or "", (count, count))
            fitting = [
                n
                for n in range(max(lo_w, lo), min(hi_w, hi, count + 1) + 1)
                if _count_conflict(
                    family,
                    outcome,
                    write_bucket,
                    read_bucket,
                    computation,
                    difficulty,
                    n,
                    patterns,
                    first(blueprint.selections, "trip_shape"),
                )
                is None
            ]
            writes = count if count in fitting or not fitting else fitting[0]
        request = _Request(
            **asked.shared(),
            writes=writes,
            calc=_calculation(computation, patterns),
            choice=_choice(computation, patterns),
            plain_writes=writes,
            mix=first(blueprint.selections, "write_mix"),
            trip=first(blueprint.selections, "trip_shape"),
            pay=first(blueprint.selections, "payment_split"),
        )
        request.shape = _shape_for(request)
        if request.shape != PLAIN:
            request.writes = _SHAPES[request.shape].writes
        return request

    def _plain(self, request: _Request) -> None:
        """Fall back to the family's plain shape (a mixed one found no fitting candidate).

        Raises:
            GeneratorRejection: ``write_mix=several_kinds`` was asked for, which the plain
                shape (one kind of write) cannot show.
        """
        if request.mix == "several_kinds":
            raise GeneratorRejection(
                f"write_mix=several_kinds: no caller fits the mixed shape {request.shape} "
                "within the requested counts"
            )
        request.shape, request.writes = PLAIN, request.plain_writes

    def _room(self, draft: _Draft, request: _Request) -> bool:
        """Whether ``draft``'s calls leave room under the requested read and call counts."""
        reads = self._reads(draft)
        r_hi = BUCKET_RANGES.get(request.read_bucket or "", (0, OPEN_END))[1]
        d_hi = DIFFICULTY_CALLS.get(request.difficulty or "", (0, OPEN_END))[1]
        return reads <= r_hi and len(draft.steps) <= d_hi

    # ---------------------------------------------------------------- reads

    def _pad_reads(self, draft: _Draft, request: _Request) -> None:
        """Add look-ups until the reads meet ``num_read`` and the calls the difficulty.

        Raises:
            Unfit: If this caller's records cannot reach a count that fits both.
        """
        others = [
            r.reservation_id
            for r in self._reservations(draft.user)
            if r.reservation_id not in draft.read_reservations
        ]
        missing = "missing_information" in request.challenges and bool(draft.read_reservations)
        multi = "multi_entity_retrieval" in request.patterns
        reads = self._reads(draft)
        others_calls = len(draft.steps) - reads
        statuses = self._status_checks(draft, others)
        # The pattern needs two look-ups of one kind (a hard request).
        lo = reads + (self._multi_need(draft) if multi else 0)
        hi = reads + len(others) + len(statuses)
        r_lo, r_hi = BUCKET_RANGES.get(request.read_bucket or "", (0, OPEN_END))
        d_lo, d_hi = DIFFICULTY_CALLS.get(request.difficulty or "", (0, OPEN_END))
        fitting = [
            n
            for n in range(max(lo, r_lo, d_lo - others_calls), min(hi, r_hi) + 1)
            if n + others_calls <= d_hi
        ]
        # The challenge likes one more look-up, where the counts leave room.
        wanted_lo = max(lo, reads + (min(1, len(others)) if missing else 0))
        roomy = [n for n in fitting if n >= wanted_lo]
        if roomy or (request.read_bucket is None and request.difficulty is None):
            fitting, lo = roomy, wanted_lo
        if missing:
            # Whether or not there is room to look at a wrong reservation, the caller does not
            # know the id and the agent finds it from the profile.
            draft.known_reservations = []
            draft.unknown.append(_UNKNOWN_IDS)
        if not fitting and request.read_bucket is None and request.difficulty is None:
            fitting = [lo]
        if not fitting:
            wanted = [
                f"num_read={request.read_bucket}" if request.read_bucket else "",
                f"difficulty_profile={request.difficulty}" if request.difficulty else "",
            ]
            raise Unfit(
                f"{' and '.join(w for w in wanted if w) or 'the reads'} do not fit: the task "
                f"needs {lo} read(s) and {others_calls} other call(s) and can reach at most "
                f"{hi} read(s)"
            )
        if request.read_bucket is None and request.difficulty is None:
            target = lo
        else:
            target = request.rng.choice(fitting[:2])
        need = target - reads
        extra = others[: min(need, len(others))]
        if extra:
            # The agent also reads the caller's other reservations from the profile, before
            # those the request is about (read last, they are what the agent acts on). The
            # caller still knows their ids: one left without them says so, acting out a
            # missing_information nobody asked for.
            position = next(
                (i for i, s in enumerate(draft.steps) if s.name == "get_reservation_details"),
                1,
            )
            for offset, rid in enumerate(extra):
                draft.steps.insert(
                    position + offset, Step("get_reservation_details", {"reservation_id": rid})
                )
        statuses = self._status_checks(draft, extra)[: need - len(extra)]
        if statuses:
            position = self._last_read_position(draft) + 1
            for offset, (number, date) in enumerate(statuses):
                draft.steps.insert(
                    position + offset,
                    Step("get_flight_status", {"flight_number": number, "date": date}),
                )
        if multi and self._multi_need(draft):
            raise Unfit(
                "tool_use_pattern=multi_entity_retrieval does not fit: the caller has no two "
                "reservations or flights to look up within the counts"
            )

    def _multi_need(self, draft: _Draft) -> int:
        """Look-ups missing for two entities of one kind (0 when the reads already have them)."""
        seen: set[tuple[str, str]] = set()
        keys = self.domain.knowledge.entity_keys
        for step in draft.steps:
            if self._is_read(step):
                collect_entities(step.arguments, keys, seen)
        kinds = collections.Counter(kind for kind, _ in seen)
        if max(kinds.values(), default=0) >= 2:
            return 0
        # Padding looks up reservations and flight statuses: those kinds are the ones that grow.
        return 2 - max(kinds["reservation_id"], kinds["flight_number"])

    def _last_read_position(self, draft: _Draft) -> int:
        positions = [i for i, s in enumerate(draft.steps) if self._is_read(s)]
        return positions[-1] if positions else -1

    def _status_checks(self, draft: _Draft, extra: Sequence[str] = ()) -> list[tuple[str, str]]:
        """Flights of the read reservations (and ``extra`` ones) whose status is unchecked."""
        checked = {
            (s.arguments["flight_number"], s.arguments["date"])
            for s in draft.steps
            if s.name == "get_flight_status"
        }
        out: list[tuple[str, str]] = []
        for rid in [*draft.read_reservations, *extra]:
            for flight in self.db.reservations[rid].flights:
                key = (flight.flight_number, flight.date)
                if key not in checked and key not in out:
                    out.append(key)
        return out

    # ---------------------------------------------------------------- assembly

    def _assemble(self, draft: _Draft, request: _Request) -> Task:
        name = draft.user.name
        known = [
            f"You are {name.first_name} {name.last_name}.",
            f"Your user id is {draft.user.user_id}.",
        ]
        if draft.known_reservations:
            ids = ", ".join(draft.known_reservations)
            verb = "ids are" if len(draft.known_reservations) > 1 else "id is"
            known.append(f"Your reservation {verb} {ids}.")
        rng, instructions = self._scene(request, draft.instructions, phrasing.CHALLENGES)
        return self._task(
            draft,
            request,
            persona=rng.choice(phrasing.PERSONAS),
            instructions=instructions,
            known=known,
            unknown=" ".join(draft.unknown) or None,
        )

    # ---------------------------------------------------------------- shared pieces

    def _base_draft(self, user: User, reason: str, purpose: str, instructions: list[str]) -> _Draft:
        draft = _Draft(user=user, reason=reason, instructions=instructions, purpose=purpose)
        draft.steps.append(Step("get_user_details", {"user_id": user.user_id}))
        return draft

    def _read_reservation(self, draft: _Draft, reservation: Reservation) -> None:
        draft.steps.append(
            Step("get_reservation_details", {"reservation_id": reservation.reservation_id})
        )
        draft.read_reservations.append(reservation.reservation_id)
        draft.known_reservations.append(reservation.reservation_id)

    def _side_question(self, draft: _Draft, request: _Request) -> None:
        if "multi_intent_interleaving" in request.challenges:
            draft.instructions.append("Also ask which membership level your profile has.")
            draft.communicate.append(
                Answer(value=draft.user.membership, topic="your membership level")
            )

    def _payment(
        self, user: User, amount: int, rng: random.Random, update: bool
    ) -> PaymentMethod | None:
        """A saved method that can pay ``amount`` (certificates only for bookings)."""
        methods = [user.payment_methods[k] for k in sorted(user.payment_methods)]
        fitting = []
        for method in methods:
            if update and not policy.update_payment_allowed(method, max(amount, 0))[0]:
                continue
            if not update and (
                method.source == "certificate" or not policy.payment_covers(method, amount)
            ):
                continue
            fitting.append(method)
        return rng.choice(fitting) if fitting else None

    def _users_with(
        self, request: _Request, fits: Callable[[User, Reservation], bool], count: int
    ) -> Iterator[tuple[User, list[Reservation]]]:
        """Users with at least ``count`` reservations that ``fits`` accepts, seeded order."""
        for user in self._shuffled_users(request):
            chosen = [r for r in self._reservations(user) if fits(user, r)]
            if len(chosen) >= count:
                request.rng.shuffle(chosen)
                yield user, sorted(chosen[:count], key=lambda r: r.reservation_id)


# ==================================================================== family builders


def _upcoming(gen: AirlineGenerator, reservation: Reservation) -> bool:
    """Whether a reservation is still active and none of it has been flown."""
    return reservation.status != "cancelled" and not policy.has_flown(gen.db, reservation)


def _cancel_reason(
    gen: AirlineGenerator, reservation: Reservation, focus: Sequence[str], rng: random.Random
) -> str | None:
    """A reason that makes the cancellation allowed, preferring the focus's rule."""
    reasons = ["change_of_plan", "health", "weather", "other"]
    if policy.airline_cancelled(gen.db, reservation):
        reasons.insert(0, "airline_cancelled")
    allowed = [r for r in reasons if policy.may_cancel(gen.db, reservation, r)[0]]
    if not allowed:
        return None
    if "refund_eligibility" in focus:
        covered = [r for r in allowed if r in policy.INSURED_REASONS]
        if covered:
            return rng.choice(covered)
    return rng.choice(allowed)


def _prefers(focus: Sequence[str], reservation: Reservation, gen: AirlineGenerator) -> bool:
    """Whether the reservation shows the rule the blueprint focuses on (soft preference)."""
    if "time_window_constraint" in focus:
        return policy.booked_recently(reservation)
    if "fare_rule_constraint" in focus:
        return bool(reservation.cabin == "business")
    if "refund_eligibility" in focus:
        return bool(reservation.insurance == "yes")
    if "compensation_eligibility" in focus:
        return policy.airline_cancelled(gen.db, reservation)
    return True


def _pick(
    gen: AirlineGenerator, request: _Request, fits: Callable[[User, Reservation], bool], count: int
) -> tuple[User, list[Reservation]]:
    """The first user (seeded) with ``count`` fitting reservations, focus-matching first.

    The focus is a soft preference: after the first fitting user, at most
    :data:`PREFERENCE_SCAN` more are tried for one whose reservations show the focus.
    """
    preferred = None
    for scanned, (user, chosen) in enumerate(gen._users_with(request, fits, count)):
        if all(_prefers(request.focus, r, gen) for r in chosen):
            return user, chosen
        if preferred is None:
            preferred = (user, chosen)
        if scanned >= PREFERENCE_SCAN:
            break
    if preferred is None:
        raise GeneratorRejection(
            f"no user has {count} reservation(s) fitting {request.family}/{request.outcome}"
        )
    return preferred


def _calculate(draft: _Draft, expression: str, what: str) -> None:
    """The agent's ``calculate`` call for the value the task turns on."""
    draft.steps.append(Step("calculate", {"expression": expression}, info=what))


def _at_most(cost: float, rng: random.Random) -> int:
    """A round dollar budget the cost fits under (for a conditional request)."""
    return int((max(cost, 0) // 50 + 1 + rng.randint(0, 2)) * 50)


def _at_least(amount: float, rng: random.Random) -> int:
    """A round dollar floor the amount reaches (for a conditional request)."""
    floor = int(amount // 50 * 50) - 50 * rng.randint(0, 1)
    return floor if floor >= 1 else max(1, int(amount))


def _terms(amounts: Sequence[float]) -> str:
    return " + ".join(_money(a) for a in amounts)


def _refunds(reservations: Sequence[Reservation]) -> list[float]:
    return [float(p.amount) for r in reservations for p in r.payment_history]


def _cancel_total(chosen: Sequence[Reservation]) -> tuple[str, str, float]:
    """What a cancellation's total is of, its expression and its value.

    The refund when it adds up several payments, else what the tickets cost (fares times
    passengers).
    """
    refunds = _refunds(chosen)
    if len(refunds) >= 2:
        return "how much will be refunded", _terms(refunds), sum(refunds)
    (r,) = chosen
    fares = [float(f.price) for f in r.flights]
    expression = f"({_terms(fares)}) * {len(r.passengers)}"
    return "what the cancelled tickets cost", expression, sum(fares) * len(r.passengers)


def _cancel_fulfill(gen: AirlineGenerator, request: _Request) -> _Draft:
    computation = request.calc

    def fits(user: User, r: Reservation) -> bool:
        if _cancel_reason(gen, r, (), random.Random(0)) is None:
            return False
        # A total needs two amounts to add up: two payments, or fares of a party or trip.
        if computation == "aggregate" and request.writes == 1:
            return len(r.payment_history) >= 2 or len(r.flights) * len(r.passengers) >= 2
        return computation != "conditional" or sum(_refunds([r])) >= 1

    user, chosen = _pick(gen, request, fits, request.writes)
    trips = "; ".join(_trip_text(r) for r in chosen)
    reasons = [_cancel_reason(gen, r, request.focus, request.rng) or "other" for r in chosen]
    refunds = _refunds(chosen)
    ask = f"You want to cancel {trips}."
    extra: list[str] = []
    if computation == "conditional":
        floor = _at_least(sum(refunds), request.rng)
        ask = (
            f"You want to cancel {trips}, but only if at least ${floor} would be refunded in "
            "total; otherwise you keep everything."
        )
    elif computation == "aggregate":
        total_of, expression, total = _cancel_total(chosen)
        extra = [f"You want to know {total_of} in total."]
    draft = gen._base_draft(
        user,
        reason=ask,
        purpose=f"Cancel {len(chosen)} reservation(s) the policy allows cancelling.",
        instructions=[
            f"For {_trip_text(r)} your reason is: {reason.replace('_', ' ')}."
            for r, reason in zip(chosen, reasons, strict=True)
        ]
        + ["You accept that refunds go back to the original payment methods."]
        + extra,
    )
    for r in chosen:
        gen._read_reservation(draft, r)
    if computation == "conditional":
        _calculate(draft, f"{_terms(refunds)} - {floor}", "refund total above the caller's floor")
    elif computation == "aggregate":
        _calculate(draft, expression, total_of)
        draft.communicate.append(money(total, "the total refund"))
    for r, reason in zip(chosen, reasons, strict=True):
        draft.steps.append(_cancel_step(gen, r, reason))
    gen._side_question(draft, request)
    return draft


def _cancel_step(gen: AirlineGenerator, r: Reservation, reason: str) -> Step:
    """The cancellation of ``r`` for ``reason``; the caller states the reason when asked."""
    why = policy.may_cancel(gen.db, r, reason)[1]
    return Step(
        "cancel_reservation",
        {"reservation_id": r.reservation_id},
        info=f"reason: {reason.replace('_', ' ')}. Allowed because {why}.",
        cue=f"The reason is {reason.replace('_', ' ')}.",
    )


def _cancel_refuse(gen: AirlineGenerator, request: _Request) -> _Draft:
    reason = "health" if "refund_eligibility" in request.focus else "change_of_plan"

    def fits(user: User, r: Reservation) -> bool:
        if not _upcoming(gen, r):
            return False
        if "refund_eligibility" in request.focus and r.insurance == "yes":
            return not policy.may_cancel(gen.db, r, "change_of_plan")[0]
        return not policy.may_cancel(gen.db, r, reason)[0]

    user, (reservation,) = _pick(gen, request, fits, 1)
    stated = reason
    if reservation.insurance == "yes" and "refund_eligibility" in request.focus:
        stated = "change_of_plan"
    why = policy.may_cancel(gen.db, reservation, stated)[1]
    draft = gen._base_draft(
        user,
        reason=f"You want to cancel {_trip_text(reservation)} and get a full refund.",
        purpose="Cancellation request the policy forbids; the agent must refuse.",
        instructions=[
            f"Your reason for cancelling is: {stated.replace('_', ' ')} (do not invent another).",
            "If the agent says it cannot be cancelled, do not accept any other change.",
        ],
    )
    gen._read_reservation(draft, reservation)
    draft.note = f"reservation {reservation.reservation_id} cannot be cancelled: {why}"
    draft.refused.append(Step("cancel_reservation", {"reservation_id": reservation.reservation_id}))
    draft.nl_assertions.append(
        f"Agent does not cancel reservation {reservation.reservation_id} because {why}."
    )
    gen._side_question(draft, request)
    return draft


_Plan = TypeVar("_Plan")


def _pick_paying(
    gen: AirlineGenerator,
    request: _Request,
    fits: Callable[[User, Reservation], bool],
    plan: Callable[[User, Reservation], _Plan | None],
    charge: Callable[[list[tuple[Reservation, _Plan]]], int],
    accept: Callable[[list[tuple[Reservation, _Plan]]], bool] = lambda ready: True,
) -> tuple[User, list[tuple[Reservation, _Plan]], PaymentMethod] | None:
    """The first user (seeded) whose fitting reservations all have a plan and a card to pay.

    Returns:
        The user, each chosen reservation with its plan, and the payment method; None if no
        user qualifies.
    """
    for user, chosen in gen._users_with(request, fits, request.writes):
        plans = [plan(user, r) for r in chosen]
        ready = [(r, p) for r, p in zip(chosen, plans, strict=True) if p is not None]
        if len(ready) < len(chosen) or not accept(ready):
            continue
        method = gen._payment(user, charge(ready), request.rng, update=True)
        if method is not None:
            return user, ready, method
    return None


def _baggage_fulfill(gen: AirlineGenerator, request: _Request) -> _Draft:
    computation = request.calc

    def fits(user: User, r: Reservation) -> bool:
        return _upcoming(gen, r) and policy.baggage_consistent(r, user.membership)

    def plan(user: User, r: Reservation) -> tuple[int, int, int, int]:
        added = request.rng.randint(1, 3)
        total = r.total_baggages + added
        nonfree = policy.nonfree_bags(total, user.membership, r.cabin, len(r.passengers))
        return added, total, nonfree, policy.BAG_FEE * max(0, nonfree - r.nonfree_baggages)

    picked = _pick_paying(
        gen,
        request,
        fits,
        plan,
        charge=lambda ready: sum(p[3] for _, p in ready),
        # A fee to add up (or to check against a budget) needs some paid bag.
        accept=lambda ready: computation is None or any(p[3] for _, p in ready),
    )
    if picked is None:
        raise GeneratorRejection(
            f"no user has {request.writes} reservation(s) open for added bags with a card to pay"
        )
    user, ready, method = picked
    fees = sum(p[3] for _, p in ready)
    fee_terms = " + ".join(
        f"{policy.BAG_FEE} * {(fee // policy.BAG_FEE)}" for _, (*_, fee) in ready if fee
    )
    ask = (
        "You want to add checked bags to "
        + "; ".join(f"{_trip_text(r)} ({p[0]} more)" for r, p in ready)
        + "."
    )
    if computation == "conditional":
        budget = _at_most(fees, request.rng)
        ask = ask[:-1] + f", but only if the bag fees come to at most ${budget} in total."
    draft = gen._base_draft(
        user,
        reason=ask,
        purpose=f"Add checked bags to {len(ready)} reservation(s) within policy.",
        instructions=[
            f"If there is a fee, pay with {_method_text(user, method)}.",
            "You do not need any other change.",
        ],
    )
    for r, _ in ready:
        gen._read_reservation(draft, r)
    if computation == "conditional":
        _calculate(draft, f"{budget} - ({fee_terms})", "bag fees under the caller's budget")
    elif computation == "aggregate":
        _calculate(draft, fee_terms, "total bag fee")
        draft.communicate.append(money(fees, "the total bag fee"))
    for r, (added, total, nonfree, fee) in ready:
        draft.steps.append(
            Step(
                "update_reservation_baggages",
                {
                    "reservation_id": r.reservation_id,
                    "total_baggages": total,
                    "nonfree_baggages": nonfree,
                    "payment_id": method.id,
                },
                info=f"{phrasing.count(added, 'bag', 'bags')} added; {nonfree} of {total} "
                f"beyond the free allowance; fee ${fee}.",
            )
        )
        if fee:
            draft.communicate.append(money(fee, f"the bag fee for reservation {r.reservation_id}"))
    gen._side_question(draft, request)
    return draft


def _baggage_refuse(gen: AirlineGenerator, request: _Request) -> _Draft:
    insurance = "refund_eligibility" in request.focus or request.rng.random() < 0.4

    def fits(user: User, r: Reservation) -> bool:
        if not _upcoming(gen, r):
            return False
        return bool(r.insurance == "no" if insurance else r.total_baggages >= 1)

    user, (reservation,) = _pick(gen, request, fits, 1)
    # Insurance has no write tool to refuse (it is bought with a booking only).
    refused: list[Step] = []
    if insurance:
        ask = f"You want to add travel insurance to {_trip_text(reservation)}."
        why = policy.may_add_insurance(reservation)[1]
        what = "add insurance to"
    else:
        new_total = reservation.total_baggages - 1
        ask = (
            f"You want to remove one checked bag from {_trip_text(reservation)} "
            f"(going from {reservation.total_baggages} to {new_total}) and get the fee back."
        )
        why = policy.may_change_bags(reservation, new_total)[1]
        what = "change the bags of"
        arguments = {"reservation_id": reservation.reservation_id, "total_baggages": new_total}
        refused.append(Step("update_reservation_baggages", arguments))
    draft = gen._base_draft(
        user,
        reason=ask,
        purpose="Baggage or insurance change the policy forbids; the agent must refuse.",
        instructions=["If the agent says it is not possible, accept it; you want nothing else."],
    )
    gen._read_reservation(draft, reservation)
    draft.note = why
    draft.refused += refused
    draft.nl_assertions.append(
        f"Agent does not {what} reservation {reservation.reservation_id} because {why}."
    )
    gen._side_question(draft, request)
    return draft


def _cabin_plan(gen: AirlineGenerator, r: Reservation, cabin: CabinClass) -> tuple[int, str] | None:
    """Price difference of moving ``r`` to ``cabin`` and its expression (None if no seats)."""
    if cabin == r.cabin or not policy.may_change_cabin(gen.db, r)[0]:
        return None
    passengers = len(r.passengers)
    new: list[int] = []
    for flight in r.flights:
        day = gen.db.flights[flight.flight_number].dates[flight.date]
        # may_change_cabin found every flight of ``r`` still for sale.
        if (
            not isinstance(day, FlightDateStatusAvailable)
            or day.available_seats[cabin] < passengers
        ):
            return None
        new.append(int(day.prices[cabin]))
    old = [f.price for f in r.flights]
    expression = f"({_terms(new)} - ({_terms(old)})) * {passengers}"
    return int((sum(new) - sum(old)) * passengers), expression


def _date_change(
    gen: AirlineGenerator, r: Reservation, options_wanted: str | None = None
) -> tuple[list[dict[str, str]], int, str, str] | None:
    """A same-route move of a one-way direct reservation to another day (earliest flight).

    Args:
        gen: The Generator (for the database).
        r: The reservation to move.
        options_wanted: ``"one"`` for a day with a single direct flight (nothing to choose),
            ``"many"`` for a day with several (the earliest is chosen), None for either.

    Returns:
        New flights, price difference, new date and the difference's expression; None if no
        day fits.
    """
    if r.flight_type != "one_way" or len(r.flights) != 1:
        return None
    if not policy.may_change_flights(gen.db, r)[0] or not policy.all_bookable(gen.db, r):
        return None
    old = r.flights[0]
    passengers = len(r.passengers)
    day = int(old.date[-2:])
    for shift in (1, 2, -1, 3, -2):
        date = f"2024-05-{day + shift:02d}"
        if not BOOKABLE_FROM <= date <= "2024-05-30":
            continue
        options = _direct(gen, r.origin, r.destination, date, r.cabin, passengers)
        listed = _listed(gen, r.origin, r.destination, date)
        if not options or (options_wanted == "one" and listed != 1):
            continue
        if options_wanted == "many" and listed < 2:
            continue
        departure, number, price = min(options)
        if sum(1 for o in options if o[0] == departure) > 1:
            continue
        return (
            [{"flight_number": number, "date": date}],
            int((price - old.price) * passengers),
            date,
            f"({price} - {_money(old.price)}) * {passengers}",
        )
    return None


def _listed(gen: AirlineGenerator, origin: str, destination: str, date: str) -> int:
    """How many flights ``search_direct_flight`` lists (it ignores cabins and seats)."""
    return sum(
        1
        for flight in gen.db.flights.values()
        if flight.origin == origin
        and flight.destination == destination
        and date in flight.dates
        and flight.dates[date].status == "available"
    )


def _direct(
    gen: AirlineGenerator,
    origin: str,
    destination: str,
    date: str,
    cabin: CabinClass,
    seats: int,
) -> list[tuple[str, str, int]]:
    """Bookable direct flights as (departure, number, price in ``cabin``)."""
    out = []
    for number in sorted(gen.db.flights):
        flight = gen.db.flights[number]
        if flight.origin != origin or flight.destination != destination:
            continue
        day = flight.dates.get(date)
        if day is None or day.status != "available" or day.available_seats[cabin] < seats:
            continue
        out.append((flight.scheduled_departure_time_est, number, int(day.prices[cabin])))
    return out


_ChangePlan = tuple[str, list[dict[str, str]], int, str, str]
"""A change of a reservation: new cabin, new flights, price difference, what it does in
words, and the difference's expression."""


def _change_plan(
    gen: AirlineGenerator, request: _Request, r: Reservation, prefer_dates: bool
) -> _ChangePlan | None:
    """A move of ``r`` to another day (preferred, or needed for a choice) or a cabin change."""
    if prefer_dates or request.choice == "many":
        move = _date_change(gen, r, request.choice)
        if move is not None:
            what = f"move it to the earliest direct flight on {move[2]}"
            return (r.cabin, move[0], move[1], what, move[3])
    order = list(CABINS)
    request.rng.shuffle(order)
    for cabin in order:
        cabin_plan = _cabin_plan(gen, r, cabin)
        if cabin_plan is not None:
            flights = [{"flight_number": f.flight_number, "date": f.date} for f in r.flights]
            what = f"change the cabin to {cabin.replace('_', ' ')}"
            return (cabin, flights, cabin_plan[0], what, cabin_plan[1])
    return None


def _moves(r: Reservation, plan: _ChangePlan) -> bool:
    """Whether ``plan`` moves ``r`` to other flights (a search lists them)."""
    return plan[1][0]["date"] != r.flights[0].date


def _change_fulfill(gen: AirlineGenerator, request: _Request) -> _Draft:
    computation = request.calc
    prefer_dates = "search_compare_then_book" in request.patterns or request.rng.random() < 0.5

    def plan_for(user: User, r: Reservation) -> _ChangePlan | None:
        return _change_plan(gen, request, r, prefer_dates)

    def fits(user: User, r: Reservation) -> bool:
        return policy.may_change_cabin(gen.db, r)[0]

    def accept(ready: list[tuple[Reservation, _ChangePlan]]) -> bool:
        # An optimisation needs one move to pick among several flights; the rest may differ.
        moved = any(p[1][0]["date"] != r.flights[0].date for r, p in ready)
        return request.choice != "many" or moved

    picked = _pick_paying(
        gen,
        request,
        fits,
        plan_for,
        charge=lambda ready: sum(max(p[2], 0) for _, p in ready),
        accept=accept,
    )
    if picked is None:
        raise GeneratorRejection(
            f"no user has {request.writes} reservation(s) whose flights or cabin can be changed"
        )
    user, ready, method = picked
    total = sum(p[2] for _, p in ready)
    difference = " + ".join(p[4] for _, p in ready)
    ask = "You want to " + "; and ".join(f"{p[3]} for {_trip_text(r)}" for r, p in ready) + "."
    if computation == "conditional":
        budget = _at_most(total, request.rng)
        ask = ask[:-1] + f", but only if the price difference is at most ${budget} in total."
    draft = gen._base_draft(
        user,
        reason=ask,
        purpose=f"Change {len(ready)} reservation(s) as the policy allows.",
        instructions=[
            f"Use {_method_text(user, method)} for any charge or refund.",
            "Keep everything else (passengers, bags) unchanged.",
        ],
    )
    for r, _ in ready:
        gen._read_reservation(draft, r)
    searches = [
        Step(
            "search_direct_flight",
            {"origin": r.origin, "destination": r.destination, "date": flights[0]["date"]},
        )
        for r, (_, flights, *_) in ready
        if flights[0]["date"] != r.flights[0].date
    ]
    if computation == "conditional":
        draft.steps += searches
        _calculate(draft, f"{budget} - ({difference})", "price difference under the budget")
    elif computation == "aggregate":
        draft.steps += searches
        _calculate(draft, difference, "total price difference")
    else:
        searches.reverse()
    for r, (cabin, flights, diff, what, _) in ready:
        if flights[0]["date"] != r.flights[0].date and computation not in (
            "aggregate",
            "conditional",
        ):
            draft.steps.append(searches.pop())
        draft.steps.append(
            Step(
                "update_reservation_flights",
                {
                    "reservation_id": r.reservation_id,
                    "cabin": cabin,
                    "flights": flights,
                    "payment_id": method.id,
                },
                info=f"{what}; price difference ${diff}.",
            )
        )
        if diff:
            what_diff = "fare difference you pay" if diff > 0 else "fare difference refunded"
            draft.communicate.append(
                money(diff, f"the {what_diff} for reservation {r.reservation_id}")
            )
    gen._side_question(draft, request)
    return draft


def _change_refuse(gen: AirlineGenerator, request: _Request) -> _Draft:
    flown_variant = "time_window_constraint" in request.focus or request.rng.random() < 0.4

    def fits(user: User, r: Reservation) -> bool:
        if r.status == "cancelled":
            return False
        if flown_variant:
            return policy.has_flown(gen.db, r)
        return r.cabin == "basic_economy" and not policy.has_flown(gen.db, r)

    user, (reservation,) = _pick(gen, request, fits, 1)
    change: dict[str, Any] = {"reservation_id": reservation.reservation_id}
    if flown_variant:
        target = "business" if reservation.cabin != "business" else "economy"
        ask = f"You want to upgrade {_trip_text(reservation)} to {target}."
        why = policy.may_change_cabin(gen.db, reservation)[1]
        change["cabin"] = target
    else:
        later = reservation.flights[0].date
        ask = f"You want to move {_trip_text(reservation)} to a flight one day later than {later}."
        why = policy.may_change_flights(gen.db, reservation)[1]
    draft = gen._base_draft(
        user,
        reason=ask,
        purpose="Flight or cabin change the policy forbids; the agent must refuse.",
        instructions=[
            "If the agent says it cannot be changed, accept it and ask for nothing else."
        ],
    )
    gen._read_reservation(draft, reservation)
    draft.note = why
    draft.refused.append(Step("update_reservation_flights", change))
    draft.nl_assertions.append(
        f"Agent does not modify reservation {reservation.reservation_id} because {why}."
    )
    gen._side_question(draft, request)
    return draft


def _compensation_fulfill(gen: AirlineGenerator, request: _Request) -> _Draft:
    def fits(user: User, r: Reservation) -> bool:
        return policy.airline_cancelled(gen.db, r) and policy.compensation(gen.db, user, r)[0] > 0

    user, chosen = _pick(gen, request, fits, request.writes)
    draft = gen._base_draft(
        user,
        reason="The airline cancelled a flight of "
        + "; and of ".join(_trip_text(r) for r in chosen)
        + ", and you want compensation.",
        purpose=f"Compensate {len(chosen)} airline-cancelled reservation(s) with certificates.",
        instructions=[
            "You want compensation for each affected reservation; a travel certificate is fine.",
            "You do not want to cancel or change anything.",
        ],
    )
    for r in chosen:
        gen._read_reservation(draft, r)
        for flight in r.flights:
            if policy.segment_status(gen.db, flight.flight_number, flight.date) == "cancelled":
                draft.steps.append(
                    Step(
                        "get_flight_status",
                        {"flight_number": flight.flight_number, "date": flight.date},
                    )
                )
                break
    amounts = [policy.compensation(gen.db, user, r)[0] for r in chosen]
    if request.calc == "aggregate":
        _calculate(
            draft,
            " + ".join(
                f"{policy.CANCELLED_FLIGHT_COMPENSATION} * {len(r.passengers)}" for r in chosen
            ),
            "compensation: a certificate per passenger of each reservation",
        )
        draft.communicate.append(money(sum(amounts), "the total compensation"))
    for r in chosen:
        amount, why = policy.compensation(gen.db, user, r)
        draft.steps.append(
            Step(
                "send_certificate",
                {"user_id": user.user_id, "amount": amount},
                info=f"for reservation {r.reservation_id}: {why}.",
            )
        )
        draft.communicate.append(
            money(amount, f"the certificate for reservation {r.reservation_id}")
        )
    gen._side_question(draft, request)
    return draft


def _compensation_refuse(gen: AirlineGenerator, request: _Request) -> _Draft:
    def fits(user: User, r: Reservation) -> bool:
        return policy.airline_cancelled(gen.db, r) and policy.compensation(gen.db, user, r)[0] == 0

    user, (reservation,) = _pick(gen, request, fits, 1)
    why = policy.compensation(gen.db, user, reservation)[1]
    draft = gen._base_draft(
        user,
        reason=(
            f"The airline cancelled a flight of {_trip_text(reservation)}; you want compensation."
        ),
        purpose="Compensation request from an ineligible user; the agent must refuse.",
        instructions=["You do not want to cancel or change anything; you only want compensation."],
    )
    gen._read_reservation(draft, reservation)
    draft.note = f"no compensation is possible: {why}"
    draft.refused.append(Step("send_certificate", {"user_id": user.user_id}))
    draft.nl_assertions.append(f"Agent does not offer any compensation because {why}.")
    gen._side_question(draft, request)
    return draft


#: Days a new trip may leave on (flights still for sale).
_TRAVEL_DATES = tuple(f"2024-05-{d}" for d in range(16, 31))
#: Kinds of new trip a booking may be, seeded (a one-way direct flight twice as often); the
#: values of ``trip_shape``.
_TRIPS = ("one_way", "one_way", "round_trip", "connection")
#: The saved method a ``payment_split`` value tops up with a credit card (None: one method).
_SPLIT_SOURCES = {
    "single_method": None,
    "gift_card_and_card": "gift_card",
    "certificate_and_card": "certificate",
}


@dataclass
class _Wallet:
    """What a caller's saved payment methods still hold while a task books several trips."""

    user: User
    balances: dict[str, float]
    certificate_used: bool = False

    @classmethod
    def of(cls, user: User) -> _Wallet:
        """The caller's saved methods as the database holds them."""
        return cls(
            user, {k: float(getattr(m, "amount", 0.0)) for k, m in user.payment_methods.items()}
        )

    def source(self, key: str) -> str:
        """The kind of the saved method ``key`` (credit_card, gift_card, certificate)."""
        return str(self.user.payment_methods[key].source)

    def spend(self, payments: list[dict[str, Any]]) -> None:
        """Take ``payments`` off the balances (a certificate is used up whole)."""
        for payment in payments:
            key = payment["payment_id"]
            self.balances[key] = self.balances.get(key, 0.0) - payment["amount"]
            if self.source(key) == "certificate":
                self.certificate_used = True


@dataclass
class _Booking:
    """A new reservation a task books: its arguments, its price and how the caller asks."""

    args: dict[str, Any]
    total: int
    #: The total's expression: fares times passengers, insurance, paid bags.
    cost: str
    #: The searches that list its flights, in order.
    searches: list[Step]
    #: What the caller asks for, in the scenario's words.
    line: str
    #: What the price answers ("the price of the round trip from JFK to ORD").
    topic: str


def _leg(
    gen: AirlineGenerator,
    request: _Request,
    route: tuple[str, str],
    date: str,
    cabin: CabinClass,
    seats: int,
    used: set[tuple[str, str]],
) -> tuple[str, int, int] | None:
    """The direct flight a booking takes on one leg: (number, price, flights listed).

    The cheapest one with seats, if it is the only cheapest, and if what the search lists
    fits the requested choice ("one": a single flight; None, "many": any); None otherwise.
    """
    origin, destination = route
    options = [
        o for o in _direct(gen, origin, destination, date, cabin, seats) if (o[1], date) not in used
    ]
    listed = _listed(gen, origin, destination, date)
    if not options or (request.choice == "one" and listed != 1):
        return None
    cheapest = min(o[2] for o in options)
    if sum(1 for o in options if o[2] == cheapest) > 1:
        return None
    number = next(o[1] for o in options if o[2] == cheapest)
    return number, cheapest, listed


def _onestop(
    gen: AirlineGenerator, origin: str, destination: str, date: str
) -> list[tuple[tuple[str, str], tuple[str, str]]]:
    """The pairs ``search_onestop_flight`` lists, as ((number, date), (number, date)).

    As τ²-bench pairs them: a flight for sale from ``origin`` on ``date``, then one for sale
    from its destination to ``destination`` leaving after it lands (the next day if it lands
    after midnight).
    """
    pairs = []
    for outbound in gen._departing.get(origin, ()):
        day = outbound.dates.get(date)
        if day is None or day.status != "available":
            continue
        landing = outbound.scheduled_arrival_time_est
        date2 = f"2024-05-{int(date[-2:]) + 1}" if "+1" in landing else date
        for second in gen._departing.get(outbound.destination, ()):
            later = second.dates.get(date2)
            if (
                second.destination == destination
                and later is not None
                and later.status == "available"
                and second.scheduled_departure_time_est >= landing
            ):
                pairs.append(((outbound.flight_number, date), (second.flight_number, date2)))
    return pairs


def _connection(
    gen: AirlineGenerator,
    request: _Request,
    route: tuple[str, str],
    date: str,
    cabin: CabinClass,
    seats: int,
    used: set[tuple[str, str]],
) -> tuple[list[tuple[str, str]], list[int], int] | None:
    """The one-stop connection a booking takes: its legs, their prices, the pairs listed.

    The cheapest pair with seats on both legs, if it is the only cheapest; for choice "one"
    the search must list that one pair alone. None where nothing fits.
    """
    pairs = _onestop(gen, *route, date)
    if not pairs or (request.choice == "one" and len(pairs) != 1):
        return None
    priced: list[tuple[int, list[tuple[str, str]], list[int]]] = []
    for pair in pairs:
        prices = []
        for number, day in pair:
            status = gen.db.flights[number].dates[day]
            if (
                not isinstance(status, FlightDateStatusAvailable)
                or status.available_seats[cabin] < seats
                or (number, day) in used
            ):
                break
            prices.append(int(status.prices[cabin]))
        else:
            priced.append((sum(prices), list(pair), prices))
    if not priced:
        return None
    cheapest = min(p[0] for p in priced)
    if sum(1 for p in priced if p[0] == cheapest) > 1:
        return None
    _, legs, fares = next(p for p in priced if p[0] == cheapest)
    return legs, fares, len(pairs)


def _payments(
    gen: AirlineGenerator, request: _Request, wallet: _Wallet, total: int
) -> tuple[list[dict[str, Any]], str] | None:
    """How a booking of ``total`` is paid, and the caller's words for it; None if it cannot be.

    One method (a card, or a gift card or certificate that covers it), or a gift card or
    certificate for all it holds and a credit card for the rest: the policy allows one
    certificate, one credit card and three gift cards per reservation. A split is never
    offered where a proposal challenge must vary the one method a booking charges. A requested
    ``payment_split`` is the only way offered.
    """
    rng, user = request.rng, wallet.user
    methods = sorted(user.payment_methods)
    single = [
        k
        for k in methods
        if wallet.source(k) == "credit_card"
        or (wallet.source(k) == "gift_card" and wallet.balances[k] >= total)
        or (
            wallet.source(k) == "certificate"
            and not wallet.certificate_used
            and wallet.balances[k] >= total
            and "payment_or_credit_constraint" in request.focus
        )
    ]
    splits = []
    if not set(PROPOSAL_CHALLENGES) & set(request.challenges):
        cards = [k for k in methods if wallet.source(k) == "credit_card"]
        partial = [
            k
            for k in methods
            if wallet.source(k) in ("gift_card", "certificate")
            and 0 < wallet.balances[k] < total
            and float(wallet.balances[k]).is_integer()
            and not (wallet.source(k) == "certificate" and wallet.certificate_used)
        ]
        splits = [(p, c) for p in partial for c in cards]
    if request.pay is not None:
        source = _SPLIT_SOURCES.get(request.pay)
        splits = [(p, c) for p, c in splits if wallet.source(p) == source]
        single = single if source is None else []
    if splits and (not single or rng.random() < 0.5):
        part, card = rng.choice(splits)
        held = int(wallet.balances[part])
        payments = [
            {"payment_id": part, "amount": held},
            {"payment_id": card, "amount": total - held},
        ]
        words = (
            f"Pay with {_method_text(user, user.payment_methods[part])} for all it holds "
            f"(${held}) and with {_method_text(user, user.payment_methods[card])} for the rest."
        )
    elif single:
        payer = rng.choice(single)
        payments = [{"payment_id": payer, "amount": total}]
        words = f"Pay with {_method_text(user, user.payment_methods[payer])}."
    else:
        return None
    wallet.spend(payments)
    return payments, words


def _plan_booking(
    gen: AirlineGenerator,
    request: _Request,
    wallet: _Wallet,
    used: set[tuple[str, str]],
) -> _Booking | None:
    """A new trip the caller can book and pay for: one-way, round trip or with one stop.

    Seeded: the kind of trip, route, date, cabin, party, bags, insurance and payment; a trip
    whose searches do not fit the requested choice, or that no saved method can pay, is
    drawn again (twelve tries).
    """
    rng, user = request.rng, wallet.user
    routes = gen._routes
    kinds = [k for k in _TRIPS if not (k == "connection" and request.choice == "many")]
    if request.trip is not None:
        kinds = [k for k in kinds if k == request.trip]
    for _try in range(12):
        kind = rng.choice(kinds)
        origin, destination = rng.choice(routes)
        if kind == "connection":
            destination = rng.choice(sorted({d for _, d in routes} - {origin, destination}))
        date = rng.choice(_TRAVEL_DATES)
        cabin = rng.choice(CABINS)
        others = list(user.saved_passengers)
        rng.shuffle(others)
        people = [user.name.model_dump() | {"dob": user.dob}] + [
            p.model_dump() for p in others[: rng.randint(0, min(2, len(others)))]
        ]
        legs: list[tuple[str, str]] = []
        prices: list[int] = []
        listed: list[int] = []
        searches = []
        if kind == "connection":
            found = _connection(gen, request, (origin, destination), date, cabin, len(people), used)
            if found is None:
                continue
            legs, prices = found[0], found[1]
            listed = [found[2]]
            searches = [
                Step(
                    "search_onestop_flight",
                    {"origin": origin, "destination": destination, "date": date},
                )
            ]
        else:
            days = [(origin, destination, date)]
            if kind == "round_trip":
                back = int(date[-2:]) + rng.randint(2, 6)
                if back > 30:
                    continue
                days.append((destination, origin, f"2024-05-{back}"))
            for leg_from, leg_to, day in days:
                found_leg = _leg(gen, request, (leg_from, leg_to), day, cabin, len(people), used)
                if found_leg is None:
                    break
                legs.append((found_leg[0], day))
                prices.append(found_leg[1])
                listed.append(found_leg[2])
                searches.append(
                    Step(
                        "search_direct_flight",
                        {"origin": leg_from, "destination": leg_to, "date": day},
                    )
                )
            if len(legs) < len(days) or (request.choice == "many" and max(listed) < 2):
                continue
        insurance = rng.random() < 0.5
        bags = rng.randint(0, 2) * len(people)
        nonfree = policy.nonfree_bags(bags, user.membership, cabin, len(people))
        total = policy.booking_price(prices, len(people), insurance, nonfree)
        paid = _payments(gen, request, wallet, total)
        if paid is None:
            continue
        payments, pay_words = paid
        used.update(legs)
        fares = " + ".join(str(p) for p in prices)
        fare = f"({fares}) * {len(people)}" if len(prices) > 1 else f"{fares} * {len(people)}"
        extras = (f" + {policy.INSURANCE_FEE} * {len(people)}" if insurance else "") + (
            f" + {policy.BAG_FEE} * {nonfree}" if nonfree else ""
        )
        names = ", ".join(f"{p['first_name']} {p['last_name']} ({p['dob']})" for p in people)
        cabin_words = cabin.replace("_", " ")
        if kind == "connection":
            which = "the cheapest connection" if listed[0] > 1 else "the only connection"
            trip = f"a one-way {cabin_words} trip from {origin} to {destination} on {date} "
            line = f"Book {trip}with one stop: {which}."
            topic = f"the price of the one-stop trip from {origin} to {destination}"
        elif kind == "round_trip":
            which = "the cheapest direct flight" if max(listed) > 1 else "the direct flight"
            line = (
                f"Book a round trip in {cabin_words} from {origin} to {destination}, leaving on "
                f"{date} and returning on {legs[1][1]}: {which} each way."
            )
            topic = f"the price of the round trip from {origin} to {destination}"
        else:
            which = "the cheapest direct flight" if listed[0] > 1 else "the direct flight"
            line = (
                f"Book a one-way {cabin_words} trip from {origin} to {destination} on {date}: "
                f"{which}."
            )
            topic = f"the price of the booking on flight {legs[0][0]}"
        line += (
            f" Passengers: {names}. "
            f"{phrasing.count(bags, 'checked bag', 'checked bags')} in total. "
            f"Travel insurance: {'yes' if insurance else 'no'}. {pay_words}"
        )
        args = {
            "user_id": user.user_id,
            "origin": origin,
            "destination": destination,
            "flight_type": "round_trip" if kind == "round_trip" else "one_way",
            "cabin": cabin,
            "flights": [{"flight_number": n, "date": d} for n, d in legs],
            "passengers": people,
            "payment_methods": payments,
            "total_baggages": bags,
            "nonfree_baggages": nonfree,
            "insurance": "yes" if insurance else "no",
        }
        return _Booking(args, total, fare + extras, searches, line, topic)
    return None


def _book_steps(
    draft: _Draft, bookings: Sequence[_Booking], calc: str | None, budget: int = 0
) -> None:
    """The searches, the calculation (if any) and the booking of each of ``bookings``.

    With a calculation every price is known before anything is booked: all searches first.
    """
    costs = " + ".join(b.cost for b in bookings)
    if calc in ("aggregate", "conditional"):
        draft.steps += [s for b in bookings for s in b.searches]
        if calc == "conditional":
            _calculate(draft, f"{budget} - ({costs})", "total price under the budget")
        else:
            _calculate(draft, costs, "total price of the bookings")
            draft.communicate.append(
                money(sum(b.total for b in bookings), "the total price of the bookings")
            )
    for booking in bookings:
        if calc not in ("aggregate", "conditional"):
            draft.steps += booking.searches
        numbers = " and ".join(f["flight_number"] for f in booking.args["flights"])
        draft.steps.append(
            Step(
                "book_reservation",
                booking.args,
                info=f"flights {numbers}; total ${booking.total}.",
            )
        )
        draft.communicate.append(money(booking.total, booking.topic))


def _booking_fulfill(gen: AirlineGenerator, request: _Request) -> _Draft:
    computation = request.calc
    for user in gen._shuffled_users(request):
        if not user.payment_methods:
            continue
        wallet = _Wallet.of(user)
        used: set[tuple[str, str]] = set()
        bookings: list[_Booking] = []
        for _ in range(request.writes):
            made = _plan_booking(gen, request, wallet, used)
            if made is None:
                break
            bookings.append(made)
        if len(bookings) < request.writes:
            continue
        lines = [b.line for b in bookings]
        grand = sum(b.total for b in bookings)
        if len(bookings) > 1:
            ask = f"You want to book {len(bookings)} new trips."
        elif bookings[0].args["flight_type"] == "round_trip":
            ask = "You want to book a new round trip."
        else:
            ask = "You want to book a new one-way trip."
        budget = 0
        if computation == "conditional":
            budget = _at_most(grand, request.rng)
            ask = ask[:-1] + f", but only if they cost at most ${budget} in total."
        elif computation == "aggregate":
            lines.append("You want to know what everything costs in total.")
        draft = gen._base_draft(
            user,
            reason=ask,
            purpose=f"Book {len(bookings)} reservation(s) after searching flights.",
            instructions=lines,
        )
        _book_steps(draft, bookings, computation, budget)
        gen._side_question(draft, request)
        return draft
    asked = "".join(
        f", {name}={value}"
        for name, value in (("trip_shape", request.trip), ("payment_split", request.pay))
        if value is not None
    )
    raise GeneratorRejection(f"no user can pay for {request.writes} booking(s){asked}")


def _booking_refuse(gen: AirlineGenerator, request: _Request) -> _Draft:
    rng = request.rng
    certificates = "payment_or_credit_constraint" in request.focus
    for user in gen._shuffled_users(request):
        certs = [
            k
            for k in sorted(user.payment_methods)
            if user.payment_methods[k].source == "certificate"
        ]
        if certificates and len(certs) < 2:
            continue
        origin, destination = rng.choice(
            sorted({(f.origin, f.destination) for f in gen.db.flights.values()})
        )
        date = f"2024-05-{rng.randint(16, 30)}"
        if certificates:
            ask = (
                f"You want to book a one-way economy trip from {origin} to {destination} on {date} "
                f"and pay with two of your travel certificates: "
                f"{_method_text(user, user.payment_methods[certs[0]])} and "
                f"{_method_text(user, user.payment_methods[certs[1]])}."
            )
            ok, why = policy.payment_mix_allowed(["certificate", "certificate"])
            rule = "use two travel certificates"
            asked: dict[str, Any] = {
                "payment_methods": [{"payment_id": k} for k in certs[:2]],
            }
        else:
            party = policy.MAX_PASSENGERS + rng.randint(1, 2)
            ask = (
                f"You want one reservation for {party} passengers on a one-way economy trip from "
                f"{origin} to {destination} on {date}."
            )
            ok, why = policy.passengers_allowed(party)
            rule = f"book {party} passengers in one reservation"
            asked = {}
        assert not ok
        draft = gen._base_draft(
            user,
            reason=ask,
            purpose="Booking request that breaks a booking rule; the agent must refuse.",
            instructions=[
                "You insist on exactly this; if it is not possible, you do not want any booking."
            ],
        )
        draft.note = why
        trip = {"origin": origin, "destination": destination, "flight_type": "one_way"}
        booking = {"user_id": user.user_id, **trip, "cabin": "economy", **asked}
        draft.refused.append(Step("book_reservation", booking))
        draft.nl_assertions.append(f"Agent does not {rule} because {why}.")
        gen._side_question(draft, request)
        return draft
    raise GeneratorRejection("no user has two travel certificates to combine")


def _loyalty_fulfill(gen: AirlineGenerator, request: _Request) -> _Draft:
    # A party's allowance is a product worth a calculation; a lone traveller's is not.
    party = (1, policy.MAX_PASSENGERS)
    if request.computation == "none":
        party = (1, 1)
    elif request.calc == "aggregate":
        party = (2, policy.MAX_PASSENGERS)

    def fits(user: User, r: Reservation) -> bool:
        return _upcoming(gen, r) and party[0] <= len(r.passengers) <= party[1]

    user, (reservation,) = _pick(gen, request, fits, 1)
    allowance = policy.free_bags(user.membership, reservation.cabin, len(reservation.passengers))
    draft = gen._base_draft(
        user,
        reason=(
            f"You want to know your membership level and how many free checked bags "
            f"{_trip_text(reservation)} includes."
        ),
        purpose="Membership and baggage-allowance inquiry (read only).",
        instructions=["You only want the information; do not ask for any change."],
    )
    gen._read_reservation(draft, reservation)
    if request.calc == "aggregate":
        per = policy.free_bags_per_passenger(user.membership, reservation.cabin)
        _calculate(draft, f"{per} * {len(reservation.passengers)}", "free bags of the party")
    draft.communicate += [
        Answer(value=user.membership, topic="your membership level"),
        Answer(
            value=f"{allowance} free checked bag",
            topic="your free checked bag allowance",
            phrase=f"{allowance} free checked bag{'s' if allowance != 1 else ''}",
        ),
    ]
    draft.note = (
        f"your membership is {user.membership}, so {_trip_text(reservation)} includes "
        f"{phrasing.count(allowance, 'free checked bag', 'free checked bags')} in total"
    )
    return draft


def _loyalty_refuse(gen: AirlineGenerator, request: _Request) -> _Draft:
    for user in gen._shuffled_users(request):
        if user.membership == "gold":
            continue
        wanted = "gold"
        draft = gen._base_draft(
            user,
            reason=f"You want your membership upgraded from {user.membership} to {wanted}.",
            purpose="Membership change the agent cannot make; the agent must refuse.",
            instructions=["If the agent cannot do it, accept and end the call."],
        )
        why = "membership levels cannot be changed by the agent"
        draft.note = why
        draft.nl_assertions.append(f"Agent does not change the membership because {why}.")
        return draft
    raise GeneratorRejection("no non-gold user to ask for an upgrade")


# ==================================================================== mixed shapes


def _swaps(user: User, r: Reservation) -> list[dict[str, str]]:
    """Travellers the caller may put on ``r`` in place of a passenger: not on it already."""
    on = {(p.first_name, p.last_name) for p in r.passengers}
    people = [user.name.model_dump() | {"dob": user.dob}]
    people += [p.model_dump() for p in user.saved_passengers]
    out: list[dict[str, str]] = []
    for person in people:
        key = (person["first_name"], person["last_name"])
        if key not in on and key not in {(p["first_name"], p["last_name"]) for p in out}:
            out.append(person)
    return out


def _modify(
    gen: AirlineGenerator, request: _Request, *, change: bool, swap: bool, bags: bool
) -> _Draft:
    """Changes to one reservation: its flights or cabin, a passenger, more bags (in that order).

    One saved card or gift card pays for the fare difference and the bag fee alike.
    """
    rng = request.rng
    prefer_dates = request.choice == "many" or rng.random() < 0.5

    def fits(user: User, r: Reservation) -> bool:
        if not _upcoming(gen, r) or (swap and not _swaps(user, r)):
            return False
        if change and not policy.may_change_cabin(gen.db, r)[0]:
            return False
        return not bags or policy.baggage_consistent(r, user.membership)

    for user, (r,) in gen._users_with(request, fits, 1):
        plan = _change_plan(gen, request, r, prefer_dates) if change else None
        if change and (plan is None or (request.choice == "many" and not _moves(r, plan))):
            continue
        cabin = plan[0] if plan else r.cabin
        diff = plan[2] if plan else 0
        added = total = nonfree = fee = 0
        if bags:
            added = rng.randint(1, 3)
            total = r.total_baggages + added
            nonfree = policy.nonfree_bags(total, user.membership, cabin, len(r.passengers))
            if nonfree < r.nonfree_baggages:
                continue  # the new cabin's allowance would turn paid bags free
            fee = policy.BAG_FEE * (nonfree - r.nonfree_baggages)
        if request.calc and (diff < 0 or not diff + fee):
            continue  # a total to add up needs charges
        method = None
        if change or bags:
            method = gen._payment(user, max(diff, 0) + fee, rng, update=True)
            if method is None:
                continue
        doing = [plan[3]] if plan else []
        if bags:
            doing.append(f"add {phrasing.count(added, 'more checked bag', 'more checked bags')}")
        sentences = [f"For {_trip_text(r)}, you want to {' and '.join(doing)}."] if doing else []
        instructions = []
        if swap:
            new = rng.choice(_swaps(user, r))
            index = rng.randrange(len(r.passengers))
            old = r.passengers[index]
            name = f"{new['first_name']} {new['last_name']}"
            who = f"{name} (born {new['dob']})"
            if (new["first_name"], new["last_name"]) == (user.name.first_name, user.name.last_name):
                who = f"you ({name}, born {new['dob']})"
            lead = (
                "On that trip," if doing else f"You want to change a passenger on {_trip_text(r)}:"
            )
            sentences.append(f"{lead} {who} will fly instead of {old.first_name} {old.last_name}.")
            instructions.append("Keep the other passengers as they are.")
        if method is not None:
            instructions.append(f"Use {_method_text(user, method)} for any charge or refund.")
        instructions.append("You do not want any other change.")
        draft = gen._base_draft(
            user,
            reason=" ".join(sentences),
            purpose="Modify one reservation as the policy allows: "
            + ", ".join(
                w for w, on in (("flights", change), ("passenger", swap), ("bags", bags)) if on
            )
            + ".",
            instructions=instructions,
        )
        gen._read_reservation(draft, r)
        if plan and _moves(r, plan):
            draft.steps.append(
                Step(
                    "search_direct_flight",
                    {"origin": r.origin, "destination": r.destination, "date": plan[1][0]["date"]},
                )
            )
        fee_term = f"{policy.BAG_FEE} * {nonfree - r.nonfree_baggages}"
        if request.calc == "aggregate":
            terms = [
                t for t, on in ((plan[4] if plan else "", bool(diff)), (fee_term, bool(fee))) if on
            ]
            _calculate(draft, " + ".join(terms), "total charge of the changes")
            draft.communicate.append(money(diff + fee, "the total charge of the changes"))
        if plan and method is not None:
            draft.steps.append(
                Step(
                    "update_reservation_flights",
                    {
                        "reservation_id": r.reservation_id,
                        "cabin": cabin,
                        "flights": plan[1],
                        "payment_id": method.id,
                    },
                    info=f"{plan[3]}; price difference ${diff}.",
                )
            )
            if diff:
                what = "fare difference you pay" if diff > 0 else "fare difference refunded"
                draft.communicate.append(
                    money(diff, f"the {what} for reservation {r.reservation_id}")
                )
        if swap:
            people = [p.model_dump() for p in r.passengers]
            people[index] = new
            draft.steps.append(
                Step(
                    "update_reservation_passengers",
                    {"reservation_id": r.reservation_id, "passengers": people},
                    info=f"{name} in place of {old.first_name} {old.last_name}.",
                )
            )
        if bags and method is not None:
            draft.steps.append(
                Step(
                    "update_reservation_baggages",
                    {
                        "reservation_id": r.reservation_id,
                        "total_baggages": total,
                        "nonfree_baggages": nonfree,
                        "payment_id": method.id,
                    },
                    info=f"{phrasing.count(added, 'bag', 'bags')} added; {nonfree} of {total} "
                    f"beyond the free allowance; fee ${fee}.",
                )
            )
            if fee:
                draft.communicate.append(
                    money(fee, f"the bag fee for reservation {r.reservation_id}")
                )
        gen._side_question(draft, request)
        return draft
    raise GeneratorRejection(f"no user has a reservation open for the {request.shape} changes")


def _change_and_bags(gen: AirlineGenerator, request: _Request) -> _Draft:
    return _modify(gen, request, change=True, swap=False, bags=True)


def _passenger_swap(gen: AirlineGenerator, request: _Request) -> _Draft:
    return _modify(gen, request, change=False, swap=True, bags=False)


def _change_passenger_bags(gen: AirlineGenerator, request: _Request) -> _Draft:
    return _modify(gen, request, change=True, swap=True, bags=True)


def _cancellable(gen: AirlineGenerator, user: User) -> list[Reservation]:
    """The caller's reservations the policy lets the agent cancel for some reason."""
    return [r for r in gen._reservations(user) if _cancel_reason(gen, r, (), random.Random(0))]


def _cancel_and_change(gen: AirlineGenerator, request: _Request) -> _Draft:
    rng = request.rng
    prefer_dates = request.choice == "many" or rng.random() < 0.5
    for user in gen._shuffled_users(request):
        cancellable = _cancellable(gen, user)
        if not cancellable:
            continue
        gone = rng.choice(cancellable)
        changeable = [
            r
            for r in gen._reservations(user)
            if r is not gone and policy.may_change_cabin(gen.db, r)[0]
        ]
        rng.shuffle(changeable)
        for kept in changeable:
            plan = _change_plan(gen, request, kept, prefer_dates)
            if plan is None or (request.choice == "many" and not _moves(kept, plan)):
                continue
            if request.calc and plan[2] <= 0:
                continue
            method = gen._payment(user, max(plan[2], 0), rng, update=True)
            if method is None:
                continue
            reason = _cancel_reason(gen, gone, request.focus, rng) or "other"
            cabin, flights, diff, what, expression = plan
            draft = gen._base_draft(
                user,
                reason=f"You want to cancel {_trip_text(gone)}, and for {_trip_text(kept)} you "
                f"want to {what}.",
                purpose="Cancel one reservation and change another, as the policy allows.",
                instructions=[
                    f"Your reason for cancelling is: {reason.replace('_', ' ')}.",
                    "You accept that refunds go back to the original payment methods.",
                    f"Use {_method_text(user, method)} for any charge or refund of the change.",
                ],
            )
            gen._read_reservation(draft, gone)
            draft.steps.append(_cancel_step(gen, gone, reason))
            gen._read_reservation(draft, kept)
            if _moves(kept, plan):
                draft.steps.append(
                    Step(
                        "search_direct_flight",
                        {
                            "origin": kept.origin,
                            "destination": kept.destination,
                            "date": flights[0]["date"],
                        },
                    )
                )
            if request.calc == "aggregate":
                _calculate(draft, expression, "price difference of the change")
            draft.steps.append(
                Step(
                    "update_reservation_flights",
                    {
                        "reservation_id": kept.reservation_id,
                        "cabin": cabin,
                        "flights": flights,
                        "payment_id": method.id,
                    },
                    info=f"{what}; price difference ${diff}.",
                )
            )
            if diff:
                paid = "fare difference you pay" if diff > 0 else "fare difference refunded"
                draft.communicate.append(
                    money(diff, f"the {paid} for reservation {kept.reservation_id}")
                )
            gen._side_question(draft, request)
            return draft
    raise GeneratorRejection("no user has a reservation to cancel and another to change")


def _cancel_and_book(gen: AirlineGenerator, request: _Request) -> _Draft:
    for user in gen._shuffled_users(request):
        cancellable = _cancellable(gen, user)
        if not cancellable or not user.payment_methods:
            continue
        gone = request.rng.choice(cancellable)
        booking = _plan_booking(gen, request, _Wallet.of(user), set())
        if booking is None:
            continue
        reason = _cancel_reason(gen, gone, request.focus, request.rng) or "other"
        trip = "round trip" if booking.args["flight_type"] == "round_trip" else "one-way trip"
        extra = (
            ["You want to know what the new trip costs in total."]
            if request.calc == "aggregate"
            else []
        )
        draft = gen._base_draft(
            user,
            reason=f"You want to cancel {_trip_text(gone)} and book a new {trip} instead.",
            purpose="Cancel a reservation the policy allows cancelling, then book a new trip.",
            instructions=[
                f"Your reason for cancelling is: {reason.replace('_', ' ')}.",
                "You accept that refunds go back to the original payment methods.",
                booking.line,
                *extra,
            ],
        )
        gen._read_reservation(draft, gone)
        draft.steps.append(_cancel_step(gen, gone, reason))
        _book_steps(draft, [booking], request.calc)
        gen._side_question(draft, request)
        return draft
    raise GeneratorRejection("no user has a reservation to cancel and a new trip to pay for")


def _delayed_cancel(gen: AirlineGenerator, request: _Request) -> _Draft:
    def fits(user: User, r: Reservation) -> bool:
        return (
            _upcoming(gen, r)
            and policy.delayed(gen.db, r)
            and not policy.airline_cancelled(gen.db, r)
            and _cancel_reason(gen, r, (), random.Random(0)) is not None
            and policy.compensation(gen.db, user, r, changed_or_cancelled=True)[0] > 0
        )

    user, (r,) = _pick(gen, request, fits, 1)
    reason = _cancel_reason(gen, r, request.focus, request.rng) or "other"
    late = next(
        f for f in r.flights if policy.segment_status(gen.db, f.flight_number, f.date) == "delayed"
    )
    amount, why = policy.compensation(gen.db, user, r, changed_or_cancelled=True)
    draft = gen._base_draft(
        user,
        reason=f"Your flight {late.flight_number} on {late.date} is delayed, so you want to "
        f"cancel {_trip_text(r)}, and you want compensation for the delay.",
        purpose="Cancel a reservation with a delayed flight, then compensate the delay.",
        instructions=[
            f"Your reason for cancelling is: {reason.replace('_', ' ')}.",
            "You accept that refunds go back to the original payment methods.",
            "A travel certificate is fine as compensation.",
        ],
    )
    gen._read_reservation(draft, r)
    # The policy: confirm the facts (the delay) before compensating.
    draft.steps.append(
        Step("get_flight_status", {"flight_number": late.flight_number, "date": late.date})
    )
    if request.calc == "aggregate":
        _calculate(
            draft,
            f"{policy.DELAYED_FLIGHT_COMPENSATION} * {len(r.passengers)}",
            "compensation: a certificate per passenger for the delay",
        )
    draft.steps.append(_cancel_step(gen, r, reason))
    draft.steps.append(
        Step(
            "send_certificate",
            {"user_id": user.user_id, "amount": amount},
            info=f"for the delay on reservation {r.reservation_id}: {why}.",
        )
    )
    draft.communicate.append(money(amount, "the certificate for the delay"))
    gen._side_question(draft, request)
    return draft


def _flown_flight(gen: AirlineGenerator, r: Reservation) -> str | None:
    """The first flight of ``r`` dated before today, if it has been flown (else None).

    The agent tells it from the reservation's dates alone, as the Teacher's agent does.
    """
    today = policy.NOW.date().isoformat()
    first = next((f for f in r.flights if f.date < today), None)
    if first is None:
        return None
    status = policy.segment_status(gen.db, first.flight_number, first.date)
    return first.flight_number if status in policy.FLOWN_STATUSES else None


def _partly_flown(gen: AirlineGenerator, r: Reservation) -> bool:
    """Whether part of ``r`` was flown before today (its dates show it) and part is ahead."""
    if r.status == "cancelled" or _flown_flight(gen, r) is None:
        return False
    return any(s not in policy.FLOWN_STATUSES for s in policy.segment_statuses(gen.db, r))


#: Why a partly flown trip goes to a human agent (the policy's words).
_FLOWN_WHY = "part of the trip has already been flown, and then only a human agent can help"


def _transfer(gen: AirlineGenerator, draft: _Draft, r: Reservation) -> None:
    """The hand-over of a partly flown trip's cancellation to a human agent.

    Before it the agent names the flight already flown (an expected answer, which also tells
    one such task from another: a transfer's summary is free text).
    """
    flown = _flown_flight(gen, r)
    draft.steps.append(
        Step(
            "transfer_to_human_agents",
            {
                "summary": f"User {draft.user.user_id} wants to cancel reservation "
                f"{r.reservation_id}, part of which has already been flown; the policy leaves "
                "that to a human agent."
            },
            info=f"reservation {r.reservation_id}: {_FLOWN_WHY}.",
        )
    )
    if flown is not None:
        draft.communicate.append(
            Answer(value=flown, topic=f"the flight of reservation {r.reservation_id} flown")
        )


def _cancel_and_transfer(gen: AirlineGenerator, request: _Request) -> _Draft:
    rng = request.rng
    for user in gen._shuffled_users(request):
        cancellable = _cancellable(gen, user)
        flown = [r for r in gen._reservations(user) if _partly_flown(gen, r)]
        if not cancellable or not flown:
            continue
        gone, stuck = rng.choice(cancellable), rng.choice(flown)
        reason = _cancel_reason(gen, gone, request.focus, rng) or "other"
        draft = gen._base_draft(
            user,
            reason=f"You want to cancel {_trip_text(gone)}, and what is left of "
            f"{_trip_text(stuck)}, part of which you have already flown.",
            purpose="Cancel one reservation; the other is partly flown, so the agent transfers.",
            instructions=[
                f"Your reason for cancelling is: {reason.replace('_', ' ')}.",
                "You accept that refunds go back to the original payment methods.",
                "If the agent cannot cancel a trip itself, you accept a transfer to a human agent.",
            ],
        )
        gen._read_reservation(draft, gone)
        gen._read_reservation(draft, stuck)
        draft.steps.append(_cancel_step(gen, gone, reason))
        _transfer(gen, draft, stuck)
        draft.nl_assertions.append(
            f"Agent cancels reservation {gone.reservation_id}, does not cancel reservation "
            f"{stuck.reservation_id} and transfers the user to a human agent because "
            f"{_FLOWN_WHY}."
        )
        gen._side_question(draft, request)
        return draft
    raise GeneratorRejection("no user has a trip to cancel and a partly flown one")


def _flown_transfer(gen: AirlineGenerator, request: _Request) -> _Draft:
    user, (r,) = _pick(gen, request, lambda user, r: _partly_flown(gen, r), 1)
    draft = gen._base_draft(
        user,
        reason=f"You have flown the first part of {_trip_text(r)}, and you want the rest of it "
        "cancelled and refunded.",
        purpose="Cancellation of a partly flown trip: the agent transfers it, as policy requires.",
        instructions=[
            "Your reason for cancelling is: change of plan.",
            "If the agent cannot cancel it, you accept a transfer to a human agent.",
        ],
    )
    gen._read_reservation(draft, r)
    _transfer(gen, draft, r)
    draft.note = _FLOWN_WHY
    draft.refused.append(Step("cancel_reservation", {"reservation_id": r.reservation_id}))
    draft.nl_assertions.append(
        f"Agent does not cancel reservation {r.reservation_id} and transfers the user to a human "
        f"agent because {_FLOWN_WHY}."
    )
    gen._side_question(draft, request)
    return draft


_BUILDERS: dict[tuple[str, str], Callable[[AirlineGenerator, _Request], _Draft]] = {
    ("flight_cancellation", "fulfill"): _cancel_fulfill,
    ("flight_cancellation", "refuse"): _cancel_refuse,
    ("seat_or_baggage_service", "fulfill"): _baggage_fulfill,
    ("seat_or_baggage_service", "refuse"): _baggage_refuse,
    ("flight_change", "fulfill"): _change_fulfill,
    ("flight_change", "refuse"): _change_refuse,
    ("refund_or_compensation", "fulfill"): _compensation_fulfill,
    ("refund_or_compensation", "refuse"): _compensation_refuse,
    ("flight_booking", "fulfill"): _booking_fulfill,
    ("flight_booking", "refuse"): _booking_refuse,
    ("loyalty_or_membership_service", "fulfill"): _loyalty_fulfill,
    ("loyalty_or_membership_service", "refuse"): _loyalty_refuse,
}

_SHAPES = {s.name: s for s in SHAPES}
_SHAPE_BUILDERS: dict[str, Callable[[AirlineGenerator, _Request], _Draft]] = {
    "change_and_bags": _change_and_bags,
    "passenger_swap": _passenger_swap,
    "change_passenger_bags": _change_passenger_bags,
    "cancel_and_change": _cancel_and_change,
    "cancel_and_book": _cancel_and_book,
    "delayed_cancel": _delayed_cancel,
    "cancel_and_transfer": _cancel_and_transfer,
    "flown_transfer": _flown_transfer,
}
