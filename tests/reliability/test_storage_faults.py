"""Storage faults: the S3 server goes away mid-round and comes back.

Writes retry and land exactly once; a reader polling throughout only ever sees whole batches.
"""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path

import boto3
import pytest
from moto.server import ThreadedMotoServer
from samples import free_port

from evosyn.records import Rejection
from evosyn.storage import Lake, LakeError

BATCHES = 24
ROWS = 7  # rows per batch: a reader seeing a count not divisible by it saw a partial batch


def _batch(i: int) -> list[Rejection]:
    return [
        Rejection(
            campaign_id="flaky",
            round=1,
            blueprint_id=f"b{i:03d}-{j}",
            stage="generate",
            reason="sample",
        )
        for j in range(ROWS)
    ]


def test_s3_outage_mid_round(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket="flaky")
    root = "s3://flaky/lake"
    writer_lake = Lake(root, s3_endpoint=endpoint, cache_dir=tmp_path / "w")
    reader_lake = Lake(root, s3_endpoint=endpoint, cache_dir=tmp_path / "r")

    written: list[int] = []
    errors: list[BaseException] = []
    seen: list[int] = []
    stop = threading.Event()

    def write() -> None:
        try:
            for i in range(BATCHES):
                writer_lake.write(_batch(i), batch=f"b{i:03d}")
                written.append(i)
                time.sleep(0.05)
        except BaseException as exc:  # surfaced by the assertion below
            errors.append(exc)

    def read() -> None:
        while not stop.is_set():
            # While the server is down a read is a clear LakeError; the next poll retries.
            with contextlib.suppress(LakeError):
                seen.append(len(reader_lake.read(Rejection, "flaky")))
            time.sleep(0.02)

    writer = threading.Thread(target=write)
    reader = threading.Thread(target=read)
    writer.start()
    reader.start()
    while len(written) < BATCHES // 3:
        time.sleep(0.01)
    server.stop()  # the outage: connections are refused mid-round
    outage_at = len(written)
    time.sleep(1.5)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()  # moto keeps its buckets in-process, like a restarted service with a disk
    writer.join(timeout=120)
    stop.set()
    reader.join(timeout=30)
    try:
        assert not errors, errors
        assert written == list(range(BATCHES))
        assert outage_at < BATCHES, "the outage did not happen mid-round"
        rows = reader_lake.read(Rejection, "flaky")
        ids = [r.blueprint_id for r in rows]
        assert len(ids) == len(set(ids)) == BATCHES * ROWS  # every batch landed exactly once
        assert seen and all(n % ROWS == 0 for n in seen)  # never a partial batch
    finally:
        server.stop()
