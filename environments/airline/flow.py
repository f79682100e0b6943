"""What the airline caller chooses, which writes move money, which ids stay internal."""

from __future__ import annotations

from collections.abc import Mapping

from evosyn.environments.information_flow import Choice, FlowRules, Forms, Seen, literal
from evosyn.environments.kit import choices

_BAG_WORDS = ("bag", "bags", "checked bag", "checked bags", "suitcase", "suitcases")
_BAGS = choices.counted(*_BAG_WORDS)
_MORE_BAGS = choices.counted(*_BAG_WORDS, current=("reservation_id", "total_baggages"))
_KEPT_CABIN = choices.kept("cabin", "reservation_id", literal)
#: A saved payment method's id, as tools may print it in plain text.
PAYMENT_ID = r"\b(?:credit_card|gift_card|certificate|paypal)_\d+\b"
#: The cities of the airports τ²-bench's flights use: a caller says the city, the agent the code.
AIRPORTS = {
    "ATL": ("atlanta",),
    "BOS": ("boston",),
    "CLT": ("charlotte",),
    "DEN": ("denver",),
    "DFW": ("dallas", "fort worth"),
    "DTW": ("detroit",),
    "EWR": ("newark",),
    "IAH": ("houston",),
    "JFK": ("new york", "kennedy"),
    "LAS": ("las vegas",),
    "LAX": ("los angeles",),
    "LGA": ("new york", "laguardia"),
    "MCO": ("orlando",),
    "MIA": ("miami",),
    "MSP": ("minneapolis",),
    "ORD": ("chicago", "o'hare"),
    "PHL": ("philadelphia",),
    "PHX": ("phoenix",),
    "SEA": ("seattle",),
    "SFO": ("san francisco",),
}
_RESERVATION = choices.entity("origin", "destination", "flights")
_INSURANCE = choices.topic("insurance", "insured", "insure")
_SAY_BAGS = choices.say_count("checked bag", "checked bags")
_SAY_INSURANCE = choices.say_yes_no("yes to travel insurance", "no travel insurance")
_SAY_RESERVATION = choices.say_record(
    "my trip from {origin} to {destination}", "origin", "destination", named_by=_RESERVATION
)
_ASK_PAY = "how you would like to pay"


def _reservation(tool: str) -> Choice:
    return Choice(
        tool,
        "reservation_id",
        "the reservation",
        _RESERVATION,
        "which reservation",
        _SAY_RESERVATION,
    )


def _passengers(tool: str) -> Choice:
    return Choice(
        tool,
        "passengers[]",
        "this passenger",
        choices.person,
        "the name and date of birth of each passenger",
        choices.say_person,
    )


def _new_passenger(value: object, arguments: Mapping[str, object], seen: Seen) -> list[str]:
    """A passenger the reservation already has needs no words; a new one is named."""
    record = seen.record_of(str(arguments.get("reservation_id", ""))) or {}
    kept = record.get("passengers")
    if isinstance(kept, list) and value in kept:
        return []
    return list(choices.person(value, arguments, seen))


def _bags(tool: str, forms: Forms) -> Choice:
    return Choice(
        tool, "total_baggages", "how many bags", forms, "how many checked bags in total", _SAY_BAGS
    )


_CHANGES = (
    "update_reservation_flights",
    "update_reservation_baggages",
    "update_reservation_passengers",
    "cancel_reservation",
)

RULES = FlowRules(
    choices=(
        _passengers("book_reservation"),
        Choice("book_reservation", "cabin", "the cabin", ask="which cabin you would like"),
        _bags("book_reservation", _BAGS),
        Choice(
            "book_reservation",
            "insurance",
            "whether to buy insurance",
            _INSURANCE,
            "whether you want travel insurance",
            _SAY_INSURANCE,
        ),
        choices.payment_choice("book_reservation", "payment_methods[].payment_id", _ASK_PAY),
        *(_reservation(tool) for tool in _CHANGES),
        Choice(
            "update_reservation_flights",
            "cabin",
            "the cabin",
            _KEPT_CABIN,
            ask="which cabin you would like",
        ),
        choices.payment_choice("update_reservation_flights", "payment_id", _ASK_PAY),
        _bags("update_reservation_baggages", _MORE_BAGS),
        choices.payment_choice("update_reservation_baggages", "payment_id", _ASK_PAY),
        Choice(
            "update_reservation_passengers",
            "passengers[]",
            "this passenger",
            _new_passenger,
            "the name and date of birth of the new passenger",
            choices.say_person,
        ),
    ),
    priced_writes=frozenset(
        {
            "book_reservation",
            "update_reservation_flights",
            "update_reservation_baggages",
            "cancel_reservation",
            "send_certificate",
        }
    ),
    internal_ids=frozenset({"payment_id", "payment_methods", "id"}),
    internal_patterns=(PAYMENT_ID,),
    aliases=AIRPORTS,
    distinctive=frozenset({r"user id|user ID|username"}),
    identifiers={
        r"user id|user ID|username": r"\b[a-z]+_[a-z]+_\d{4}\b",
        r"reservation (?:id|number|code)|booking (?:code|number|reference)|confirmation "
        r"(?:code|number)": r"\b(?=[A-Z0-9]*\d)(?=[A-Z0-9]*[A-Z])(?!HAT\d{3}\b)[A-Z0-9]{6}\b",
    },
)
