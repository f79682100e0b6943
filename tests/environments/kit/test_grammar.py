"""The seeded phrase grammar: choices, options, values and tidy sentences."""

from __future__ import annotations

import random

import pytest

from evosyn.environments.kit.grammar import expand, say


def test_one_template_gives_many_wordings_and_equal_seeds_agree() -> None:
    template = "(Hi|Hello|Hey)[ there], I (need|want) help with (my (order|account)|a purchase)."
    said = {say(random.Random(seed), template) for seed in range(200)}
    assert len(said) >= 20
    assert say(random.Random(7), template) == say(random.Random(7), template)
    assert all(s[0].isupper() and s.endswith(".") and "  " not in s for s in said)


def test_values_keep_their_case_and_sentences_start_upper() -> None:
    rng = random.Random(1)
    assert say(rng, "{email} is my email.", email="jane.doe@example.com").startswith("jane.doe@")
    assert say(rng, "Sure. {facts}.", facts="the fee is $5") == "Sure. The fee is $5."


def test_nesting_and_empty_alternatives() -> None:
    assert {expand(random.Random(s), "a(|b(c|d))") for s in range(50)} == {"a", "abc", "abd"}
    with pytest.raises(ValueError, match="unbalanced"):
        expand(random.Random(0), "(a|b")


def test_every_teacher_template_reads_as_a_sentence() -> None:
    import re
    import string

    from evosyn.environments.kit import acting, phrasing
    from evosyn.environments.retail import teacher as retail
    from evosyn.environments.telecom import teacher as telecom

    templates = [
        t
        for module in (acting, phrasing, retail, telecom)
        for value in vars(module).values()
        for group in (value.values() if isinstance(value, dict) else [value])
        if isinstance(group, tuple) and all(isinstance(t, str) for t in group)
        for t in group
        if "(" in t or "[" in t
    ]
    assert len(templates) > 20
    values = {"greeting": "Hi.", "request": "I want help.", "what": "order id", "value": "x"}
    values |= {"choice": "my card", "details": "cancel it", "email": "a@b.c", "zip": "12345"}
    values |= {"first_name": "A", "last_name": "B", "order_id": "#W1", "id": "B1", "dob": "d"}
    values |= {"full_name": "A B", "phone_number": "555", "customer_id": "C1", "shown": "ok"}
    values |= {"user_id": "u_1", "reservation_id": "ABC123", "origin": "JFK", "date": "d"}
    values |= {"destination": "LAX"}
    for template in templates:
        # A value the list above does not name reads as a plain word.
        named = {name: "x" for _, name, _, _ in string.Formatter().parse(template) if name}
        for seed in range(30):
            text = say(random.Random(seed), template, **(named | values))
            # A stray "?" inside a word means a regex habit slipped into a template.
            assert not re.search(r"\?\w", text), (template, text)
            # A "|" or bracket left over means an alternation outside a group.
            assert not re.search(r"[|\[\]]", text), (template, text)
