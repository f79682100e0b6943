"""Fixtures of the reliability suites."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def api_url(prefect_server: None) -> str:
    """The URL of the session's Prefect test server, for the campaign processes a test starts."""
    from prefect.settings import PREFECT_API_URL

    url = PREFECT_API_URL.value()
    assert url, "the Prefect test harness set no API URL"
    return str(url)
