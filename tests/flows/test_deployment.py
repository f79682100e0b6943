"""Deployments: config parameters, and the whole path from prefect.yaml to rows in the lake.

The end-to-end test starts its own Prefect server on a loopback port (SQLite in a temporary
PREFECT_HOME), creates the pools, deploys from deployments/prefect.yaml, starts a process worker
per pool and triggers the campaign and training deployments through the API.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from samples import free_port

from evosyn.config import ConfigError
from evosyn.flows.deployment import deployment_config
from evosyn.records import RoundSummary, Training, Verification
from evosyn.storage import Lake

pytestmark = pytest.mark.heavy

REPO = Path(__file__).resolve().parents[2]
OFFLINE = "deployments/campaigns/airline-offline.yaml"
PREFECT = str(Path(sys.executable).with_name("prefect"))


def test_deployment_config_reads_a_path_or_inline_data_with_overrides(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(REPO)
    # A worker's EVOSYN_HOME is where it runs from, not a config key.
    monkeypatch.setenv("EVOSYN_HOME", str(REPO))
    cfg = deployment_config(OFFLINE, None, ["campaign.rounds=1"], "c1")
    assert (cfg.campaign.name, cfg.campaign.rounds, cfg.campaign.id) == ("airline-offline", 1, "c1")
    inline = deployment_config(None, {"campaign": {"name": "x", "budget_per_round": 7}}, None)
    assert (inline.campaign.name, inline.campaign.budget_per_round) == ("x", 7)
    with pytest.raises(ConfigError, match=r"campaign\.rounds"):
        deployment_config(OFFLINE, None, ["campaign.rounds=0"])
    # As the UI's form sends them: the default path stays beside a pasted config, which wins;
    # a cleared path is an empty string, which means none.
    pasted = {"campaign": {"name": "pasted", "rounds": 2}}
    assert deployment_config(OFFLINE, pasted, None).campaign.name == "pasted"
    assert deployment_config("", pasted, None).campaign.name == "pasted"
    assert deployment_config("", None, None).campaign.name == "campaign"  # the defaults
    assert deployment_config(OFFLINE, {}, None).campaign.name == "airline-offline"
    with pytest.raises(ConfigError, match=r"^config error: config_path 'deployments' is a folder"):
        deployment_config("deployments", None, None)
    with pytest.raises(ConfigError, match=r"^config error: unknown key 'campaign\.roundz'$"):
        deployment_config(OFFLINE, None, ["campaign.roundz=2"])
    # A seed per run, unless the overrides pin one.
    assert deployment_config(OFFLINE, None, None, seed=202601020200).campaign.seed == 202601020200
    pinned = deployment_config(OFFLINE, None, ["campaign.seed=7"], seed=202601020200)
    assert pinned.campaign.seed == 7


def test_a_scheduled_seed_is_the_scheduled_minute() -> None:
    from datetime import UTC, datetime, timedelta, timezone

    from evosyn.flows.deployment import schedule_seed

    two = datetime(2026, 1, 2, 2, 0, tzinfo=UTC)
    assert schedule_seed(two) == 202601020200
    assert schedule_seed(two.astimezone(timezone(timedelta(hours=5)))) == 202601020200
    assert schedule_seed(two + timedelta(days=1)) != schedule_seed(two)


@pytest.mark.usefixtures("prefect_server")
def test_a_run_without_campaign_id_gets_one_from_its_scheduled_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from prefect.client.orchestration import get_client

    from evosyn.flows.deployment import campaign_deployment, schedule_seed
    from evosyn.records import Campaign

    monkeypatch.chdir(REPO)
    overrides = [
        f"lake.root={tmp_path / 'lake'}",
        "campaign.name=nightly",
        "campaign.rounds=1",
        "campaign.budget_per_round=6",
    ]
    state = campaign_deployment(
        config_path=OFFLINE, overrides=overrides, seed_per_run=True, return_state=True
    )
    assert state.is_completed()

    async def read_run() -> Any:
        async with get_client() as client:
            return await client.read_flow_run(state.state_details.flow_run_id)

    run = asyncio.run(read_run())
    assert re.fullmatch(r"nightly-\d{8}-\d{6}", run.name), run.name
    # The run's name is the campaign id its records carry, its seed the scheduled minute.
    [campaign] = Lake(tmp_path / "lake").read(Campaign)
    assert campaign.campaign_id == run.name
    assert campaign.seed == schedule_seed(run.expected_start_time) != 0
    assert campaign.config["campaign"]["seed"] == campaign.seed


def _wait_healthy(url: str, server: subprocess.Popen[bytes], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"prefect server exited with {server.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError(f"prefect server at {url} not healthy after {timeout} s")


def _stop(*processes: subprocess.Popen[bytes], grace: float = 10.0) -> None:
    # All asked at once, then one shared wait: a worker may sit out its grace period, and
    # waiting for each in turn cost the pool tests 20 s per worker in teardown.
    running = [p for p in processes if p.poll() is None]
    for process in running:
        process.terminate()
    deadline = time.monotonic() + grace
    for process in running:
        try:
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@pytest.fixture
def ops(tmp_path: Path) -> Iterator[dict[str, Any]]:
    """A Prefect server, the two pools, the deployments and one worker per pool.

    Yields the API URL (``api``), the folder of the processes' logs (``logs``) and ``make``,
    which runs the Makefile's targets against this server as the deployer.
    """
    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "EVOSYN_"))},
        "PREFECT_HOME": str(tmp_path / "prefect-home"),
        "PREFECT_API_URL": api,
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_WORKER_QUERY_SECONDS": "1",
        "PREFECT_WORKER_PREFETCH_SECONDS": "5",
        "EVOSYN_HOME": str(REPO),
    }
    logs = tmp_path / "logs"
    logs.mkdir()
    processes: list[subprocess.Popen[bytes]] = []
    workers: list[subprocess.Popen[bytes]] = []

    def start(name: str, *args: str) -> subprocess.Popen[bytes]:
        out = (logs / f"{name}.log").open("wb")
        process = subprocess.Popen(
            [PREFECT, *args], cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT
        )
        processes.append(process)
        return process

    def make(*targets: str) -> str:
        # The Makefile's own targets, without reinstalling the project (-o: treat as up to date).
        venv = Path(sys.executable).parent.parent
        done = subprocess.run(
            ["make", f"VENV={venv}", "-o", f"{venv}/.installed", f"PREFECT_PORT={port}", *targets],
            cwd=REPO,
            # The deployer's EVOSYN_HOME is not the workers': runs must use the workers' own.
            env={**env, "EVOSYN_HOME": str(tmp_path / "deployer-checkout")},
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, f"make {' '.join(targets)}:\n{done.stdout}\n{done.stderr}"
        return done.stdout

    try:
        server = start("server", "server", "start", "--host", "127.0.0.1", "--port", str(port))
        _wait_healthy(api, server)
        make("pools")
        # The workers start up (seconds) while the deployments are made: they poll their pools
        # whether or not a deployment exists yet.
        workers += [
            start(f"worker-{pool}", "worker", "start", "--pool", pool, "--limit", "1")
            for pool in ("cpu", "gpu")
        ]
        make("deploy")
        assert make("pools").count("exists") == 2  # idempotent
        yield {"api": api, "logs": str(logs), "make": make}
    finally:
        # Idle workers at teardown (every run has ended) often sit out 10 s of SIGTERM; the
        # server, whose uvicorn child must stop with it, gets its graceful stop.
        _stop(*workers, grace=3.0)
        _stop(*processes)


def _nightly() -> Any:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return client.read_deployment_by_name("evosyn-campaign-deployment/evosyn-nightly")


def _switch(deployment_id: Any, schedule_id: Any, active: bool) -> None:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        client.update_deployment_schedule(deployment_id, schedule_id, active=active)


async def _observe(api: str, flow_run_id: Any) -> dict[str, Any]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    async with get_client() as client:
        assert str(client.api_url).rstrip("/") == api
        flow_runs = await client.read_flow_runs()
        task_runs = await client.read_task_runs()
        artifacts = await client.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(like_="evosyn-e2e-round-1"))
        )
        root = await client.read_flow_run(flow_run_id)
    return {
        "flow_runs": {r.name: r for r in flow_runs},
        "task_runs": {r.name for r in task_runs},
        "artifacts": {a.key: a for a in artifacts},
        "root": root,
    }


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_campaign_deployment_runs_on_the_pools_and_is_observable(
    ops: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from prefect.deployments import run_deployment
    from prefect.settings import PREFECT_API_URL, temporary_settings

    lake_root = tmp_path / "lake"
    overrides = [f"lake.root={lake_root}", "campaign.rounds=1", "campaign.budget_per_round=12"]
    params = {"config_path": OFFLINE, "overrides": overrides}
    with temporary_settings(updates={PREFECT_API_URL: ops["api"]}):
        campaign = run_deployment(
            "evosyn-campaign-deployment/evosyn-campaign",
            parameters={**params, "campaign_id": "e2e"},
            timeout=300,
        )
        assert campaign.state is not None
        logs = ops["logs"]
        assert campaign.state.is_completed(), (
            f"{campaign.state}\n{Path(logs, 'worker-cpu.log').read_text()[-4000:]}"
        )
        train = run_deployment(
            "evosyn-train/evosyn-train",
            parameters={**params, "campaign_id": "e2e", "round": 1},
            timeout=300,
        )
        assert train.state is not None
        assert train.state.is_completed(), (
            f"{train.state}\n{Path(logs, 'worker-gpu.log').read_text()[-4000:]}"
        )
        seen = asyncio.run(_observe(ops["api"], campaign.id))
        nightly = _nightly()
        # Switched on by an operator; deploying again keeps it on, under the same id.
        _switch(nightly.id, nightly.schedules[0].id, active=True)
        ops["make"]("deploy")
        again = _nightly()

    # Deployed off (prefect.yaml), kept on after the operator's switch and a second deploy.
    assert [s.active for s in nightly.schedules] == [False]
    assert [(s.id, s.active) for s in again.schedules] == [(nightly.schedules[0].id, True)]
    # The pull step names the variable, not the deployer's path: workers read their own
    # (the fixture deployed with an EVOSYN_HOME that does not exist).
    assert again.pull_steps == [
        {"evosyn.flows.steps.set_working_directory_from_env": {"variable": "EVOSYN_HOME"}}
    ]

    lake = Lake(lake_root)
    verified = [v for v in lake.read(Verification, "e2e", 1) if v.passed]
    assert verified, "the deployed campaign wrote verified trajectories"
    [summary] = lake.read(RoundSummary, "e2e", 1)
    assert summary.n_verified == len(verified)
    assert len(lake.read(Training, "e2e", 1)) == 1  # the train flow reused the round's training

    runs = seen["flow_runs"]
    assert seen["root"].name == "e2e"
    assert runs["e2e-round-1"].parent_task_run_id is not None
    assert runs["e2e-train-r1"].state is not None and runs["e2e-train-r1"].state.is_completed()
    assert {"synthesize-r1-000", "train-r1"} <= seen["task_runs"]
    table = seen["artifacts"]["evosyn-e2e-round-1-summary"]
    assert table.type == "table" and str(summary.n_verified) in str(table.data)
    assert seen["artifacts"]["evosyn-e2e-round-1-data"].type == "markdown"


def _served(api_url: str, name: str, parameters: dict[str, Any]) -> subprocess.Popen[bytes]:
    """``campaign_deployment`` served as deployment ``name``: its runs start as the UI's do."""
    # From the entrypoint, as prefect.yaml declares it: each run loads flows/deployment.py.
    code = (
        "from prefect import serve\n"
        "from prefect.deployments.runner import RunnerDeployment\n"
        "serve(RunnerDeployment.from_entrypoint('flows/deployment.py:campaign_deployment', "
        f"name={name!r}, parameters={parameters!r}))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env |= {
        "PREFECT_API_URL": api_url,
        "PREFECT_RUNNER_POLL_FREQUENCY": "1",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    }
    return subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


