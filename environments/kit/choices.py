"""The words by which users name what they choose, shared by the domains' flow rules.

Each function is a :data:`~evosyn.environments.information_flow.Forms`: given a choice's value,
the call's arguments and what the agent has seen, the forms any of which the user must have
said. They read the records the agent saw, never the task, so they judge a dialogue written by
any Teacher alike.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence

from evosyn.environments.information_flow import Choice, Forms, Say, Seen, records_in
from evosyn.environments.spoken_forms import date_forms, number_forms, said

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


def _saved(seen: Seen) -> dict[str, Mapping[str, object]]:
    """The saved payment methods of the latest profile seen, by id."""
    for record in reversed(seen.records):
        for found in records_in(record):
            methods = found.get("payment_methods")
            if isinstance(methods, Mapping):
                return {str(k): v for k, v in methods.items() if isinstance(v, Mapping)}
    return {}


def payment(value: object, arguments: Mapping[str, object], seen: Seen) -> list[str]:
    """A saved payment method: its last four digits, or its kind when that tells it apart.

    The method an order was paid with is also named as "the original payment method"; of two
    gift cards or certificates, one is named by its balance ("the $251 one").
    """
    text = str(value)
    record = seen.record_of(text) or {}
    # A reference (a payment in an order's history) has no kind: the id's prefix names it.
    source = str(record.get("source", "")) or text.rstrip("0123456789").rstrip("_")
    forms = [text, *(ORIGINAL if _original(text, seen) else ())]
    if record.get("last_four"):
        return [*forms, str(record["last_four"])]
    alike = [k for k, m in _saved(seen).items() if m.get("source") == source and k != text]
    if not alike:
        forms += _SOURCES.get(source, (source.replace("_", " "),))
    for key in ("amount", "balance"):
        if isinstance(record.get(key), int | float):
            forms += [f"${record[key]:g}", f"{record[key]:g} dollars"]
    return forms


def counted(*topic: str, current: tuple[str, str] | None = None) -> Forms:
    """A count the user states: the number, or a "no ..." for zero, near the topic words.

    With ``current`` (the id argument and the field of its record holding the count now), a
    change by a number is a statement too: "3 more bags" for a total of 9 after 6.
    """

    def forms(value: object, arguments: Mapping[str, object], seen: Seen) -> list[str]:
        numbers = number_forms(value)
        found = [f"{n} {t}" for n in numbers for t in topic]
        delta: list[str] = []
        if current is not None and isinstance(value, int):
            record = seen.record_of(str(arguments.get(current[0], ""))) or {}
            now = record.get(current[1])
            if isinstance(now, int) and value != now:
                delta = number_forms(abs(value - now))
                more = ("more", "extra", "additional", "fewer", "less")
                found += [f"{n} {m}" for n in delta for m in more]
                found += ["another"] if abs(value - now) == 1 else []
        found += [f"{n} checked" for n in numbers] + [f"{n} of them" for n in numbers]
        # However it is worded ("3 bags total on one trip, 2 on the other"), a number the user
        # states in a sentence about the topic, or in answer to a question about it, is theirs;
        # so is the change to it in a sentence that says it is one ("add 3 checked bags").
        answers = _answers(seen)
        if any(_stated(numbers, topic, turn, question) for turn, question in answers):
            found += numbers
        if delta and any(_stated(delta, topic, turn, "", change=True) for turn, _ in answers):
            found += delta
        if value == 0:
            found += [f"no {t}" for t in topic] + [f"without {t}" for t in topic]
            found += [f"don't need any {t}" for t in topic] + ["no checked", "none"]
        return found

    return forms


def _answers(seen: Seen) -> list[tuple[str, str]]:
    """Each user turn with what the agent said just before it."""
    return list(zip(seen.user, seen.asked, strict=False))


#: Words that make a number in a sentence a change to a count, not the count itself.
_CHANGE = ("add", "adding", "more", "extra", "additional", "another", "remove", "fewer", "less")


def _stated(
    numbers: Sequence[str], topic: Sequence[str], turn: str, question: str, change: bool = False
) -> bool:
    """Whether ``turn`` states one of ``numbers`` about ``topic``.

    In one sentence with a topic word (and, for ``change``, a word saying it is a change), or
    anywhere when the agent's question before it was about the topic.
    """
    if question and said(topic, question) and said(numbers, turn):
        return True
    return any(
        said(topic, sentence)
        and said(numbers, sentence)
        and (not change or said(_CHANGE, sentence))
        for sentence in re.split(r"(?<=[.!?;])\s+|\n+", turn)
    )


def kept(field_name: str, record_argument: str, way: Forms) -> Forms:
    """A choice that needs no words when it keeps the record's current value.

    ``record_argument`` names the argument whose record holds ``field_name`` (a flight change
    that keeps the cabin the reservation has).
    """

    def forms(value: object, arguments: Mapping[str, object], seen: Seen) -> list[str]:
        record = seen.record_of(str(arguments.get(record_argument, ""))) or {}
        return [] if record.get(field_name) == value else list(way(value, arguments, seen))

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
    """A record the user names by its id or by what ``keys`` of the records the agent saw say.

    Keys may name nested fields (``options``: each option value; ``flights``: each flight's
    origin, destination and date). What the user said of the record must tell it apart from
    its siblings (the other reservations of a profile, the other items of an order, the other
    variants of a product): "my trip on the 19th" names neither of two trips on the 19th, "the
    round trip MSP-MCO-LAS on May 5" names the one that has all of it. A record so named needs
    no more words (the forms are empty).
    """

    def forms(value: object, arguments: Mapping[str, object], seen: Seen) -> list[str]:
        text = str(value)
        for key, record in seen.records_of(text):
            own = list(dict.fromkeys(w for k in keys for w in _words(record.get(k))))
            said = {w.lower() for w in own if seen.user_said([w])}
            if not said:
                continue
            siblings = seen.others_like(key, record)
            if not any(
                said <= {w.lower() for k in keys for w in _words(other.get(k))}
                for other in siblings
            ):
                return []
        return [text]

    return forms


def _option_phrase(key: str, value: object) -> str:
    """An option in a sentence: its value, or "no water resistance" for a yes/no option."""
    if isinstance(value, str) and value.lower() in ("yes", "no"):
        return f"{'with' if value.lower() == 'yes' else 'no'} {key}"
    return str(value)


def _option_words(key: str, value: object) -> list[str]:
    """An option as people say it: its value, or for a yes/no option its name.

    "not water resistant" or "no water resistance" for water resistance: no.
    """
    if isinstance(value, str) and value.lower() in ("yes", "no"):
        head = key.split()[0] if key.split() else key
        if value.lower() == "no":
            return [f"not {head}", f"no {head}", f"non-{head}", f"without {head}"]
        return [key, f"with {head}"]
    return _words(value)


def _words(value: object) -> list[str]:
    """A record's strings, each also by its longer words ("earbuds" of "Wireless Earbuds")."""
    if isinstance(value, Mapping):
        return [w for key, inner in value.items() for w in _option_words(str(key), inner)]
    if isinstance(value, list):
        return [w for inner in value for w in _words(inner)]
    if isinstance(value, str) and value:
        parts = [w for w in value.split() if len(w) > 4] if " " in value else []
        return [*date_forms(value), *parts]
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
    words = {
        "paypal": "my PayPal account",
        "gift_card": "my gift card",
        "certificate": "my travel certificate",
    }.get(source, f"my {source.replace('_', ' ') or 'saved payment method'}")
    alike = [k for k, m in _saved(seen).items() if m.get("source") == source and k != value]
    held = next((record[k] for k in ("amount", "balance") if k in record), None)
    if alike and isinstance(held, int | float):
        return f"{words}, the one with ${held:g} on it"
    return words


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


