"""Training and evaluation dispatched to the `gpu` pool, and the checks before they run.

The end-to-end round, a real sft learner trained, served and evaluated on the `gpu` pool's
worker, is tests/agents/learner/test_sft_deployment.py.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
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

pytestmark = pytest.mark.heavy

REPO = Path(__file__).resolve().parents[2]


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
    if learner.get("kind") == "sft":
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


async def _deploy_train(worker: str | None, runnable: bool = False) -> None:
    """evosyn-train on a process pool ``gpu``, with one heartbeat of ``worker`` if named.

    ``runnable``: a process worker can run it (from this checkout).
    """
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate

    from evosyn.flows.train import train_flow

    async with get_client() as client:
        await client.create_work_pool(WorkPoolCreate(name="gpu", type="process"), overwrite=True)
        flow_id = await client.create_flow(train_flow)
        where: dict[str, Any] = {}
        if runnable:
            step = {"directory": str(REPO)}
            where = {
                "entrypoint": "flows/train.py:train_flow",
                "pull_steps": [{"prefect.deployments.steps.set_working_directory": step}],
            }
        await client.create_deployment(
            flow_id=flow_id, name="evosyn-train", work_pool_name="gpu", **where
        )
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
def test_worker_wait_s_is_described_as_both_waits_it_bounds() -> None:
    from evosyn.config import LearnerSection

    # Dispatch waits this long for an online worker (await_worker) and again for one to pick
    # up the run (await_claim): the setting's text and the reference say both.
    text = LearnerSection.model_fields["worker_wait_s"].description
    assert text is not None and "online worker" in text and "pick up the dispatched run" in text
    reference = (REPO / "docs" / "configuration.md").read_text("utf-8")
    assert f"| `agents.learner.worker_wait_s` | `300.0` | {text} |" in reference


def test_a_worker_whose_heartbeats_stopped_is_not_taken_for_live() -> None:
    from prefect.client.orchestration import get_client

    asyncio.run(_deploy_train(worker=None))
    with get_client(sync_client=True) as client:
        client.send_worker_heartbeat("gpu", "stopped", heartbeat_interval_seconds=1)
    time.sleep(2.5)  # two intervals and more: Prefect may still show it online
    with pytest.raises(DispatchError, match=r"^work pool 'gpu' has no online worker after 2s"):
        await_worker(TRAIN_DEPLOYMENT, 1.5)


def _worker(pool: str) -> subprocess.Popen[bytes]:
    """A real process worker of ``pool`` on the test server, polling every second."""
    from prefect.settings import PREFECT_API_URL

    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env |= {"PREFECT_API_URL": str(PREFECT_API_URL.value()), "PREFECT_WORKER_QUERY_SECONDS": "1"}
    prefect = Path(sys.executable).with_name("prefect")
    return subprocess.Popen(
        [str(prefect), "worker", "start", "--pool", pool, "--type", "process"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


@pytest.mark.usefixtures("prefect_server")
def test_a_run_no_worker_picks_up_fails_fast_and_a_returning_worker_takes_the_next(
    lake_root: Path,
) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName
    from prefect.client.schemas.objects import StateType

    from evosyn.flows.dispatch import train_on_pool

    # A worker killed a moment ago: Prefect shows it online, its last heartbeat is fresh.
    asyncio.run(_deploy_train(worker="killed", runnable=True))
    learner = {"kind": "simulated", "dispatch": "deployments", "worker_wait_s": 1}
    cfg = CampaignConfig.model_validate(_config(lake_root, **learner))
    started = time.monotonic()
    with pytest.raises(DispatchError) as caught:
        train_on_pool(cfg, "d", 2)
    took = time.monotonic() - started
    message = str(caught.value)
    assert took < 10, f"failed after {took:.1f}s"
    assert "\n" not in message and message.startswith(
        "work pool 'gpu': no worker picked up evosyn-train/evosyn-train run "
    )
    assert "within 1s (agents.learner.worker_wait_s)" in message
    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(
            flow_run_filter=FlowRunFilter(name=FlowRunFilterName(any_=[message.split()[9]]))
        )
    assert [r.state_type for r in runs] == [StateType.CANCELLED]
    assert not Lake(lake_root).read(Training, "d", 2)

    # The worker returns: the resumed round's run is picked up (and outlives a 1 s wait).
    worker = _worker("gpu")
    try:
        timing_out = cfg.model_copy(deep=True)
        timing_out.agents.learner.worker_wait_s = 60
        timing_out.agents.learner.run_timeout_s = 1
        with pytest.raises(DispatchError) as caught:
            train_on_pool(timing_out, "d", 2)
        message = str(caught.value)
        assert "\n" not in message
        assert message.startswith(f"{TRAIN_DEPLOYMENT} run ")
        assert "on pool 'gpu' is still " in message
        assert "after 1s (agents.learner.run_timeout_s)" in message
        deadline = time.monotonic() + 120
        while not Lake(lake_root).read(Training, "d", 2) and time.monotonic() < deadline:
            time.sleep(0.5)
    finally:
        worker.terminate()
        try:
            worker.wait(30)
        except subprocess.TimeoutExpired:
            # Prefect's worker waits for the flow run it started to exit; on a loaded machine
            # that outlasts the wait, and the test has shown what it needed by now.
            worker.kill()
            worker.wait(30)
    # The run went on and stored its training, which a resume takes without dispatching.
    assert train_on_pool(cfg, "d", 2).learner == "simulated"
