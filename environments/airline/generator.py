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

from tau2.data_model.tasks import Task
from tau2.domains.airline.data_model import Flight, FlightDB, PaymentMethod, Reservation, User

from evosyn.buckets import BUCKET_RANGES, DIFFICULTY_CALLS, OPEN_END
from evosyn.environments.airline import policy
from evosyn.environments.airline.baggage import (
    _baggage_fulfill,
    _baggage_refuse,
    _loyalty_fulfill,
    _loyalty_refuse,
)
from evosyn.environments.airline.bookings import _booking_fulfill, _booking_refuse
from evosyn.environments.airline.cancellations import (
    _cancel_fulfill,
    _cancel_refuse,
    _compensation_fulfill,
    _compensation_refuse,
)
from evosyn.environments.airline.changes import _change_fulfill, _change_refuse
from evosyn.environments.airline.feasibility import CHECKS, infeasible
from evosyn.environments.airline.mixed import (
    _cancel_and_book,
    _cancel_and_change,
    _cancel_and_transfer,
    _change_and_bags,
    _change_passenger_bags,
    _delayed_cancel,
    _flown_transfer,
    _passenger_swap,
)
from evosyn.environments.airline.request import (
    _MAX_WRITES,
    COMPUTATIONS,
    FAMILIES,
    PLAIN,
    READ_ONLY,
    _calculation,
    _choice,
    _count_conflict,
    _Draft,
    _min_writes,
    _Request,
)
from evosyn.environments.airline.shapes import SHAPES, Shape, _shape_for
from evosyn.environments.base import FunctionalSymbol
from evosyn.environments.contamination import collect_entities
from evosyn.environments.feasibility import first
from evosyn.environments.kit import phrasing
from evosyn.environments.kit.grounding import (
    PROPOSAL_CHALLENGES,
    GroundedGenerator,
    Request,
    Step,
    Unfit,
)
from evosyn.environments.kit.screen import GeneratorRejection
from evosyn.records import Answer, Blueprint

#: Callers tried for one whose words tell the reservations a task changes from their others.
AMBIGUITY_TRIES = 12
#: An airport code or an ISO date in a scenario's words.
_CODE_OR_DATE = re.compile(r"\b(?:[A-Z]{3}|\d{4}-\d{2}-\d{2})\b")
_UNKNOWN_IDS = "You do not know your reservation ids."


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


def _can_vary_payment(user: User) -> bool:
    """Whether the user has two saved methods, other than certificates, named differently."""
    named = {
        (m.source, getattr(m, "brand", None), getattr(m, "last_four", None))
        for m in user.payment_methods.values()
        if m.source != "certificate"
    }
    return len(named) >= 2


def _record_words(reservation: Reservation) -> set[str]:
    """The codes, dates and flight numbers a reservation's record holds."""
    words = {reservation.origin, reservation.destination}
    for flight in reservation.flights:
        words |= {flight.origin, flight.destination, flight.date, flight.flight_number}
    return words


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

# The names importers (the plugin, tests) take from here, wherever they are defined.
__all__ = [
    "CHECKS",
    "COMPUTATIONS",
    "FAMILIES",
    "SHAPES",
    "AirlineGenerator",
    "Shape",
    "infeasible",
]
