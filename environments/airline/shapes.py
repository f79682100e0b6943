"""The mixed shapes an airline task may take besides its plain one, and which fit a request."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from evosyn.buckets import BUCKET_RANGES, DIFFICULTY_CALLS, OPEN_END, in_bucket
from evosyn.environments.airline.request import PLAIN, _calculation, _choice, _Request
from evosyn.environments.feasibility import Asked
from evosyn.environments.kit import phrasing
from evosyn.environments.kit.grounding import PROPOSAL_CHALLENGES, with_controls
from evosyn.environments.kit.screen import GeneratorRejection

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
