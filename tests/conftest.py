"""Shared fixtures (a loopback S3 server, a Prefect test server) and the order of the files."""

from __future__ import annotations

import os
from collections.abc import Iterator

import boto3
import pytest
from samples import free_port

# Offline: Prefect test servers' analytics only log failures and race flow runs for SQLite.
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The files marked ``heavy`` first, each file's tests kept in order.

    pytest-xdist hands test files to its workers in this order (``--no-loadscope-reorder``):
    a file of a minute handed out last would run on alone after the others are done.
    """
    items.sort(key=lambda item: item.get_closest_marker("heavy") is None)


@pytest.fixture(scope="session")
def s3_server() -> Iterator[str]:
    """moto's S3 server in server mode on a loopback port; yields its endpoint URL."""
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


@pytest.fixture(scope="session")
def prefect_server() -> Iterator[None]:
    """One Prefect test server for every test of this process that runs flows.

    A server's start (imports and migrations of a fresh database) costs some 15 s of CPU: the
    tests of a pytest-xdist worker share one. Tests that read runs back filter them by name.
    """
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


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
