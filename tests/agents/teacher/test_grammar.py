"""The seeded phrase grammar: choices, options, values and tidy sentences."""

from __future__ import annotations

import random

import pytest

from evosyn.agents.teacher.grammar import expand, say


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
