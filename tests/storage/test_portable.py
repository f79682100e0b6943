"""A portable lake: no absolute path stored, a copy reads itself, pandas and pyarrow read it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import duckdb
import pytest
from samples import sample_records

from evosyn.records import TABLES, Verification
from evosyn.storage import Lake
from evosyn.storage.sql import query


def _verifications(campaign_id: str, round: int, n: int) -> list[Verification]:
    return [
        Verification(
            campaign_id=campaign_id,
            round=round,
            task_id=f"t{i}",
            trajectory_id=f"tr{i}",
            passed=i % 2 == 0,
            reward=1.0 if i % 2 == 0 else 0.0,
        )
        for i in range(n)
    ]


def _lake(root: Path) -> Lake:
    lake = Lake(root)
    for record in sample_records("c1", 1):
        lake.write([record], batch="b0")
    lake.write(_verifications("c2", 2, 4), batch="v")
    return lake


def test_no_file_of_the_lake_holds_its_absolute_path(tmp_path: Path) -> None:
    root = tmp_path / "a-lake-folder-with-a-unique-name"
    _lake(root)
    needle = str(root).encode()
    holding = [p for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]
    assert holding == []


def test_a_copied_lake_reads_itself_not_the_original(tmp_path: Path) -> None:
    original = tmp_path / "original"
    _lake(original)
    copy = tmp_path / "copy"
    shutil.copytree(original, copy)
    # The original changes after the copy; a copy that read it would see 3 rows more.
    Lake(original).write(_verifications("c3", 1, 3), batch="later")
    sql = "SELECT campaign_id, count(*) FROM verifications GROUP BY 1 ORDER BY 1"
    assert query(Lake(copy, create=False), sql)[1] == [("c1", 1), ("c2", 4)]
    assert query(Lake(original, create=False), sql)[1] == [("c1", 1), ("c2", 4), ("c3", 3)]
    # Plain DuckDB, as docs/lake.md shows it, without EvoSyn opening the copy first.
    shutil.rmtree(original)
    con = duckdb.connect(str(copy / "catalog.duckdb"), read_only=True)
    con.execute(f"SET file_search_path = '{copy}'")
    assert con.sql(sql).fetchall() == [("c1", 1), ("c2", 4)]
    con.close()


def test_plain_duckdb_run_inside_the_lake_folder_needs_no_setting(tmp_path: Path) -> None:
    root = tmp_path / "lake"
    _lake(root)
    here = Path.cwd()
    os.chdir(root)
    try:
        con = duckdb.connect("catalog.duckdb", read_only=True)
        assert con.sql("SELECT count(*) FROM verifications").fetchall() == [(5,)]
        con.close()
    finally:
        os.chdir(here)


@pytest.mark.parametrize("table", sorted(TABLES))
def test_pandas_reads_every_table_folder_directly(tmp_path: Path, table: str) -> None:
    import pandas as pd

    lake = _lake(tmp_path / "lake")
    frame = pd.read_parquet(tmp_path / "lake" / table)
    expected = query(lake, f"SELECT count(*) FROM {table}")[1][0][0]
    assert len(frame) == expected
    assert {"campaign_id", "round"} <= set(frame.columns)


def test_pyarrow_dataset_reads_a_table_with_its_own_types(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.dataset as ds

    _lake(tmp_path / "lake")
    table = ds.dataset(tmp_path / "lake" / "verifications", format="parquet").to_table()
    assert table.schema.field("campaign_id").type == pa.string()
    assert table.schema.field("round").type == pa.int64()
    rows = sorted(zip(table["campaign_id"].to_pylist(), table["round"].to_pylist(), strict=True))
    assert rows == [("c1", 1), ("c2", 2), ("c2", 2), ("c2", 2), ("c2", 2)]


def _legacy(root: Path, lake: Lake) -> None:
    """Move every file of ``lake`` back to the old Hive-style layout."""
    for path in sorted(root.rglob("*.parquet")):
        table, campaign, round_, name = path.relative_to(root).parts
        old = root / table / f"campaign_id={campaign}" / f"round={round_}" / name
        old.parent.mkdir(parents=True, exist_ok=True)
        path.rename(old)
        path.parent.rmdir()
        if not any(path.parent.parent.iterdir()):
            path.parent.parent.rmdir()
    (root / ".catalog-digest").unlink()


def test_a_lake_in_the_old_hive_layout_moves_to_the_new_one_on_open(tmp_path: Path) -> None:
    root = tmp_path / "lake"
    lake = _lake(root)
    before = {cls: lake.read(cls) for cls in TABLES.values()}
    _legacy(root, lake)
    assert list(root.glob("*/campaign_id=*"))
    reopened = Lake(root, create=False)
    assert not list(root.glob("*/campaign_id=*"))
    assert {cls: reopened.read(cls) for cls in TABLES.values()} == before


def test_an_s3_lake_in_the_old_layout_moves_on_open(
    s3_server: str, s3_bucket: str, tmp_path: Path
) -> None:
    import boto3

    url = f"s3://{s3_bucket}/old"
    lake = Lake(url, s3_endpoint=s3_server, cache_dir=tmp_path / "c1")
    lake.write(_verifications("c2", 2, 4), batch="v")
    client = boto3.client("s3", endpoint_url=s3_server)
    for obj in client.list_objects_v2(Bucket=s3_bucket, Prefix="old/")["Contents"]:
        table, campaign, round_, name = obj["Key"].split("/")[1:]
        old = f"old/{table}/campaign_id={campaign}/round={round_}/{name}"
        client.copy_object(Bucket=s3_bucket, Key=old, CopySource=f"{s3_bucket}/{obj['Key']}")
        client.delete_object(Bucket=s3_bucket, Key=obj["Key"])
    fresh = Lake(url, s3_endpoint=s3_server, cache_dir=tmp_path / "c2", create=False)
    keys = [o["Key"] for o in client.list_objects_v2(Bucket=s3_bucket)["Contents"]]
    assert not [k for k in keys if "campaign_id=" in k]
    assert "old/verifications/c2/2/v.parquet" in keys
    assert fresh.read(Verification, "c2", 2) == _verifications("c2", 2, 4)
