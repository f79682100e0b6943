"""How the records a Generator grounds a task in are shown: whole, plain fields first, bounded.

A record cut inside its JSON loses what comes after the cut (an order's ``status`` after a long
``payment_history``), and a product shown with only the variant an order holds leaves an
exchange nothing honest to switch to. These tests read the records of real prompts back.
"""

from __future__ import annotations

import json
import random
import re

import pytest

from evosyn.agents.gateway import Gateway, GatewaySettings
from evosyn.agents.generator.llm import LLMGenerator
from evosyn.agents.prompt_context import entity_sample
from evosyn.agents.prompt_records import ENTITY_CHARS, RECORDS_CHARS, shown_record, within
from evosyn.environments import get_domain
from evosyn.records import Blueprint

GATEWAY = Gateway("test", GatewaySettings(model="openai/unused", api_base="http://127.0.0.1:9/v1"))
_RECORD = re.compile(r"^\[(\w+) (\S+)\] (\{.*\})$", re.MULTILINE)


def blueprint(family: str, seed: int) -> Blueprint:
    return Blueprint(
        campaign_id="c",
        round=1,
        blueprint_id=f"bp-{family}-{seed}",
        direction_id="d",
        space_version=1,
        selections={"task_family": [family], "expected_outcome": ["fulfill"]},
        intent=f"a {family} task",
    )


def records_of(prompt: str) -> tuple[dict[tuple[str, str], dict], str]:
    """The records a Generator prompt shows, parsed, and its note of records left out."""
    section = prompt.split("## Records from the environment you may build the task on\n", 1)[1]
    section = section.split("\n\n", 1)[0]
    shown = {(t, k): json.loads(text) for t, k, text in _RECORD.findall(section)}
    lines = [line for line in section.splitlines() if line.startswith("[")]
    assert len(shown) == len(lines), "a record line is not whole JSON"
    note = next((x for x in section.splitlines() if x.startswith("Left out for room")), "")
    return shown, note


def test_a_long_record_is_never_cut_inside_its_json() -> None:
    order = {
        "payment_history": [
            {"amount": 10.5 + i, "payment_method_id": "gift_card_1"} for i in range(40)
        ],
        "items": [{"item_id": str(1000 + i), "price": i} for i in range(3)],
        "status": "pending",
        "order_id": "#W1",
    }
    text = shown_record(order, limit=400)
    body, note = text.split(" (left out for room: ", 1)
    shown = json.loads(body)
    assert len(body) <= 400
    # The plain fields come first and stay: what a task hinges on is never the part cut.
    assert list(shown)[:2] == ["order_id", "status"] and shown["status"] == "pending"
    assert shown["items"] == order["items"]
    kept = len(shown["payment_history"])
    assert shown["payment_history"] == order["payment_history"][:kept]
    assert note == f"the last {40 - kept} of payment_history)"
    # A record that fits is whole, with no note.
    assert json.loads(shown_record(order)) == order


@pytest.mark.parametrize("family", ["order_exchange", "order_item_modification"])
@pytest.mark.parametrize("seed", [1, 4])
def test_every_order_shows_its_status_and_every_product_every_variant(
    family: str, seed: int
) -> None:
    prompt = LLMGenerator(GATEWAY, "retail").prompt(blueprint(family, seed), seed=seed)
    shown, note = records_of(prompt)
    db = get_domain("retail").blank_state().env.tools.db
    orders = [r for (t, _), r in shown.items() if t == "orders"]
    assert orders
    for order in orders:
        assert order["status"] == db.orders[order["order_id"]].status
        for item in order["items"]:
            product = shown.get(("products", item["product_id"]))
            if product is None:
                # Left out for room, and said so.
                assert f"products {item['product_id']}" in note
                continue
            every = db.products[item["product_id"]].model_dump(mode="json")["variants"]
            assert product["variants"] == every
    # Bounded: the records of one prompt stay within the budget.
    section = prompt.split("## Records from the environment", 1)[1].split("\n\n", 1)[0]
    assert len(section) <= RECORDS_CHARS + 1000


def test_the_budget_leaves_out_the_last_records_whole_and_names_them() -> None:
    entities = entity_sample(get_domain("retail"), random.Random(4), people=3)
    assert all(len(e["record"]) <= ENTITY_CHARS for e in entities)
    kept, left = within(entities, limit=6000)
    assert kept == entities[: len(kept)] and 0 < len(kept) < len(entities)
    assert left == [f"{e['table']} {e['key']}" for e in entities[len(kept) :]]
    assert within(entities, limit=10**9) == (entities, [])


def test_a_flight_shows_only_the_reserved_dates() -> None:
    # A calendar is cut to the days the shown reservations use; the searches show others.
    prompt = LLMGenerator(GATEWAY).prompt(blueprint("flight_change", 3), seed=3)
    shown, _ = records_of(prompt)
    flights = [r for (t, _), r in shown.items() if t == "flights"]
    assert flights and all(0 < len(f["dates"]) <= 4 for f in flights)


@pytest.mark.parametrize(
    ("domain", "family", "said"),
    [
        ("airline", "flight_change", {"keyed by ids", "keyed by dates"}),
        ("retail", "order_exchange", {"keyed by ids"}),
        ("telecom", "plan_change", set()),
    ],
)
def test_the_prompt_says_how_the_maps_it_shows_are_cut(
    domain: str, family: str, said: set[str]
) -> None:
    # Only what the records hold is explained: no calendar sentence where no record has one.
    prompt = LLMGenerator(GATEWAY, domain).prompt(blueprint(family, 3), seed=3)
    intro = prompt.split("## Records from the environment", 1)[1].split("\n[", 1)[0]
    assert {kind for kind in ("keyed by ids", "keyed by dates") if kind in intro} == said
