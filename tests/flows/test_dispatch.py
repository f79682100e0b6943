"""Training and evaluation dispatched to the `gpu` pool, and the checks before they run.

The end-to-end test (about 2.5 minutes on two cores) runs on a real Prefect server with a real
process worker per pool (the `ops` fixture of test_deployment.py): a campaign on `cpu` whose
round starts `evosyn-train` and `evosyn-evaluate`, checked through Prefect's own API to have
run on `gpu` as the round's children. The learner there is the simulated one on the path an
`sft` learner takes (`agents.learner.dispatch: deployments`).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evosyn.agents.learner.sft import MissingToolError
from evosyn.cli import app
from evosyn.config import CampaignConfig, ConfigError
from evosyn.flows.dispatch import TRAIN_DEPLOYMENT, DispatchError, await_worker, dispatched
from evosyn.records import EvalResult, RoundSummary, Training
from evosyn.storage import Lake
from tests.flows.test_deployment import OFFLINE, ops  # noqa: F401  (the fixture)


@pytest.fixture(scope="module")
def lake_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("dispatch") / "lake"
    result = CliRunner().invoke(
        app,
        ["synth", "--n", "8", "--seed", "3", "--campaign-id", "d", "--set", f"lake.root={root}"],
    )
    assert result.exit_code == 0, result.output
    return root


def _config(root: Path, **learner: Any) -> dict[str, Any]:
    learner.setdefault("recipe", {"device": "cpu"})
    return {"campaign": {"rounds": 2}, "lake": {"root": str(root)}, "agents": {"learner": learner}}


def test_sft_dispatches_by_default_and_the_simulated_learner_stays_inline() -> None:
    def of(**learner: Any) -> bool:
        return dispatched(CampaignConfig.model_validate({"agents": {"learner": learner}}))

    assert of(kind="sft") and of(kind="simulated", dispatch="deployments")
    assert not of() and not of(kind="icl") and not of(kind="sft", dispatch="inline")


@pytest.mark.usefixtures("prefect_server")
def test_an_sft_request_trains_anew_instead_of_reusing_a_simulated_training(
    lake_root: Path, tmp_path: Path
) -> None:
    from evosyn.flows.train import TrainingFailedError, train_flow

    simulated = train_flow("d", 1, config=_config(lake_root))
    assert simulated.learner == "simulated"
    sft = _config(lake_root, kind="sft", train_command=["false"], work_dir=str(tmp_path))
    # `false` exits 1: the sft request really ran, and failed, rather than returning the
    # stored simulated training as its own.
    with pytest.raises(TrainingFailedError, match=r"d-r1-train-retry1: exit status 1"):
        train_flow("d", 1, config=sft)
    stored = Lake(lake_root).read(Training, "d", 1)
    assert sorted((t.learner, t.status) for t in stored) == [
        ("sft", "failed"),
        ("simulated", "succeeded"),
    ]


@pytest.mark.usefixtures("prefect_server")
def test_train_and_evaluate_refuse_what_cannot_run_with_one_line(
    lake_root: Path, tmp_path: Path
) -> None:
    from evosyn.flows.evaluate import evaluate_flow
    from evosyn.flows.train import train_flow

    with pytest.raises(ConfigError, match=r"^round 3 is not a round of d: its rounds are 1 to 2"):
        train_flow("d", 3, config=_config(lake_root))
    with pytest.raises(ConfigError, match=r"^unknown campaign 'nope'"):
        evaluate_flow("nope", 1, config=_config(lake_root))
    missing = _config(
        lake_root, kind="sft", train_command=["llamafactory-cli-absent"], work_dir=str(tmp_path)
    )
    with pytest.raises(MissingToolError) as caught:
        train_flow("d", 1, config=missing)
    message = str(caught.value)
    assert "\n" not in message and "'llamafactory-cli-absent' not found" in message
    assert "make train-env" in message
    # Nothing ran, so nothing was recorded as a failed training.
    assert not [t for t in Lake(lake_root).read(Training, "d", 1) if "absent" in str(t.recipe)]


async def _deploy_train(worker: str | None) -> None:
    """evosyn-train on a process pool ``gpu``, with one heartbeat of ``worker`` if named."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate

    from evosyn.flows.train import train_flow

    async with get_client() as client:
        await client.create_work_pool(WorkPoolCreate(name="gpu", type="process"), overwrite=True)
        flow_id = await client.create_flow(train_flow)
        await client.create_deployment(flow_id=flow_id, name="evosyn-train", work_pool_name="gpu")
        if worker is not None:
            await client.send_worker_heartbeat("gpu", worker, heartbeat_interval_seconds=60)