def say_record(template: str, *keys: str, named_by: Forms | None = None) -> Say:
    """A record the user names by its fields (``template`` formats the record's ``keys``).

    With ``named_by`` (the choice's forms, e.g. an :func:`entity`), the user says the record's
    id instead wherever those words, with all the user said before, would not tell it apart:
    "my trip from EWR to MSP" names neither of two trips that both fly EWR to MSP.
    """

    def spoken(value: object, arguments: Mapping[str, object], seen: Seen) -> str:
        record = seen.record_of(str(value)) or {}
        fields = {k: _first_words(record.get(k)) for k in keys}
        if not all(fields.values()):
            return str(value)
        phrase = template.format(**fields)
        if named_by is not None:
            heard = dataclasses.replace(seen, user=[*seen.user, phrase])
            if named_by(value, arguments, heard):
                return str(value)
        return phrase

    return spoken


def _first_words(value: object) -> str:
    if isinstance(value, Mapping):
        return ", ".join(_option_phrase(str(k), v) for k, v in value.items())
    if isinstance(value, list) and value:
        return _first_words(value[0])
    return "" if value is None else str(value)


def any_of(*ways: Forms) -> Forms:
    """A choice the user may state in any of several ways (each a forms function)."""

    def forms(value: object, arguments: Mapping[str, object], seen: Seen) -> list[str]:
        return [f for way in ways for f in way(value, arguments, seen)]

    return forms


def payment_choice(tool: str, argument: str, ask: str) -> Choice:
    """The saved payment method a write charges or refunds.

    A detail a caller may leave open for the agent to propose by name (the card's last four
    digits, or its kind); the user's yes to that proposal is their choice.
    """
    return Choice(
        tool,
        argument,
        "this payment",
        payment,
        ask,
        say_payment,
        proposable=True,
        open_detail=True,
    )
