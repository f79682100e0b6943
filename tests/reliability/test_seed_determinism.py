"""A campaign is a function of (config, seed): its id is a name and changes no random choice.

Two campaigns with the same config and ``campaign.seed`` under different ids, in one lake, must
write the same rows to every table once the id and the clocks are set aside. The flows' own
bodies run with each Prefect task as its plain function (as the write-boundary resume checks
do), so the check takes seconds. The slow variant runs each campaign in its own process with a
different ``PYTHONHASHSEED``, which also catches choices that follow set or hash order.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from plain_flows import plain_flows

from evosyn.config import load_config
from evosyn.records import TABLES
from evosyn.storage import Lake

CONFIG = Path("deployments/campaigns/airline-offline.yaml")
# Two rounds, so the Reflector's decision and a revised space are compared too.
OVERRIDES = ["campaign.rounds=2", "campaign.budget_per_round=24", "campaign.seed=7"]
# Columns that legitimately differ between two runs: the id itself, clocks and durations.
VARYING = {"campaign_id", "created_at", "started_at", "finished_at", "seconds", "latency_s"}
TESTS = Path(__file__).resolve().parents[1]
# A campaign in a fresh interpreter: ``python -c RUN ROOT ID``.
RUN = (
    "import sys; from pathlib import Path; "
    "from test_seed_determinism import run_campaign; "
    "run_campaign(Path(sys.argv[1]), sys.argv[2])"
)


def run_campaign(root: Path, campaign_id: str) -> None:
    """``campaign_flow``'s body, every flow and task it calls run as a plain function."""
    from evosyn.flows import campaign as campaign_module
    from evosyn.flows import round as round_module

    cfg = load_config(
        CONFIG, [*OVERRIDES, f"lake.root={root}", f"campaign.id={campaign_id}"], environ={}
    )
    with plain_flows(round_module, campaign_module):
        campaign_module.campaign_flow.fn(cfg, campaign_id)


def tables_of(lake: Lake, campaign_id: str) -> dict[str, list[str]]:
    """Every table's rows of a campaign as sorted JSON.

    The id is written as ``<id>`` wherever it appears (training ids and the stored config).
    """
    out: dict[str, list[str]] = {}
    for table, cls in TABLES.items():
        rows = (r.model_dump(mode="json", exclude=VARYING) for r in lake.read(cls, campaign_id))
        out[table] = sorted(
            json.dumps(r, sort_keys=True).replace(campaign_id, "<id>") for r in rows
        )
    return out


def test_two_campaign_ids_with_one_seed_write_identical_tables(tmp_path: Path) -> None:
    root = tmp_path / "lake"
    run_campaign(root, "twin-a")
    run_campaign(root, "twin-b")
    assert_same_tables(Lake(root))


@pytest.mark.slow
def test_two_processes_with_different_hash_seeds_write_identical_tables(tmp_path: Path) -> None:
    root = tmp_path / "lake"
    path = os.pathsep.join([str(TESTS), str(TESTS / "reliability")])
    for campaign_id, hash_seed in (("twin-a", "1"), ("twin-b", "2")):
        env = os.environ | {"PYTHONHASHSEED": hash_seed, "PYTHONPATH": path}
        subprocess.run(
            [sys.executable, "-c", RUN, str(root), campaign_id],
            env=env,
            cwd=TESTS.parent,
            check=True,
            timeout=300,
        )
    assert_same_tables(Lake(root))


def assert_same_tables(lake: Lake) -> None:
    """The campaigns ``twin-a`` and ``twin-b`` in ``lake`` wrote the same rows."""
    a, b = tables_of(lake, "twin-a"), tables_of(lake, "twin-b")
    assert a["reflections"] and a["evaluations"], "the campaign ran both rounds"
    differ = {
        table: (len(a[table]), len(b[table]), sorted(set(a[table]) ^ set(b[table]))[:1])
        for table in TABLES
        if a[table] != b[table]
    }
    assert not differ, f"tables differ between ids (rows a, rows b, first differing row): {differ}"
