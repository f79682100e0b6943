"""The labeller's parser, its prompt and batches, and the records it reads from a lake.

Parsing is tested on clean, noisy and invalid replies with no model; a batch that stays invalid
leaves its tasks unlabelled with the reason, over HTTP; the probe's inputs are read back from a
real lake, and spaces and decisions written before invented factors existed still read.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from openai_server import OpenAIServer, Reply
from tau2.data_model.tasks import (
    Action,
    EvaluationCriteria,
    StructuredUserInstructions,
    Task,
    UserScenario,
)

from evosyn.agents.gateway import Gateway, GatewaySettings
from evosyn.agents.labeller import (
    LabelCase,
    LLMLabeller,
    lake_inputs,
    official_tasks,
    parse_labels,
    task_text,
)
from evosyn.agents.llm_output import extract_json
from evosyn.records import (
    EvalResult,
    Factor,
    ReflectorDecision,
    SynthesisSpace,
    SynthTask,
    Verification,
)
from evosyn.storage import Lake
from evosyn.storage.schema import arrow_schema, to_table

FACTOR = Factor(
    name="passengers",
    values=["1", "2+"],
    definition="How many passengers the request is for.",
)
KEYS = ["task 1", "task 2"]


def labels(*values: Any) -> dict[str, Any]:
    return {"labels": [{"task": k, "value": v} for k, v in zip(KEYS, values, strict=True)]}


def test_a_clean_reply_gives_every_task_its_value_and_null_stays_null() -> None:
    assert parse_labels(labels("1", None), FACTOR, KEYS) == {"task 1": "1", "task 2": None}
    prose = f"Here you go:\n```json\n{json.dumps(labels(' 2+ ', '1'))}\n```\nDone."
    assert parse_labels(extract_json(prose), FACTOR, KEYS) == {"task 1": "2+", "task 2": "1"}


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (labels("1", "3"), "'3' is not a value of passengers"),
        ({"labels": [{"task": "task 1", "value": "1"}]}, "no label for task 2"),
        (
            {"labels": [{"task": "task 1", "value": "1"}, {"task": "task 1", "value": "2+"}]},
            "labelled twice",
        ),
        ({"labels": [{"task": "task 9", "value": "1"}]}, "'task 9' is not one of the tasks"),
        ({"labels": [{"task": "task 1", "value": 1}]}, "value"),
        ({"values": []}, "labels"),
    ],
)
def test_an_invalid_reply_is_named(data: dict[str, Any], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        parse_labels(data, FACTOR, KEYS)


def task(task_id: str, reason: str = "You want to cancel your trip.") -> Task:
    return Task(
        id=task_id,
        user_scenario=UserScenario(
            persona="You are curt.",
            instructions=StructuredUserInstructions(
                domain="airline",
                reason_for_call=reason,
                known_info="Your user id is mia_li_3668.",
                unknown_info="Your reservation id.",
                task_instructions="Ask for a refund.",
            ),
        ),
        evaluation_criteria=EvaluationCriteria(
            actions=[
                Action(
                    action_id="a0", name="get_user_details", arguments={"user_id": "mia_li_3668"}
                )
            ],
            communicate_info=["$120"],
        ),
    )


def test_a_task_is_read_as_the_customer_side_and_the_gold_calls() -> None:
    text = task_text(task("t1"))
    assert text.splitlines() == [
        "Reason for the call: You want to cancel your trip.",
        "The customer knows: Your user id is mia_li_3668.",
        "The customer does not know: Your reservation id.",
        "How the customer behaves: Ask for a refund.",
        "Persona: You are curt.",
        "Gold tool calls:",
        '  1. get_user_details({"user_id": "mia_li_3668"})',
        'The agent must tell the customer: ["$120"]',
    ]
    # No task id reaches the labeller: it could hint at the value.
    assert "t1" not in text


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with OpenAIServer() as srv:
        yield srv


def test_batches_that_stay_invalid_leave_their_tasks_unlabelled(server: OpenAIServer) -> None:
    gateway = Gateway(
        "labeller",
        GatewaySettings(model="openai/labeller", api_base=server.url, concurrency=1, cache=False),
    )
    labeller = LLMLabeller(gateway, batch=2)
    cases = [LabelCase(task_id=f"t{i}", text=task_text(task(f"t{i}"))) for i in range(3)]
    server.script(
        Reply.text(json.dumps(labels("2+", "1"))),
        Reply.text('{"labels": [{"task": "task 1", "value": "many"}]}'),
        Reply.text('{"labels": [{"task": "task 1", "value": "many"}]}'),
    )
    done = labeller.label(FACTOR, cases)
    assert done.values == {"t0": "2+", "t1": "1"}
    assert done.unlabelled["t2"].startswith("labeller output rejected: ")
    first = server.requests[0].body["messages"][0]["content"]
    assert "Definition: How many passengers the request is for." in first
    assert "## task 1\nReason for the call: You want to cancel your trip." in first
    assert "## task 3" not in first  # two tasks a call
    # The repair turn quoted the error.
    assert (
        "'many' is not a value of passengers" in server.requests[2].body["messages"][-1]["content"]
    )


def test_the_probe_inputs_are_read_from_the_campaign_lake(tmp_path: Path) -> None:
    lake = Lake(tmp_path / "lake")
    synth = SynthTask(
        campaign_id="c", round=1, task_id="s1", blueprint_id="b1", domain="airline", task=task("s1")
    )
    lake.write([synth], "tasks")

    def verification(task_id: str, round: int, passed: bool) -> Verification:
        return Verification(
            campaign_id="c",
            round=round,
            task_id=task_id,
            trajectory_id=f"{task_id}-{round}",
            passed=passed,
            reward=float(passed),
        )

    lake.write([verification("s1", 1, True), verification("s2", 1, False)], "v1")
    lake.write([verification("s3", 2, True)], "v2")
    official = next(iter(official_tasks("airline")))
    results = [
        EvalResult(
            campaign_id="c",
            round=1,
            training_id="t",
            task_id=task_id,
            split=split,
            success=False,
            reward=0.0,
        )
        for task_id, split in ((f"{official}#trial0", "diagnostic"), ("s1", "test"))
    ]
    lake.write(results, "evaluations")
    read = lake_inputs(str(tmp_path / "lake"), "airline")("c", 1)
    assert [e.task_id for e in read.evaluations] == [f"{official}#trial0"]
    assert [v.task_id for v in read.verified] == ["s1"]  # passed, and not from a later round
    assert read.tasks["s1"] == synth.task and official in read.tasks
    assert lake_inputs(str(tmp_path / "none"), "airline")("c", 1).evaluations == []


def test_spaces_and_decisions_written_before_invented_factors_still_read(tmp_path: Path) -> None:
    lake = Lake(tmp_path / "lake")
    space = SynthesisSpace(campaign_id="c", round=1, domain="airline", version=1, factors=[FACTOR])
    decision = ReflectorDecision(
        campaign_id="c", round=1, action="reallocate", next_space_version=1, dropped_factor=FACTOR
    )
    lake.write([space], "now")
    lake.write([decision], "now")
    # Files of the schema before: a factor without a definition, a decision without drops.
    for record, cls in ((space, SynthesisSpace), (decision, ReflectorDecision)):
        table = to_table([record.model_copy(update={"round": 0})], cls)
        old = _without(table, "definition").drop_columns(
            [c for c in ("dropped_factor",) if c in table.column_names]
        )
        folder = tmp_path / "lake" / cls.TABLE / "c" / "0"
        folder.mkdir(parents=True)
        pq.write_table(old, folder / "old.parquet")
    spaces = lake.read(SynthesisSpace, "c")
    assert [s.factors[0].definition for s in spaces] == ["", FACTOR.definition]
    decisions = lake.read(ReflectorDecision, "c")
    assert [d.dropped_factor for d in decisions] == [None, FACTOR]
    # The old files really lack the new fields.
    old_space = pq.read_schema(tmp_path / "lake" / "spaces" / "c" / "0" / "old.parquet")
    assert "definition" not in str(old_space.field("factors").type)
    assert "definition" in str(arrow_schema(SynthesisSpace).field("factors").type)
    old_decision = pq.read_schema(tmp_path / "lake" / "reflections" / "c" / "0" / "old.parquet")
    assert "dropped_factor" not in old_decision.names


def _without(table: pa.Table, field: str) -> pa.Table:
    """``table`` with ``field`` taken out of the factor structs of its ``factors`` column."""
    if "factors" not in table.column_names:
        return table
    rows = table.column("factors").to_pylist()
    stripped = [[{k: v for k, v in f.items() if k != field} for f in row] for row in rows]
    struct = table.schema.field("factors").type.value_type
    kept = pa.struct([f for f in struct if f.name != field])
    column = pa.array(stripped, type=pa.list_(kept))
    return table.set_column(table.column_names.index("factors"), "factors", column)