@pytest.mark.usefixtures("prefect_server")
def test_dispatch_fails_in_one_line_without_a_deployment_or_a_live_worker() -> None:
    with pytest.raises(DispatchError, match=r"^deployment evosyn-train/evosyn-train not found"):
        await_worker(TRAIN_DEPLOYMENT, 1)

    asyncio.run(_deploy_train(worker=None))
    with pytest.raises(DispatchError) as caught:
        await_worker(TRAIN_DEPLOYMENT, 1.5)
    assert str(caught.value) == (
        "work pool 'gpu' has no online worker after 2s: start one with `make worker-gpu` "
        "(agents.learner.worker_wait_s sets the wait)"
    )


@pytest.mark.usefixtures("prefect_server")
def test_a_dispatched_run_that_does_not_finish_fails_the_round_in_one_line(
    lake_root: Path,
) -> None:
    from evosyn.flows.dispatch import train_on_pool

    # Online by its heartbeat, yet it never picks a run up (a worker that hangs).
    asyncio.run(_deploy_train(worker="silent"))
    cfg = CampaignConfig.model_validate(
        _config(lake_root, kind="simulated", dispatch="deployments", run_timeout_s=2)
    )
    with pytest.raises(DispatchError) as caught:
        train_on_pool(cfg, "d", 2)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{TRAIN_DEPLOYMENT} run ") and "on pool 'gpu' is still " in message
    assert "after 2s (agents.learner.run_timeout_s)" in message


async def _runs(api: str) -> dict[str, Any]:
    from prefect.client.orchestration import get_client

    async with get_client() as client:
        assert str(client.api_url).rstrip("/") == api
        runs = {r.name: r for r in await client.read_flow_runs()}
        parents = {
            name: await client.read_task_run(run.parent_task_run_id)
            for name, run in runs.items()
            if run.parent_task_run_id is not None
        }
    return {"runs": runs, "parents": parents}


@pytest.mark.timeout(420)
def test_a_campaign_trains_and_evaluates_on_the_gpu_pool(
    ops: dict[str, Any],  # noqa: F811
    tmp_path: Path,
) -> None:
    from prefect.deployments import run_deployment
    from prefect.settings import PREFECT_API_URL, temporary_settings

    lake_root = tmp_path / "lake"
    overrides = [
        f"lake.root={lake_root}",
        "campaign.rounds=1",
        "campaign.budget_per_round=8",
        # The path an sft learner takes, with the simulated learner's speed.
        "agents.learner.dispatch=deployments",
        "agents.learner.worker_wait_s=60",
    ]
    with temporary_settings(updates={PREFECT_API_URL: ops["api"]}):
        campaign = run_deployment(
            "evosyn-campaign-deployment/evosyn-campaign",
            parameters={"config_path": OFFLINE, "overrides": overrides, "campaign_id": "gpu"},
            timeout=360,
        )
        seen = asyncio.run(_runs(ops["api"]))
    assert campaign.state is not None
    logs = Path(ops["logs"])
    assert campaign.state.is_completed(), (
        f"{campaign.state}\n{(logs / 'worker-cpu.log').read_text()[-3000:]}\n"
        f"{(logs / 'worker-gpu.log').read_text()[-3000:]}"
    )
    runs, parents = seen["runs"], seen["parents"]
    assert runs["gpu"].work_pool_name == "cpu"
    assert runs["gpu-round-1"].work_pool_name is None  # a subflow of the campaign, on cpu
    for name in ("gpu-train-r1", "gpu-evaluate-r1"):
        run = runs[name]
        assert run.work_pool_name == "gpu", (name, run.work_pool_name)
        assert run.state is not None and run.state.is_completed(), (name, run.state)
        # A child of the round: its parent task run lives in the round's flow run.
        assert parents[name].flow_run_id == runs["gpu-round-1"].id

    lake = Lake(lake_root)
    [training] = lake.read(Training, "gpu", 1)
    results = lake.read(EvalResult, "gpu", 1)
    assert training.status == "succeeded" and results
    assert {r.training_id for r in results} == {training.training_id}
    [summary] = lake.read(RoundSummary, "gpu", 1)
    assert summary.status == "succeeded" and summary.diagnostic_n > 0
