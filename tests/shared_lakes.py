"""Lakes that several test files read and none writes, built once per test run.

Under pytest-xdist every worker of the run finds the lake in the run's shared temporary folder
(the first to ask builds it, under a file lock, while the others wait); without xdist it is
built once per session.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from filelock import FileLock

#: `make run`'s campaign: docs/report.md's default-campaign section quotes its report.
DEFAULT = Path(__file__).resolve().parents[1] / "deployments" / "campaigns" / "airline-offline.yaml"


def run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The test run's temporary folder, one for all its xdist workers."""
    base = tmp_path_factory.getbasetemp()
    # Each xdist worker has its own base folder inside the run's one.
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def _build_default_campaign(root: Path) -> None:
    from typer.testing import CliRunner

    from evosyn.cli import app
    from evosyn.config import load_config
    from evosyn.flows.campaign import campaign_flow

    campaign_flow(load_config(DEFAULT, [f"lake.root={root}"]), "demo")
    args = ["synth", "--domain", "airline", "--n", "60", "--campaign-id", "s1"]
    synth = CliRunner().invoke(app, [*args, "--lake", str(root)])
    assert synth.exit_code == 0, synth.output


def default_campaign_lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A lake with docs/report.md's default-campaign commands run in it, read-only to its users.

    `make run`'s campaign (deployments/campaigns/airline-offline.yaml: three rounds of 60
    blueprints) as `demo`, and a static synthesis of 60 tasks as `s1`. Its callers hold the
    ``prefect_server`` fixture: the campaign runs against it.
    """
    shared = run_folder(tmp_path_factory)
    root = shared / "default-campaign-lake"
    done = shared / "default-campaign-lake.done"
    with FileLock(str(shared / "default-campaign-lake.lock")):
        if not done.exists():
            shutil.rmtree(root, ignore_errors=True)  # a build that failed part-way
            _build_default_campaign(root)
            done.touch()
    return root
