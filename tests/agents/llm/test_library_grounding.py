"""Prompt grounding on a domain with only its environment: records, searches and amount rules.

The library registers no programmatic Generator, so the records a Generator prompt is built on
come from its database, tools and policy model (``acted_on``); its people table, amount rules
and catalog search come from its registration and tools, not from lists kept in the kit, and a
title shows the holds queued for it as the agent's look-up does.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import random
import re

import pytest

from evosyn.agents import prompt_context
from evosyn.agents.gateway import Gateway, GatewaySettings
from evosyn.agents.generator.llm import LLMGenerator
from evosyn.agents.prompt_context import (
    acted_on,
    entity_sample,
    fitting_ids,
    payment_rules,
    people_table,
)
from evosyn.agents.prompt_records import lookups
from evosyn.environments.airline import policy as airline_policy
from evosyn.environments.library import policy as library_policy
from evosyn.environments.library.tools import TODAY
from evosyn.environments.registry import domain_plugin, get_domain
from evosyn.records import Blueprint


def _blueprint(rnd: int, index: int, **selections: str) -> Blueprint:
    return Blueprint(
        campaign_id="c",
        round=rnd,
        blueprint_id=f"r{rnd}-d00-b{index:04d}",
        direction_id=f"r{rnd}-d00",
        space_version=1,
        selections={name: [value] for name, value in selections.items()},
        intent="a renewal",
    )


def _official_ids() -> set[str]:
    return {
        value
        for task in get_domain("library").tasks()
        for action in task.evaluation_criteria.actions or []  # type: ignore[union-attr]
        for value in action.arguments.values()
        if isinstance(value, str)
    }


@pytest.mark.parametrize(
    ("domain", "table"),
    [("library", "patrons"), ("airline", "users"), ("telecom", "customers")],
)
def test_the_people_table_is_the_domains_own(domain: str, table: str) -> None:
    assert people_table(get_domain(domain)) == table


def test_amount_rules_come_from_the_registration() -> None:
    assert payment_rules(get_domain("library")) == list(library_policy.PAYMENT_RULES)
    assert payment_rules(get_domain("airline")) == list(airline_policy.PAYMENT_RULES)
    assert payment_rules(get_domain("retail")) == []


def test_a_domain_that_declares_no_people_is_grounded_on_every_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    domain = get_domain("library")
    anonymous = dataclasses.replace(domain_plugin("library"), people=())
    monkeypatch.setattr(prompt_context, "domain_plugin", lambda name: anonymous)
    # A blueprint id of its own: acted_on's cache holds the declared people's fits.
    blueprint = _blueprint(9, 0, task_family="loan_renewal", expected_outcome="fulfill")
    assert people_table(domain) is None
    assert acted_on(domain, blueprint, 0) == ()
    entities = entity_sample(domain, random.Random(0), people=1)
    assert {e["table"] for e in entities} == set(type(domain.blank_state().db).model_fields)


@pytest.mark.parametrize("index", range(4))
def test_a_refusal_is_grounded_on_a_loan_the_policy_refuses_for_the_focus(index: int) -> None:
    domain = get_domain("library")
    blueprint = _blueprint(
        1,
        index,
        task_family="loan_renewal",
        expected_outcome="refuse",
        policy_or_constraint_focus="overdue_no_renewal",
    )
    assert not domain_plugin("library").offers("generator")
    ids = fitting_ids(domain, blueprint, seed=index)
    assert ids == list(acted_on(domain, blueprint, index))
    db = domain.blank_state().db
    [patron] = [i for i in ids if i in db.patrons]
    loans = [i for i in ids if i in db.loans]
    assert loans and not set(ids) & _official_ids()
    for loan in loans:
        assert db.loans[loan].patron_id == patron and db.loans[loan].status == "active"
        assert datetime.date.fromisoformat(db.loans[loan].due_date) < TODAY
        reason = library_policy.violation(db, "renew_loan", {"loan_id": loan})
        assert reason is not None and reason.startswith("overdue_no_renewal")


def test_a_fulfilled_request_is_grounded_on_a_write_the_policy_allows() -> None:
    domain = get_domain("library")
    db = domain.blank_state().db
    for index in range(4):
        blueprint = _blueprint(1, index, task_family="loan_renewal", expected_outcome="fulfill")
        loans = [i for i in acted_on(domain, blueprint, index) if i in db.loans]
        assert loans
        for loan in loans:
            assert library_policy.violation(db, "renew_loan", {"loan_id": loan}) is None
            assert db.loans[loan].status == "active"


def test_an_inquiry_has_no_write_to_ground() -> None:
    domain = get_domain("library")
    blueprint = _blueprint(1, 0, task_family="account_inquiry", expected_outcome="fulfill")
    assert acted_on(domain, blueprint, 0) == ()


def test_the_catalog_search_is_called_on_words_of_the_shown_records() -> None:
    domain = get_domain("library")
    entities = entity_sample(domain, random.Random(0), people=2)
    found = lookups(domain, entities)
    assert found
    for item in found:
        assert item["call"].startswith('search_catalog({"query": ')
        [first, *_] = json.loads(item["result"])
        assert {"book_id", "title", "author", "available_by_branch"} <= set(first)
    # Words of one record (a title and its author) that find the same thing are shown once.
    assert len({item["result"] for item in found}) == len(found)


@pytest.mark.parametrize("index", range(3))
def test_a_queue_priority_refusal_shows_the_holds_waiting_for_the_title(index: int) -> None:
    domain = get_domain("library")
    db = domain.blank_state().db
    blueprint = _blueprint(
        2,
        index,
        task_family="loan_renewal",
        expected_outcome="refuse",
        policy_or_constraint_focus="hold_queue_priority",
    )
    gateway = Gateway(
        "test", GatewaySettings(model="openai/unused", api_base="http://127.0.0.1:9/v1")
    )
    prompt = LLMGenerator(gateway, "library").prompt(blueprint, seed=index)
    titles = {
        key: json.loads(text)
        for table, key, text in re.findall(r"^\[(\w+) (\w+)\] (\{.*\})$", prompt, re.MULTILINE)
        if table == "titles"
    }
    assert titles
    for book_id, title in titles.items():
        waiting = [h for h in db.holds.values() if h.book_id == book_id and h.status == "waiting"]
        assert title["holds_waiting"] == str(len(waiting))
    renewed = [db.loans[i].book_id for i in fitting_ids(domain, blueprint, index) if i in db.loans]
    assert renewed and all(int(titles[book]["holds_waiting"]) > 0 for book in renewed)
    assert "also shows holds_waiting" in prompt and "only from get_book_details" in prompt
