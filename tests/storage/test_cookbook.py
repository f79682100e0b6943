"""docs/lake.md: every cookbook query runs on a real lake, and the column reference is current."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from samples import sample_records
from typer.testing import CliRunner

from evosyn.cli import app
from evosyn.records import Direction, LLMCall, ObjectiveType, Verification
from evosyn.storage import Lake
from evosyn.storage.schema import write_columns
from evosyn.storage.sql import query

DOC_PATH = Path(__file__).resolve().parents[2] / "docs" / "lake.md"
DOC = DOC_PATH.read_text("utf-8")
COOKBOOK = DOC.split("## Cookbook", 1)[1].split("\n## ", 1)[0]
QUERIES = re.findall(r"^### (.+?)$|```sql\n(.*?)```", COOKBOOK, re.M | re.S)


def _cookbook() -> list[tuple[str, str]]:
    out, heading = [], ""
    for title, sql in QUERIES:
        heading = title or heading
        if sql:
            out.append((heading, sql))
    return out


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Lake:
    """A synthesized campaign plus one of every record (an added factor, model calls)."""
    root = tmp_path_factory.mktemp("lake")
    args = ["synth", "--n", "12", "--seed", "5", "--campaign-id", "syn"]
    result = CliRunner().invoke(app, [*args, "--set", f"lake.root={root}"])
    assert result.exit_code == 0, result.output
    lake = Lake(root)
    for record in sample_records("demo", 1):
        lake.write([record], batch="sample")
    targeted = Direction(
        campaign_id="demo",
        round=2,
        direction_id="r2-targeted",
        space_version=1,
        objective=ObjectiveType.FAILURE_TARGETED,
        allowed={"task_family": ["flight_change", "flight_cancellation"]},
        budget=6,
    )
    lake.write([targeted], batch="design")
    failed = Verification(
        campaign_id="demo",
        round=2,
        task_id="t9",
        trajectory_id="t9-traj0",
        passed=False,
        reward=0.0,
        reasons=["db mismatch after cancel_reservation"],
    )
    lake.write([failed], batch="verify")
    calls = [
        LLMCall(
            campaign_id="syn",
            round=1,
            call_id=f"c{i}",
            attempt=0,
            role="teacher",
            model="openai/m",
            tokens_in=1000,
            tokens_out=100,
            cost=0.5,
            outcome="ok",
        )
        for i in range(3)
    ]
    lake.write(calls, batch="calls")
    return lake


def test_the_cookbook_has_about_ten_questions() -> None:
    assert len(_cookbook()) >= 10


@pytest.mark.parametrize(("heading", "sql"), _cookbook(), ids=lambda x: x[:30])
def test_every_cookbook_query_answers(lake: Lake, heading: str, sql: str) -> None:
    columns, rows = query(lake, sql)
    assert rows, f"{heading}: no rows"
    assert len(columns) >= 2


def _answer(lake: Lake, heading: str, index: int = 0) -> list[tuple[object, ...]]:
    sqls = [sql for h, sql in _cookbook() if h == heading]
    return query(lake, sqls[index])[1]


def test_budget_per_allowed_value_is_the_directions(lake: Lake) -> None:
    rows = _answer(lake, "Budget per factor value and round")
    assert rows == [
        (2, "task_family", "flight_cancellation", 6),
        (2, "task_family", "flight_change", 6),
    ]


def test_cost_per_verified_sample_divides_the_spend(lake: Lake) -> None:
    verified = query(lake, "SELECT count(*) FROM verifications WHERE passed AND campaign_id='syn'")
    n = verified[1][0][0]
    rows = {r[0]: r for r in _answer(lake, "Cost and tokens per verified sample")}
    assert rows["syn"] == ("syn", 1, n, 3300, round(1.5 / n, 6))


def test_failed_checks_are_counted_by_reason(lake: Lake) -> None:
    rows = _answer(lake, "Rejection reasons", 1)
    assert ("db mismatch after cancel_reservation", 1) in rows


def test_why_a_factor_was_added_names_it(lake: Lake) -> None:
    [row] = _answer(lake, "Why a factor was added")
    assert row[:4] == ("demo", 1, "num_write", "failure_driven")


def test_the_column_reference_is_generated_from_the_records() -> None:
    assert write_columns(DOC) == DOC, "run: python -m evosyn.storage.schema docs/lake.md"
