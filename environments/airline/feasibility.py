"""The airline feasibility rule: :data:`CHECKS`, one check per rule id, and ``infeasible``."""

from __future__ import annotations

from evosyn.environments.airline.request import (
    _BOOKING,
    _MAX_WRITES,
    _SPLIT_SOURCES,
    FAMILIES,
    NO_PAYMENT_CHOICE,
    READ_ONLY,
    _choice,
    _count_conflict,
    _min_writes,
    computations,
)
from evosyn.environments.airline.shapes import _fitting_shapes
from evosyn.environments.feasibility import Asked, Checks, Conflict, first
from evosyn.environments.kit.grounding import PROPOSAL_CHALLENGES
from evosyn.environments.kit.rules import calculation_rules, computation_rule, opening_rules

#: Patterns only a write can show.
WRITE_PATTERNS = frozenset(
    {
        "lookup_verify_then_modify",
        "state_change_with_confirmation",
        "partial_update_or_split_action",
        "search_compare_then_book",
    }
)


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
