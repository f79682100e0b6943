"""The environment of a campaign run in its own process by the reliability suites."""

from __future__ import annotations

import os


def campaign_env(api_url: str, **extra: str) -> dict[str, str]:
    """This process's environment, less Prefect and EvoSyn settings, on ``api_url``'s server.

    One Prefect server for every campaign process of a module, not one ephemeral server per
    process (seconds each); ``extra`` adds or overrides variables.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "EVOSYN_"))}
    return env | {"PREFECT_API_URL": api_url, "PYTHONUNBUFFERED": "1", "NO_COLOR": "1"} | extra
