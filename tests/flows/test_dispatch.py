"""Training and evaluation dispatched to the `gpu` pool, and the checks before they run.

The end-to-end round, a real sft learner trained, served and evaluated on the `gpu` pool's
worker, is tests/agents/learner/test_sft_deployment.py.
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
from evosyn.records import Training
from evosyn.storage import Lake


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
