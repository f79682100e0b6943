"""Users open in their own words: the scenario's request reworded, every code and date kept."""

from __future__ import annotations

import random

from evosyn.environments.kit.acting import in_own_words
from evosyn.environments.spoken_forms import date_forms, said

REQUESTS = (
    "I want to change the cabin to basic economy for the one-way trip MSP-DTW-JFK departing "
    "2024-05-16.",
    "I want to cancel the round trip DTW-CLT-DTW departing 2024-05-20; the round trip "
    "LAX-EWR-CLT-EWR-LAX departing 2024-05-27.",
    "I want to book a one-way economy trip from ATL to JFK on 2024-05-23.",
)


def test_the_request_is_reworded_not_recited() -> None:
    for request in REQUESTS:
        said_ = {in_own_words(request, random.Random(seed)) for seed in range(20)}
        assert request not in said_
        assert len(said_) >= 3, said_
        for text in said_:
            assert "departing 2024" not in text and "on 2024" not in text, text


def test_every_code_and_date_stays_in_a_form_the_gate_reads() -> None:
    for request in REQUESTS:
        codes = {w for w in request.replace("-", " ").replace(".", " ").split() if w.isupper()}
        dates = [w.strip(".;") for w in request.split() if w[:4] == "2024"]
        for seed in range(20):
            text = in_own_words(request, random.Random(seed))
            assert all(said([code], text) for code in codes), text
            assert all(said(date_forms(date), text) for date in dates), text


def test_a_one_way_route_keeps_its_order() -> None:
    text = in_own_words(REQUESTS[0], random.Random(1))
    assert text.index("MSP") < text.index("JFK"), text
    assert "DTW" in text
