"""Baggage and membership tasks: bags added, bag or insurance changes refused, inquiries."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tau2.domains.airline.data_model import Reservation, User

from evosyn.environments.airline import policy
from evosyn.environments.airline.grounding import (
    _at_most,
    _calculate,
    _method_text,
    _pick,
    _pick_paying,
    _trip_text,
    _upcoming,
)
from evosyn.environments.airline.request import _Draft, _Request
from evosyn.environments.kit import phrasing
from evosyn.environments.kit.grounding import Step, money
from evosyn.environments.kit.screen import GeneratorRejection
from evosyn.records import Answer

if TYPE_CHECKING:
    from evosyn.environments.airline.generator import AirlineGenerator


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
