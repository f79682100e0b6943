"""A lake with one synthesized airline campaign, shared by the export tests."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from evosyn.cli import app
from evosyn.storage import Lake

CAMPAIGN = "exp"


@pytest.fixture(scope="package")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Lake:
    """``evosyn synth`` of 30 airline requests (programmatic roles, offline)."""
    root = tmp_path_factory.mktemp("lake")
    args = ["synth", "--n", "30", "--seed", "3", "--campaign-id", CAMPAIGN]
    result = CliRunner().invoke(app, [*args, "--set", f"lake.root={root}"])
    assert result.exit_code == 0, result.output
    return Lake(str(root), create=False)
