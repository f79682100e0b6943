"""A refusal stores the write it refuses, and realizes that write's family."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from tau2.data_model.message import AssistantMessage, Message, ToolCall, ToolMessage, UserMessage

from evosyn.agents.generator.base import GeneratorRejection
from evosyn.environments import FunctionalSymbol, get_domain
from evosyn.environments.features import realized_features
from evosyn.environments.registry import domain_plugin
from evosyn.environments.trajectories import gold_trajectory
from evosyn.records import Blueprint, SynthTask
from evosyn.storage import Lake
from evosyn.storage.schema import to_table

#: The refusals whose request names a write the domain has a tool for, by domain: each
#: must store it. (Airline's insurance and membership changes, retail's request about
#: another customer's order and telecom's SIM unlock or out-of-scope hand-offs ask for no
#: write of the caller's own that a tool makes.)
REFUSING = {
    "airline": ("flight_booking", "flight_cancellation", "flight_change", "refund_or_compensation"),
    "retail": (
        "exchange_delivered_order",
        "order_cancellation",
        "order_item_modification",
        "order_logistics_modification",
        "return_delivered_order",
    ),
    "telecom": ("billing_issue", "line_management", "plan_change"),
}
SEEDS = range(4)


def _blueprint(family: str, seed: int) -> Blueprint:
    return Blueprint(
        campaign_id="c1",
        round=1,
        blueprint_id=f"bp-{family}-{seed}",
        direction_id="d0",
        space_version=1,
        selections={"task_family": [family], "expected_outcome": ["refuse"]},
        intent=f"{family} / refuse",
    )


def _refusals(domain: str) -> list[tuple[str, SynthTask]]:
    generator = domain_plugin(domain).generator()
    families = sorted(set(get_domain(domain).knowledge.family_by_write.values()))
    out = []
    for family in families:
        for seed in SEEDS:
            try:
                out.append((family, generator.generate(_blueprint(family, seed), seed)))
            except GeneratorRejection:
                continue
    return out


@pytest.mark.parametrize("domain", sorted(REFUSING))
def test_a_refusal_stores_the_write_it_refuses_and_realizes_its_family(domain: str) -> None:
    tau2_domain = get_domain(domain)
    stored: set[str] = set()
    for family, task in _refusals(domain):
        gold = {
            (a.name, json.dumps(a.arguments, sort_keys=True))
            for a in task.task.evaluation_criteria.actions
        }
        for write in task.refused:
            assert tau2_domain.symbol(write.name) == FunctionalSymbol.WRITE, write.name
            assert (write.name, json.dumps(write.arguments, sort_keys=True)) not in gold
        if not task.refused:
            continue
        stored.add(family)
        refused = [write.name for write in task.refused]
        messages = gold_trajectory(tau2_domain, task.task)
        # The gold makes no agent write: without the refused write, the family is lost.
        assert realized_features(tau2_domain, messages, refused).task_family == family
    assert stored >= set(REFUSING[domain])


def _turn(call_id: str, name: str, arguments: dict, result: str, requestor: str = "assistant"):
    call = ToolCall(id=call_id, name=name, arguments=arguments, requestor=requestor)
    cls = UserMessage if requestor == "user" else AssistantMessage
    return [
        cls(role=requestor, tool_calls=[call]),
        ToolMessage(id=call_id, role="tool", content=result, requestor=requestor),
    ]


def test_the_refused_write_names_the_family_and_ranks_with_the_writes_made() -> None:
    airline = get_domain("airline")
    looked_up: list[Message] = [
        UserMessage(role="user", content="Cancel reservation NO6JO3, please."),
        *_turn("1", "get_reservation_details", {"reservation_id": "NO6JO3"}, "{}"),
    ]
    assert realized_features(airline, looked_up).task_family == "loyalty_or_membership_service"
    refused = realized_features(airline, looked_up, ["cancel_reservation"])
    assert refused.task_family == "flight_cancellation"
    assert refused.num_write == 0  # the refused write is no call
    assert realized_features(airline, looked_up, ["no_such_tool"]).task_family == (
        "loyalty_or_membership_service"
    )
    # A telecom caller fixes their phone (a troubleshooting write) before a refuel is refused:
    # the refuel, ranked higher, names the request.
    telecom = get_domain("telecom")
    fixed = _turn("1", "toggle_airplane_mode", {}, "Airplane mode is now OFF.", "user")
    assert realized_features(telecom, fixed).task_family == "service_troubleshooting"
    assert realized_features(telecom, fixed, ["refuel_data"]).task_family == "plan_change"


def test_a_lake_written_before_the_field_reads_its_tasks_as_refusing_nothing(
    tmp_path: Path,
) -> None:
    task = next(t for f, t in _refusals("telecom") if f == "billing_issue" and t.refused)
    lake = Lake(tmp_path / "lake")
    lake.write([task], batch="new")
    assert lake.read(SynthTask, "c1") == [task]
    # The layout of an older writer: no ``refused`` column at all.
    old = task.model_copy(
        update={"task_id": "old-task", "task": task.task.model_copy(update={"id": "old-task"})}
    )
    table = to_table([old], SynthTask)
    table = table.drop_columns(["refused"])
    pq.write_table(table, tmp_path / "lake/tasks/c1/1/old.parquet")
    (tmp_path / "lake/.catalog-digest").write_text("older-code:older-schemas", "utf-8")
    reopened = {t.task_id: t for t in Lake(tmp_path / "lake", create=False).read(SynthTask, "c1")}
    assert reopened[task.task_id] == task
    assert reopened["old-task"].refused == []
    assert reopened["old-task"].task == old.task


def test_a_synthesized_refusal_is_stored_with_the_family_of_the_write_it_refused() -> None:
    from evosyn.agents.synthesis import synthesize
    from evosyn.agents.verifier.replay import ReplayVerifier

    plugin = domain_plugin("airline")
    blueprints = [_blueprint(family, seed) for family in REFUSING["airline"] for seed in SEEDS]
    batch = synthesize(
        blueprints, plugin.generator(), plugin.teacher(), ReplayVerifier("airline"), 0
    )
    refused = {t.task_id: t for t in batch.tasks if t.refused}
    checked = [v for v in batch.verifications if v.passed and v.task_id in refused]
    assert len(checked) >= len(REFUSING["airline"]), len(checked)
    for verdict in checked:
        requested = refused[verdict.task_id].requested["task_family"]
        assert [verdict.realized["task_family"]] == requested, verdict.task_id
