"""Typed columns: fixed-shape nested fields are MAP, LIST and STRUCT columns; the rest JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from samples import sample_records

from evosyn.records import Verification
from evosyn.storage import Lake
from evosyn.storage.sql import query


def _types(lake: Lake, table: str) -> dict[str, str]:
    return {str(r[0]): str(r[1]) for r in query(lake, f"DESCRIBE {table}")[1]}


def test_fixed_shapes_are_typed_and_free_forms_json(tmp_path: Path) -> None:
    lake = Lake(tmp_path / "lake")
    for record in sample_records("c1", 1):
        lake.write([record], batch="b0")
    assert _types(lake, "verifications")["realized"] == "MAP(VARCHAR, VARCHAR)"
    assert _types(lake, "verifications")["reasons"] == "VARCHAR[]"
    assert _types(lake, "directions")["allowed"] == "MAP(VARCHAR, VARCHAR[])"
    assert _types(lake, "directions")["weights"] == "MAP(VARCHAR, MAP(VARCHAR, DOUBLE))"
    assert _types(lake, "spaces")["factors"].startswith('STRUCT("name" VARCHAR, ')
    assert _types(lake, "reflections")["reviews"].endswith("[]")
    assert _types(lake, "trajectories")["messages"] == "JSON"
    assert _types(lake, "tasks")["task"] == "JSON"
    assert _types(lake, "campaigns")["config"] == "JSON"
    # Natural SQL, no JSON functions: map lookup, list length, struct field.
    sql = (
        "SELECT len(f.factors), f.factors[1].name, v.realized['num_write'] "
        "FROM spaces f, verifications v"
    )
    assert query(lake, sql)[1] == [(6, "task_family", "1")]


def test_files_with_json_text_columns_are_retyped_on_upgrade(tmp_path: Path) -> None:
    lake = Lake(tmp_path / "lake")
    new = Verification(
        campaign_id="c1",
        round=1,
        task_id="t0",
        trajectory_id="tr0",
        passed=True,
        reward=1.0,
        reasons=["r"],
        realized={"task_family": "flight_booking"},
    )
    lake.write([new], batch="new")
    old = new.model_copy(update={"trajectory_id": "tr1", "realized": {"task_family": "refund"}})
    # The layout of an older writer: every nested field as JSON text.
    plain = old.model_dump(mode="json")
    row = {k: json.dumps(v) if isinstance(v, dict | list) else v for k, v in plain.items()}
    table = pa.Table.from_pylist([row]).set_column(
        list(row).index("round"), "round", pa.array([1], pa.int64())
    )
    pq.write_table(table, tmp_path / "lake/verifications/c1/1/old.parquet")
    (tmp_path / "lake/.catalog-digest").write_text("older-code:older-schemas", "utf-8")
    reopened = Lake(tmp_path / "lake", create=False)  # an upgraded EvoSyn opens the lake
    assert sorted(reopened.read(Verification, "c1"), key=lambda v: v.trajectory_id) == [new, old]
    sql = "SELECT trajectory_id, realized['task_family'] FROM verifications ORDER BY 1"
    assert query(reopened, sql)[1] == [("tr0", "flight_booking"), ("tr1", "refund")]
