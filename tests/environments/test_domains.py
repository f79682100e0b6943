"""The domain contract on τ²-bench airline, retail and telecom."""

from __future__ import annotations

import json

import pytest
from tau2.data_model.message import ToolCall

from evosyn.environments import (
    DIAGNOSTIC_SPLIT,
    TEST_SPLIT,
    Domain,
    FunctionalSymbol,
    get_domain,
    list_domains,
)
from evosyn.environments.trajectories import dump_message, gold_trajectory, parse_message

#: Base-split sizes of the paper's domains (any other: all its tasks).
EXPECTED_BASE = {"airline": 50, "retail": 114, "telecom": 114}


@pytest.mark.parametrize("name", list_domains())
def test_contract_and_splits(name: str) -> None:
    domain = get_domain(name)
    assert isinstance(domain, Domain)
    assert domain.name == name
    assert get_domain(name) is domain
    assert len(domain.policy()) > 200
    splits = domain.splits()
    assert len(domain.tasks("base")) == EXPECTED_BASE.get(name, len(domain.tasks()))
    diagnostic = {t.id for t in domain.diagnostic_tasks()}
    test = {t.id for t in domain.test_tasks()}
    assert diagnostic == set(splits[DIAGNOSTIC_SPLIT]) and test == set(splits[TEST_SPLIT])
    assert diagnostic and test and not diagnostic & test
    with pytest.raises(ValueError, match="unknown split"):
        domain.tasks("nope")
    for schema in domain.tool_schemas():
        assert schema["type"] == "function"
        assert {"name", "description", "parameters"} <= set(schema["function"])


def test_functional_symbols() -> None:
    airline = get_domain("airline")
    assert airline.symbol("get_user_details") == FunctionalSymbol.READ
    assert airline.symbol("book_reservation") == FunctionalSymbol.WRITE
    assert airline.symbol("calculate") == FunctionalSymbol.COMPUTE
    assert airline.symbol("transfer_to_human_agents") == FunctionalSymbol.TRANSFER
    telecom = get_domain("telecom")
    assert telecom.symbol("toggle_airplane_mode", "user") == FunctionalSymbol.WRITE
    assert telecom.symbol("check_status_bar", "user") == FunctionalSymbol.READ
    assert telecom.tool_spec("toggle_airplane_mode") is None
    assert {s.requestor for s in telecom.tool_specs()} == {"assistant", "user"}
    with pytest.raises(KeyError):
        airline.symbol("teleport")


def test_states_are_independent() -> None:
    retail = get_domain("retail")
    task, cancel = next(
        (t, a)
        for t in retail.tasks("base")
        for a in t.evaluation_criteria.actions or []
        if a.name == "cancel_pending_order"
    )
    first, second = retail.initial_state(task), retail.initial_state(task)
    call = ToolCall(id="c", name=cancel.name, arguments=cancel.arguments)
    assert not retail.execute(first, call).error
    # The same cancellation fails on the already-cancelled order, succeeds on a fresh state.
    assert retail.execute(first, call).error
    assert not retail.execute(second, call).error
    assert not first.same_db(retail.initial_state(task))
    assert first.same_db(second)


def test_telecom_initialization_actions_shape_the_phone() -> None:
    telecom = get_domain("telecom")
    task = next(t for t in telecom.tasks("base") if "airplane_mode_on" in t.id)
    state = telecom.initial_state(task)
    status = state.execute(
        ToolCall(id="s", name="check_status_bar", arguments={}, requestor="user")
    )
    assert "Airplane" in status.content
    plain = telecom.initial_state().execute(
        ToolCall(id="s", name="check_status_bar", arguments={}, requestor="user")
    )
    assert "Airplane" not in plain.content


def test_seed_space() -> None:
    space = get_domain("retail").seed_space("camp-1")
    assert space.domain == "retail" and space.round == 0
    assert "order_cancellation" in space.factor("task_family").values
    families = set(space.factor("task_family").values)
    knowledge = get_domain("retail").knowledge
    assert set(knowledge.family_by_write.values()) <= families
    assert knowledge.default_family in families


@pytest.mark.parametrize("name", list_domains())
def test_family_mappings_use_seed_values_and_real_write_tools(name: str) -> None:
    domain = get_domain(name)
    families = set(domain.seed_space("c").factor("task_family").values)
    knowledge = domain.knowledge
    assert set(knowledge.family_by_write.values()) | {knowledge.default_family} <= families
    writes = {s.name for s in domain.tool_specs() if s.symbol == FunctionalSymbol.WRITE}
    assert set(knowledge.family_by_write) <= writes
    assert set(knowledge.family_priority) == set(knowledge.family_by_write.values())


def test_messages_round_trip_through_json() -> None:
    domain = get_domain("telecom")
    messages = gold_trajectory(domain, domain.tasks("base")[0])
    again = [parse_message(json.loads(json.dumps(dump_message(m)))) for m in messages]
    assert again == messages
    with pytest.raises(ValueError, match="unknown message role"):
        parse_message({"role": "robot"})