async def _run_from_form(name: str, parameters: dict[str, Any], timeout: float = 240) -> Any:
    """A run of deployment ``name`` created through the API with the form's ``parameters``."""
    from prefect.client.orchestration import get_client

    async with get_client() as client:
        deadline = time.monotonic() + 60
        while True:
            try:
                deployment = await client.read_deployment_by_name(
                    f"evosyn-campaign-deployment/{name}"
                )
                break
            except Exception:
                assert time.monotonic() < deadline, f"deployment {name} not served after 60 s"
                await asyncio.sleep(0.5)
        run = await client.create_flow_run_from_deployment(deployment.id, parameters=parameters)
        deadline = time.monotonic() + timeout
        while True:
            run = await client.read_flow_run(run.id)
            if run.state is not None and run.state.is_final():
                return run
            assert time.monotonic() < deadline, f"{run.name}: {run.state_type} after {timeout}s"
            await asyncio.sleep(0.5)


@pytest.mark.usefixtures("prefect_server")
def test_deployment_parameters_as_the_ui_sends_them(tmp_path: Path) -> None:
    """A pasted config runs although the form keeps the default path; a typo fails in one line."""
    from prefect.settings import PREFECT_API_URL

    from evosyn.records import Campaign

    lake = tmp_path / "lake"
    served = _served(
        str(PREFECT_API_URL.value()), "ui-form", {"config_path": OFFLINE, "overrides": []}
    )
    try:
        pasted = {
            "campaign": {"name": "pasted", "id": "pasted", "rounds": 1, "budget_per_round": 6},
            "agents": {"learner": {"trials": 1}},
        }
        run = asyncio.run(
            _run_from_form("ui-form", {"config": pasted, "overrides": [f"lake.root={lake}"]})
        )
        assert run.state.is_completed(), run.state
        [campaign] = Lake(lake).read(Campaign, "pasted")
        assert campaign.config["campaign"]["budget_per_round"] == 6
        assert [s.round for s in Lake(lake).read(RoundSummary, "pasted")] == [1]

        typo = asyncio.run(
            _run_from_form("ui-form", {"config_path": "", "overrides": ["campaign.roundz=2"]})
        )
        assert typo.state.is_failed(), typo.state
        assert typo.state.message == "config error: unknown key 'campaign.roundz'"
    finally:
        _stop(served)
