"""Fan-out inside a round: thread pool and Ray give the same stored results; round artifacts."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from prefect.task_runners import ThreadPoolTaskRunner

from evosyn.config import CampaignConfig, load_config
from evosyn.flows.artifacts import (
    artifact_key,
    campaign_key,
    campaign_markdown,
    locations_markdown,
    summary_rows,
)
from evosyn.flows.campaign import campaign_flow
from evosyn.flows.runners import ray_init_kwargs, task_runner_for
from evosyn.records import Rejection, RoundSummary, SynthTask, Verification
from evosyn.storage import Lake

pytestmark = pytest.mark.heavy

OFFLINE = Path("deployments/campaigns/airline-offline.yaml")


def _config(root: Path, runner: str, budget: int = 60) -> CampaignConfig:
    # 60 blueprints are two synthesis chunks: the round really fans out.
    return load_config(
        OFFLINE,
        [
            f"lake.root={root}",
            "campaign.rounds=1",
            f"campaign.budget_per_round={budget}",
            f"campaign.task_runner={runner}",
        ],
        environ={},
    )


def test_task_runner_follows_the_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ray_runners = pytest.importorskip("prefect_ray.task_runners")  # the `ray` extra
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert isinstance(task_runner_for(_config(tmp_path, "thread")), ThreadPoolTaskRunner)
    ray = task_runner_for(_config(tmp_path, "ray"))
    assert isinstance(ray, ray_runners.RayTaskRunner)
    assert ray.init_kwargs["include_dashboard"] is False
    assert ray.init_kwargs["num_cpus"] >= 1
    # On a cluster Ray keeps its own resources: asking for cores there is an error.
    assert "num_cpus" not in ray_init_kwargs({"RAY_ADDRESS": "ray://head:10001"})


def test_artifact_contents_name_the_round() -> None:
    summary = RoundSummary(
        campaign_id="My_Camp.1",
        round=2,
        space_version=3,
        budget=10,
        n_verified=7,
        status="succeeded",
    )
    assert artifact_key("My_Camp.1", 2, "summary") == "evosyn-my-camp-1-round-2-summary"
    [row] = summary_rows(summary)
    assert (row["round"], row["n_verified"], row["space_version"]) == (2, 7, 3)
    cfg = load_config(None, ["lake.root=s3://bucket/lake"], environ={})
    text = locations_markdown(cfg, summary)
    assert "s3://bucket/lake/verifications/My_Camp.1/2/" in text
    assert "evosyn report My_Camp.1 --out report/My_Camp.1 --lake s3://bucket/lake" in text
    assert campaign_key("My_Camp.1") == "evosyn-my-camp-1-campaign"
    scored = summary.model_copy(
        update={
            "fixed_success": 0.5,
            "fixed_n": 40,
            "decision": "added num_write | p=0.01",
            "n_rejected": 2,
            "n_failed": 3,
            "status": "failed",
        }
    )
    table = campaign_markdown("My_Camp.1", [summary, scored])
    rows = [line for line in table.splitlines() if line.startswith("| 2 ")]
    assert len(rows) == 2 and all(row.count("|") == 12 for row in rows)
    assert "0.50 [0.35, 0.65]" in rows[1] and "added num_write / p=0.01" in rows[1]
    assert "| 7 / 0 | 2 | 3 |" in rows[1]  # verified / planned, rejected, failed
    [row] = summary_rows(scored)
    assert (row["n_failed"], row["status"]) == (3, "failed")


def _stored(root: Path) -> dict[str, Any]:
    lake = Lake(root)
    [summary] = lake.read(RoundSummary, "same", 1)
    return {
        "tasks": sorted((t.task_id, t.blueprint_id) for t in lake.read(SynthTask, "same", 1)),
        "verdicts": sorted(
            (v.task_id, v.passed, tuple(v.reasons)) for v in lake.read(Verification, "same", 1)
        ),
        "rejections": sorted(
            (r.blueprint_id, r.stage, r.reason) for r in lake.read(Rejection, "same", 1)
        ),
        "counts": summary.model_dump(include={"n_blueprints", "n_tasks", "n_verified"}),
    }


async def _artifact_keys() -> set[str]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    async with get_client() as client:
        found = await client.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(like_="evosyn-same-round-1"))
        )
    return {a.key for a in found if a.key}


@pytest.mark.usefixtures("prefect_server")
def test_thread_pool_and_ray_store_identical_rounds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import evosyn.flows.campaign as campaign_module

    pytest.importorskip("prefect_ray")  # the `ray` extra
    used: list[str] = []

    def recording(cfg: CampaignConfig) -> Any:
        runner = task_runner_for(cfg)
        used.append(type(runner).__name__)
        return runner

    monkeypatch.setattr(campaign_module, "task_runner_for", recording)
    stored = {}
    for runner in ("thread", "ray"):
        campaign_flow(_config(tmp_path / runner, runner), "same")
        stored[runner] = _stored(tmp_path / runner)
    assert stored["thread"]["counts"]["n_blueprints"] == 60
    assert any(passed for _, passed, _ in stored["thread"]["verdicts"])
    assert used == ["ThreadPoolTaskRunner", "RayTaskRunner"]
    assert stored["ray"] == stored["thread"]
    keys = asyncio.run(_artifact_keys())
    assert {"evosyn-same-round-1-summary", "evosyn-same-round-1-data"} <= keys


def test_ray_without_prefect_ray_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    from evosyn.config import ConfigError

    monkeypatch.setitem(sys.modules, "prefect_ray.task_runners", None)  # import fails
    with pytest.raises(ConfigError, match=r"campaign\.task_runner.*prefect-ray"):
        task_runner_for(_config(tmp_path, "ray"))
