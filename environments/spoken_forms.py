"""The forms in which a person says a value (a date, a count, an amount), and their match.

:func:`said` finds any of a value's forms in a text as whole words; the information-flow gate
(:mod:`evosyn.environments.information_flow`) and the grounding kit read them.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

_MONTHS = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
]
#: An ISO date, its year, month and day as groups.
ISO_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
_WORDS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
]
_SPACE = re.compile(r"\s+")


@functools.lru_cache(maxsize=8192)
def normalize(text: str) -> str:
    """``text`` lower-cased, with underscores and runs of space as one space.

    Cached: every gate and every scripted step reads the whole transcript again, the domain's
    policy (23 KB in telecom) included, and the same texts recur.
    """
    return _SPACE.sub(" ", text.lower().replace("_", " ")).strip()


@functools.lru_cache(maxsize=8192)
def _padded(text: str) -> str:
    """``text`` normalized to its words, with a space at each end (for whole-word search)."""
    return f" {re.sub(r'[^a-z0-9#@.$-]+', ' ', normalize(text))} "


def said(forms: Iterable[str], text: str) -> bool:
    """Whether any of ``forms`` occurs in ``text`` as whole words (both normalized)."""
    padded = _padded(text)
    for form in forms:
        words = re.sub(r"[^a-z0-9#@.$-]+", " ", normalize(form)).strip()
        if words and f" {words} " in padded:
            return True
        # An id or number followed by sentence punctuation ("it's 2963.").
        if words and re.search(rf"(?<![\w]){re.escape(words)}(?![\w])", normalize(text)):
            return True
    return False


def date_forms(value: str) -> list[str]:
    """``value`` and, for an ISO date, the ways a person says it ("May 26", "26 May", "5/26")."""
    match = ISO_DATE.match(value)
    if not match:
        return [value]
    _, month, day = match.groups()
    name = _MONTHS[int(month) - 1]
    d = int(day)
    suffix = "th" if 10 <= d % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(d % 10, "th")
    return [
        value,
        f"the {d}{suffix}",
        f"{name} {d}",
        f"{name} {d}{suffix}",
        f"{d} {name}",
        f"{d}{suffix} of {name}",
        f"{name[:3]} {d}",
        f"{int(month)}/{d}",
    ]


def number_forms(value: object) -> list[str]:
    """A count or amount as digits and, up to twelve, as a word ("2", "2.0", "two")."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return [str(value)]
    forms = [f"{value:g}", str(value)]
    if float(value).is_integer() and 0 <= value < len(_WORDS):
        forms.append(_WORDS[int(value)])
    return forms


def money_forms(amount: float) -> list[str]:
    """An amount as an agent may write it ("$1162", "$1,162.00", "1162.5", "$1162.50")."""
    whole = float(amount).is_integer()
    forms = [f"{amount:g}", f"{amount:.2f}", f"{amount:,.2f}"]
    if whole:
        forms += [f"{amount:.0f}", f"{amount:,.0f}"]
    return [f for form in forms for f in (form, f"${form}")]
