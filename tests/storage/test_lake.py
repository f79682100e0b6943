"""The lake: round trips on disk and S3, idempotent batches, atomic publish, many writers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import duckdb
import pytest
from samples import sample_records

from evosyn.records import TABLES, LakeRecord, SynthesisSpace, Verification
from evosyn.storage import Lake, LakeError
from evosyn.storage.sql import queries, query

pytestmark = pytest.mark.heavy


def _write_all(lake: Lake, records: list[LakeRecord]) -> None:
    for record in records:
        lake.write([record], batch="b0")


def _verifications(campaign_id: str, round: int, n: int) -> list[Verification]:
    return [
        Verification(
            campaign_id=campaign_id,
            round=round,
            task_id=f"t{i}",
            trajectory_id=f"tr{i}",
            passed=i % 2 == 0,
            reward=1.0 if i % 2 == 0 else 0.0,
            reasons=[] if i % 2 == 0 else [f"db mismatch {i}"],
        )
        for i in range(n)
    ]


def test_every_record_type_round_trips_on_local_disk(tmp_path: Path) -> None:
    lake = Lake(tmp_path / "lake")
    records = sample_records("c1", 1)
    assert {type(r).TABLE for r in records} == set(TABLES), "sample covers every table"
    _write_all(lake, records)
    for record in records:
        assert lake.read(type(record)) == [record]


def test_every_record_type_round_trips_on_s3(
    s3_server: str, s3_bucket: str, tmp_path: Path
) -> None:
    root = f"s3://{s3_bucket}/history"
    lake = Lake(root, s3_endpoint=s3_server, cache_dir=tmp_path / "cache")
    records = sample_records("c1", 2)
    _write_all(lake, records)
    # A second process (fresh cache) sees the same history over HTTP.
    other = Lake(root, s3_endpoint=s3_server, cache_dir=tmp_path / "cache2")
    for record in records:
        assert other.read(type(record), campaign_id="c1", round=2) == [record]
    _, rows = query(other, "SELECT campaign_id, round, passed FROM verifications")
    assert rows == [("c1", 2, True)]


def test_s3_lake_with_missing_bucket_is_a_clear_error(
    s3_server: str, s3_bucket: str, tmp_path: Path
) -> None:
    with pytest.raises(LakeError, match="no-such-bucket"):
        Lake("s3://no-such-bucket/x", s3_endpoint=s3_server, cache_dir=tmp_path)


def test_rewritten_batch_replaces_rather_than_duplicates(tmp_path: Path) -> None:
    lake = Lake(tmp_path / "lake")
    lake.write(_verifications("c1", 1, 5), batch="verify-0")
    lake.write(_verifications("c1", 1, 5), batch="verify-0")  # a retried task
    assert len(lake.read(Verification, "c1", 1)) == 5
    lake.write(_verifications("c1", 1, 3), batch="verify-0")  # the retry produced fewer rows
    assert [v.task_id for v in lake.read(Verification, "c1", 1)] == ["t0", "t1", "t2"]
    lake.write(_verifications("c1", 1, 2), batch="verify-1")  # another batch adds
    assert len(lake.read(Verification, "c1")) == 5


def test_s3_rewritten_batch_does_not_duplicate(
    s3_server: str, s3_bucket: str, tmp_path: Path
) -> None:
    lake = Lake(f"s3://{s3_bucket}", s3_endpoint=s3_server, cache_dir=tmp_path / "c")
    lake.write(_verifications("c1", 1, 4), batch="v")
    lake.write(_verifications("c1", 1, 4), batch="v")
    assert query(lake, "SELECT count(*) FROM verifications")[1] == [(4,)]


def test_batch_must_be_one_partition_without_repeated_keys(tmp_path: Path) -> None:
    lake = Lake(tmp_path / "lake")
    mixed = _verifications("c1", 1, 1) + _verifications("c1", 2, 1)
    with pytest.raises(LakeError, match="spans several partitions"):
        lake.write(mixed, batch="x")
    with pytest.raises(LakeError, match="repeats verifications key"):
        lake.write(_verifications("c1", 1, 2) + _verifications("c1", 1, 1), batch="x")
    with pytest.raises(LakeError, match="empty"):
        lake.write([], batch="x")
    with pytest.raises(LakeError, match="safe file name"):
        lake.write(_verifications("c1", 1, 1), batch="../escape")
    assert lake.read(Verification) == []


WRITER = textwrap.dedent(
    """
    import sys
    from evosyn.records import Verification
    from evosyn.storage import Lake
    root, campaign, round_, n, batch = sys.argv[1:6]
    rows = [
        Verification(campaign_id=campaign, round=int(round_), task_id=f"t{i}",
                     trajectory_id=f"{batch}-tr{i}", passed=True, reward=1.0, reasons=["x" * 200])
        for i in range(int(n))
    ]
    print("ready", flush=True)
    Lake(root).write(rows, batch=batch)
    print("written", flush=True)
    """
)


def _spawn_writer(
    root: Path, campaign: str, round: int, n: int, batch: str
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(root), campaign, str(round), str(n), batch],
        stdout=subprocess.PIPE,
        text=True,
    )


def test_writer_killed_mid_write_leaves_readers_the_old_state(tmp_path: Path) -> None:
    root = tmp_path / "lake"
    lake = Lake(root)
    lake.write(_verifications("c1", 1, 3), batch="verify")
    partition = root / "verifications" / "c1" / "1"
    killed_mid_write = False
    for _ in range(5):
        # A writer killed just after its publishing rename has replaced the batch: what a
        # later kill mid-write must leave is the state just before that writer started.
        before = [v.task_id for v in lake.read(Verification, "c1", 1)]
        proc = _spawn_writer(root, "c1", 1, 300_000, "verify")
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 60
        # The hidden temporary file exists only while the writer is writing.
        while time.monotonic() < deadline and not list(partition.glob(".*.tmp")):
            time.sleep(0.0005)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        # A temporary file left behind proves the kill landed before the publishing rename.
        if list(partition.glob(".*.tmp")):
            killed_mid_write = True
            break
    assert killed_mid_write, "the writer was never caught mid-write"
    assert [v.task_id for v in lake.read(Verification, "c1", 1)] == before
    assert query(lake, "SELECT count(*) FROM verifications")[1] == [(len(before),)]


def test_two_processes_writing_different_rounds_both_land(tmp_path: Path) -> None:
    root = tmp_path / "lake"
    Lake(root)
    writers = [_spawn_writer(root, "c1", r, 2_000, "verify") for r in (1, 2)]
    for proc in writers:
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0 and "written" in out
    rows = query(Lake(root), "SELECT round, count(*) FROM verifications GROUP BY 1 ORDER BY 1")[1]
    assert rows == [(1, 2_000), (2, 2_000)]


def test_two_processes_on_one_round_never_interleave_or_duplicate(tmp_path: Path) -> None:
    root = tmp_path / "lake"
    Lake(root)
    # Two workers on their own batches of one round, and two re-issuing the same batch.
    writers = [
        _spawn_writer(root, "c1", 1, 3_000, "worker-a"),
        _spawn_writer(root, "c1", 1, 3_000, "worker-b"),
        _spawn_writer(root, "c1", 1, 3_000, "shared"),
        _spawn_writer(root, "c1", 1, 3_000, "shared"),
    ]
    for proc in writers:
        out, _ = proc.communicate(timeout=180)
        assert proc.returncode == 0 and "written" in out
    sql = (
        "SELECT split_part(trajectory_id, '-tr', 1) AS batch, count(*), "
        "count(DISTINCT trajectory_id) FROM verifications GROUP BY 1 ORDER BY 1"
    )
    rows = query(Lake(root), sql)[1]
    assert rows == [
        ("shared", 3_000, 3_000),
        ("worker-a", 3_000, 3_000),
        ("worker-b", 3_000, 3_000),
    ]


def test_catalog_opens_in_plain_duckdb(tmp_path: Path) -> None:
    lake = Lake(tmp_path / "lake")
    lake.write(sample_records("c1", 0)[2:3], batch="v1")  # the seed space
    lake.write(_verifications("c1", 1, 2), batch="a")
    lake.write(_verifications("c1", 2, 4), batch="a")
    con = duckdb.connect(str(lake.catalog_path), read_only=True)
    # The views name files relative to the lake; DuckDB finds them through file_search_path.
    con.execute(f"SET file_search_path = '{lake.location}'")
    views = {
        r[0]
        for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()
    }
    assert views == set(TABLES)
    assert con.execute(
        "SELECT round, count(*) FROM verifications GROUP BY 1 ORDER BY 1"
    ).fetchall() == [(1, 2), (2, 4)]
    factors = con.execute("SELECT json_array_length(factors) FROM spaces").fetchall()
    assert factors == [(6,)]
    assert con.execute("SELECT count(*) FROM probes").fetchall() == [(0,)]
    con.close()


def test_reads_filter_by_campaign_and_round(tmp_path: Path) -> None:
    lake = Lake(tmp_path / "lake")
    for cid in ("a", "b"):
        for r in (1, 2):
            lake.write(_verifications(cid, r, r), batch="v")
    assert len(lake.read(Verification)) == 6
    assert len(lake.read(Verification, "a")) == 3
    assert len(lake.read(Verification, "b", 2)) == 2
    assert lake.read(SynthesisSpace, "a") == []


def test_a_campaign_scoped_query_sees_that_campaigns_rows_as_the_catalog_does(
    tmp_path: Path,
) -> None:
    lake = Lake(tmp_path / "lake")
    _write_all(lake, sample_records("a") + sample_records("b", 2))
    lake.write(_verifications("a", 2, 3), batch="v")
    sql = [f"SELECT * FROM {t} WHERE campaign_id = 'a' ORDER BY ALL" for t in TABLES]
    assert queries(lake, sql, campaign="a") == queries(lake, sql)
    # Only a's files are read: b's rows are not there, and an unknown campaign has none.
    [(_, rows)] = queries(lake, ["SELECT DISTINCT campaign_id FROM verifications"], "a")
    assert rows == [("a",)]
    empty = queries(lake, [f"SELECT count(*) FROM {t}" for t in TABLES], "no-such")
    assert {rows[0][0] for _, rows in empty} == {0}
    # ... nor can a name that is no safe id widen it.
    assert queries(lake, ["SELECT count(*) FROM verifications"], "*") == [
        (["count_star()"], [(0,)])
    ]


def test_files_written_before_a_field_existed_read_with_its_default(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    from evosyn.records import Direction, ObjectiveType
    from evosyn.storage.schema import to_table

    lake = Lake(tmp_path / "lake")
    new = Direction(
        campaign_id="c1",
        round=1,
        direction_id="r1-d00",
        space_version=1,
        objective=ObjectiveType.EXPLORATION,
        budget=3,
        weights={"task_family": {"flight_booking": 1.0}},
    )
    lake.write([new], batch="new")
    # An older writer's file: the same table without the ``weights`` column.
    old = new.model_copy(update={"direction_id": "r1-d01", "weights": {}})
    table = to_table([old], Direction).drop_columns(["weights"])
    pq.write_table(table, tmp_path / "lake/directions/c1/1/old.parquet")
    by_id = {d.direction_id: d for d in lake.read(Direction, "c1", 1)}
    assert by_id == {"r1-d00": new, "r1-d01": old}


def test_tasks_written_before_cues_existed_read_with_no_cues(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    from evosyn.records import SynthTask
    from evosyn.storage.schema import to_table

    lake = Lake(tmp_path / "lake")
    [new] = [r for r in sample_records("c1", 1) if isinstance(r, SynthTask)]
    assert new.cues
    old = new.model_copy(update={"cues": {}})
    # An older writer's file, alone in its campaign: the tasks table without ``cues``.
    (tmp_path / "lake/tasks/c0/1").mkdir(parents=True)
    table = to_table([old.model_copy(update={"campaign_id": "c0"})], SynthTask)
    pq.write_table(table.drop_columns(["cues"]), tmp_path / "lake/tasks/c0/1/old.parquet")
    assert [t.cues for t in lake.read(SynthTask, "c0")] == [{}]
    lake.write([new], batch="new")
    assert [(t.campaign_id, t.cues) for t in lake.read(SynthTask)] == [("c0", {}), ("c1", new.cues)]
    sql = "SELECT campaign_id, cardinality(cues) FROM tasks ORDER BY campaign_id"
    assert query(lake, sql)[1] == [("c0", None), ("c1", 1)]


def test_a_missing_nested_value_is_sql_null_not_the_text_null(tmp_path: Path) -> None:
    from evosyn.records import ReflectorDecision

    lake = Lake(tmp_path / "lake")
    decision = ReflectorDecision(
        campaign_id="c1", round=1, action="reallocate", next_space_version=1
    )
    lake.write([decision], batch="decision")
    sql = "SELECT new_factor IS NULL, new_factor->>'name' IS NULL FROM reflections"
    assert query(lake, sql)[1] == [(True, True)]
    assert lake.read(ReflectorDecision, "c1") == [decision]


def test_a_reader_never_makes_a_lake(tmp_path: Path) -> None:
    root = tmp_path / "nothing" / "lake"
    with pytest.raises(LakeError, match=f"^no lake at {root}$"):
        Lake(root, create=False)
    assert not (tmp_path / "nothing").exists()
    Lake(root)  # a writer makes it
    assert Lake(root, create=False).location == str(root)


def test_a_reader_never_makes_an_s3_lake(s3_server: str, s3_bucket: str, tmp_path: Path) -> None:
    import boto3

    root = f"s3://{s3_bucket}/history"
    with pytest.raises(LakeError, match=f"^no lake at {root}$"):
        Lake(root, s3_endpoint=s3_server, cache_dir=tmp_path / "c", create=False)
    assert "Contents" not in boto3.client("s3", endpoint_url=s3_server).list_objects_v2(
        Bucket=s3_bucket
    )
    Lake(root, s3_endpoint=s3_server, cache_dir=tmp_path / "c")
    assert (
        Lake(root, s3_endpoint=s3_server, cache_dir=tmp_path / "d", create=False).location == root
    )


def test_catalog_is_rebuilt_only_when_the_schemas_change(tmp_path: Path) -> None:
    root = tmp_path / "lake"
    Lake(root)
    marker, catalog = root / ".catalog-digest", root / "catalog.duckdb"
    code, digest = marker.read_text("utf-8").split(":")
    built = catalog.stat().st_mtime_ns
    marker.write_text(f"older-code:{digest}", "utf-8")  # edited sources, same schemas
    Lake(root, create=False)
    assert catalog.stat().st_mtime_ns == built
    assert marker.read_text("utf-8") == f"{code}:{digest}"
    marker.write_text("older-code:older-schemas", "utf-8")
    Lake(root, create=False)
    assert catalog.stat().st_mtime_ns != built
    assert marker.read_text("utf-8") == f"{code}:{digest}"


def test_directions_written_before_target_existed_read_with_no_target(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    from evosyn.records import Direction, ObjectiveType
    from evosyn.storage.schema import to_table

    lake = Lake(tmp_path / "lake")
    new = Direction(
        campaign_id="c1",
        round=1,
        direction_id="r1-d00",
        space_version=1,
        objective=ObjectiveType.FAILURE_TARGETED,
        budget=3,
        target="multi-step flight changes",
    )
    lake.write([new], batch="new")
    # An older writer's file: the directions table without ``target``.
    old = new.model_copy(update={"direction_id": "r1-d01", "target": ""})
    table = to_table([old], Direction).drop_columns(["target"])
    pq.write_table(table, tmp_path / "lake/directions/c1/1/old.parquet")
    by_id = {d.direction_id: d for d in lake.read(Direction, "c1", 1)}
    assert by_id == {"r1-d00": new, "r1-d01": old}
    # SQL reads the older file's missing column as NULL (docs/lake.md says so).
    sql = "SELECT direction_id, target FROM directions ORDER BY direction_id"
    assert query(lake, sql)[1] == [("r1-d00", "multi-step flight changes"), ("r1-d01", None)]
