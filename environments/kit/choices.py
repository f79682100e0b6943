"""The words by which users name what they choose, shared by the domains' flow rules.

Each function is a :data:`~evosyn.environments.information_flow.Forms`: given a choice's value,
the call's arguments and what the agent has seen, the forms any of which the user must have
said. They read the records the agent saw, never the task, so they judge a dialogue written by
any Teacher alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from evosyn.environments.information_flow import (
    Forms,
    Say,
    Seen,
    date_forms,
    number_forms,
    records_in,
)

#: How users call a saved payment method's kind.
_SOURCES = {
    "credit_card": ("card", "credit card"),
    "gift_card": ("gift card", "gift-card", "giftcard"),
    "certificate": ("certificate", "travel certificate", "voucher"),
    "paypal": ("paypal",),
    "debit_card": ("debit card",),
}


#: How users ask for the method an order or booking was paid with.
ORIGINAL = ("original payment", "original card", "original method", "same card", "same payment")


def _original(value: str, seen: Seen) -> bool:
    """Whether ``value`` paid for something the agent has seen (a payment in its history)."""
    return any(
        found.get("transaction_type") == "payment" and value in found.values()
        for record in seen.records
        for found in records_in(record)
    )


def payment(value: object, arguments: Mapping[str, object], seen: Seen) -> list[str]:
    """A saved payment method: its last four digits, or its kind when it is not a card.

    The method an order was paid with is also named as "the original payment method".
    """
    text = str(value)
    record = seen.record_of(text) or {}
    source = str(record.get("source", ""))
    forms = [text, *(ORIGINAL if _original(text, seen) else ())]
    if record.get("last_four"):
        forms.append(str(record["last_four"]))
    elif source:
        forms += _SOURCES.get(source, (source.replace("_", " "),))
    return forms


def counted(*topic: str) -> Forms:
    """A count the user states: the number, or a "no ..." for zero, near the topic words."""

    def forms(value: object, arguments: Mapping[str, object], seen: Seen) -> list[str]:
        numbers = number_forms(value)
        found = [f"{n} {t}" for n in numbers for t in topic]
        found += [f"{n} checked" for n in numbers] + [f"{n} of them" for n in numbers]
        if value == 0:
            found += [f"no {t}" for t in topic] + [f"without {t}" for t in topic]
            found += [f"don't need any {t}" for t in topic] + ["no checked", "none"]
        return found

    return forms


def topic(*words: str) -> Forms:
    """A yes-or-no choice: the user speaks to it (its outcome is the database check's)."""

    def forms(value: object, arguments: Mapping[str, object], seen: Seen) -> list[str]:
        return list(words)

    return forms


def person(value: object, arguments: Mapping[str, object], seen: Seen) -> list[str]:
    """A traveller: their full name (or first name), or "myself" for the account holder."""
    if not isinstance(value, Mapping):
        return [str(value)]
    first, last = str(value.get("first_name", "")), str(value.get("last_name", ""))
    forms = [f"{first} {last}", first]
    for record in seen.records:
        name = record.get("name") if isinstance(record, Mapping) else None
        if isinstance(name, Mapping) and (name.get("first_name"), name.get("last_name")) == (
            first,
            last,
        ):
            forms += ["myself", "just me", "only me", "me alone", "for me", "i am", "i'm"]
    return forms


def entity(*keys: str) -> Forms:
    """A record the user names by its id or by one of ``keys`` of the record the agent saw.

    Keys may name nested fields (``options``: each option value; ``flights``: each flight's
    origin, destination and date).
    """

    def forms(value: object, arguments: Mapping[str, object], seen: Seen) -> list[str]:
        text = str(value)
        record = seen.record_of(text) or {}
        found = [text]
        for key in keys:
            found += _words(record.get(key))
        return found

    return forms


def _words(value: object) -> list[str]:
    if isinstance(value, Mapping):
        return [w for inner in value.values() for w in _words(inner)]
    if isinstance(value, list):
        return [w for inner in value for w in _words(inner)]
    if isinstance(value, str) and value:
        return date_forms(value)
    return []


def phrases(table: Mapping[str, Sequence[str]]) -> Forms:
    """A value of a closed list, said in any of its phrases (``table[value]``)."""

    def forms(value: object, arguments: Mapping[str, object], seen: Seen) -> list[str]:
        return [str(value), *table.get(str(value), ())]

    return forms


# ---------------------------------------------------------------- how the user says a choice


def say_payment(value: object, arguments: Mapping[str, object], seen: Seen) -> str:
    """A saved payment method as its owner names it ("my Visa card ending in 7334")."""
    record = seen.record_of(str(value)) or {}
    source = str(record.get("source", ""))
    if not source and _original(str(value), seen):
        return "the original payment method"
    if record.get("last_four"):
        return f"my {str(record.get('brand', '')).title()} card ending in {record['last_four']}"
    return {
        "paypal": "my PayPal account",
        "gift_card": "my gift card",
        "certificate": "my travel certificate",
    }.get(source, f"my {source.replace('_', ' ') or 'saved payment method'}")


def say_person(value: object, arguments: Mapping[str, object], seen: Seen) -> str:
    """A traveller's name and date of birth."""
    if not isinstance(value, Mapping):
        return str(value)
    return f"{value.get('first_name')} {value.get('last_name')}, born {value.get('dob')}"


def say_count(singular: str, plural: str) -> Say:
    """A count in words ("no checked bags", "one checked bag", "3 checked bags")."""

    def spoken(value: object, arguments: Mapping[str, object], seen: Seen) -> str:
        if value == 0:
            return f"no {plural}"
        if value == 1:
            return f"one {singular}"
        return f"{number_forms(value)[0]} {plural}"

    return spoken


def say_yes_no(yes: str, no: str) -> Say:
    """A yes-or-no choice in the user's words."""

    def spoken(value: object, arguments: Mapping[str, object], seen: Seen) -> str:
        return yes if str(value).lower() in ("yes", "true") else no

    return spoken


def say_record(template: str, *keys: str) -> Say:
    """A record the user names by its fields (``template`` formats the record's ``keys``)."""

    def spoken(value: object, arguments: Mapping[str, object], seen: Seen) -> str:
        record = seen.record_of(str(value)) or {}
        fields = {k: _first_words(record.get(k)) for k in keys}
        if not all(fields.values()):
            return str(value)
        return template.format(**fields)

    return spoken


def _first_words(value: object) -> str:
    if isinstance(value, Mapping):
        return ", ".join(str(v) for v in value.values())
    if isinstance(value, list) and value:
        return _first_words(value[0])
    return "" if value is None else str(value)


def any_of(*ways: Forms) -> Forms:
    """A choice the user may state in any of several ways (each a forms function)."""

    def forms(value: object, arguments: Mapping[str, object], seen: Seen) -> list[str]:
        return [f for way in ways for f in way(value, arguments, seen)]

    return forms
