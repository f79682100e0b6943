"""What an airline blueprint asks for: families, bounds, the draft and request records, counts."""

from __future__ import annotations

from dataclasses import dataclass, field

from tau2.domains.airline.data_model import User

from evosyn.buckets import BUCKET_RANGES, DIFFICULTY_CALLS, OPEN_END
from evosyn.environments.feasibility import Conflict
from evosyn.environments.kit.grounding import Draft, Request

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
#: Families whose single write is neither split nor partial: the pattern needs two writes.
_WHOLE_WRITES = frozenset({"flight_cancellation", "flight_booking", "refund_or_compensation"})


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
#: The saved method a ``payment_split`` value tops up with a credit card (None: one method).
_SPLIT_SOURCES = {
    "single_method": None,
    "gift_card_and_card": "gift_card",
    "certificate_and_card": "certificate",
}


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
