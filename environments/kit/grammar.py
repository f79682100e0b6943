"""A seeded phrase grammar: one template, many wordings.

A template is text with three kinds of marks:

* ``(a|b|c)`` picks one alternative (alternatives may be empty and may nest);
* ``[x]`` keeps ``x`` or drops it, with even odds (``x`` may hold alternations);
* ``{name}`` is replaced by the value passed for ``name`` after the choices are made.

``say(rng, "(Hi|Hello)[ there], I need help with {what}.", what="my order")`` gives one of
four sentences. The same ``rng`` state gives the same sentence, so seeded rollouts stay
reproducible while a handful of templates yields hundreds of distinct turns.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence


def _close(template: str, start: int, opening: str, closing: str) -> int:
    """Index of the bracket closing the one at ``start``."""
    depth = 0
    for i in range(start, len(template)):
        if template[i] == opening:
            depth += 1
        elif template[i] == closing:
            depth -= 1
            if depth == 0:
                return i
    raise ValueError(f"unbalanced {opening!r} in template {template!r}")


def _split(body: str) -> list[str]:
    """Top-level ``|`` alternatives of a group's body."""
    parts: list[str] = []
    depth = 0
    current = ""
    for char in body:
        if char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        if char == "|" and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    return [*parts, current]


def expand(rng: random.Random, template: str) -> str:
    """``template`` with every alternation and option resolved (``{name}`` marks kept)."""
    out: list[str] = []
    i = 0
    while i < len(template):
        char = template[i]
        if char == "(":
            end = _close(template, i, "(", ")")
            out.append(expand(rng, rng.choice(_split(template[i + 1 : end]))))
            i = end + 1
        elif char == "[":
            end = _close(template, i, "[", "]")
            if rng.random() < 0.5:
                out.append(expand(rng, template[i + 1 : end]))
            i = end + 1
        else:
            out.append(char)
            i += 1
    return "".join(out)


def tidy(text: str) -> str:
    """Collapse the spaces and stray punctuation spacing that dropped options leave behind."""
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r"\s+([,.;:?!])", r"\1", text)
    text = re.sub(r"([,;]){2,}", r"\1", text)
    # Every sentence starts with a capital, also where a value opened it ("the fee is ...").
    # An email or id that opens a sentence keeps its case: only plain words are capitalised.
    return re.sub(
        r"(^|[.?!] )([a-z])(?=[a-z']*(?:[ ,;:]|[.?!](?:\s|$)))",
        lambda m: m.group(1) + m.group(2).upper(),
        text,
    )


def say(rng: random.Random, templates: str | Sequence[str], **values: object) -> str:
    """One wording of ``templates`` (one template, or several to pick from) with ``values``."""
    template = templates if isinstance(templates, str) else rng.choice(list(templates))
    return tidy(expand(rng, template).format(**values))
