"""Fixtures of the reliability suites."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="module")
def api_url() -> Iterator[str]:
    """One Prefect test server for every campaign process of a module (not one per process)."""
    from prefect.settings import PREFECT_API_URL
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        url = PREFECT_API_URL.value()
        assert url, "the Prefect test harness set no API URL"
        yield url
