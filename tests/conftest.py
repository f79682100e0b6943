"""Shared fixtures: a loopback S3 server."""

from __future__ import annotations

import os
from collections.abc import Iterator

import boto3
import pytest
from samples import free_port

# Offline: Prefect test servers' analytics only log failures and race flow runs for SQLite.
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")


@pytest.fixture(scope="session")
def s3_server() -> Iterator[str]:
    """moto's S3 server in server mode on a loopback port; yields its endpoint URL."""
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


@pytest.fixture
def s3_bucket(
    s3_server: str, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> str:
    """A fresh bucket on the loopback server, with dummy credentials; yields its name."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    name = (
        "lake-"
        + request.node.name.lower().replace("_", "-").replace("[", "-").replace("]", "")[:40]
    )
    boto3.client("s3", endpoint_url=s3_server).create_bucket(Bucket=name)
    return name
