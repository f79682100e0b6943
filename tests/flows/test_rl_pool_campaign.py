"""One round of a ``learner.kind: rl`` campaign whose training and evaluation run on the `gpu` pool.

The issue's check, in the default run. The campaign runs in the test's process against the
session's Prefect server (tests/conftest.py); its round dispatches ``evosyn-train`` and
``evosyn-evaluate`` to the `gpu` work pool, where a real process worker runs them from this
checkout, and Prefect's API shows both runs on that pool as the round's children. TRL's
GRPOTrainer runs one step on the tiny random Qwen3 built offline (tiny_qwen3.py) in the
training environment (training_env.py); the checkpoint is served by ``llamafactory-cli api`` on
CPU and plays τ²-bench episodes against a scripted user simulator over HTTP. What keeps it cheap:
one prompt task, two sampled turns of four tokens, two agent steps per episode, and the model
(built once per test run: training_env.py) built, when it is not yet, while the worker starts.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from samples import free_port

from evosyn.agents.learner.rl import METRICS_FILE
from evosyn.config import load_config
from evosyn.flows.campaign import campaign_flow
from evosyn.records import EvalResult, LLMCall, RoundSummary, Training
from evosyn.storage import Lake
from tests.agents.learner.training_env import (
    TinyModel,
    interpreter,
    needs_llamafactory,
    tiny_qwen3,  # noqa: F401  (the fixture)
)
from tests.openai_server import OpenAIServer

REPO = Path(__file__).resolve().parents[2]
MOCK = REPO / "deployments/campaigns/mock-offline.yaml"
pytestmark = [needs_llamafactory, pytest.mark.heavy, pytest.mark.usefixtures("prefect_server")]


async def _deploy_on_gpu() -> None:
    """evosyn-train and evosyn-evaluate on a process pool `gpu`, runnable from this checkout."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate

    from evosyn.flows.evaluate import evaluate_flow
    from evosyn.flows.train import train_flow

    step = {"prefect.deployments.steps.set_working_directory": {"directory": str(REPO)}}
    async with get_client() as client:
        await client.create_work_pool(WorkPoolCreate(name="gpu", type="process"), overwrite=True)
        for flow, entrypoint in (
            (train_flow, "flows/train.py:train_flow"),
            (evaluate_flow, "flows/evaluate.py:evaluate_flow"),
        ):
            await client.create_deployment(
                flow_id=await client.create_flow(flow),
                name=flow.name,
                work_pool_name="gpu",
                entrypoint=entrypoint,
                pull_steps=[step],
            )


async def _undeploy() -> None:
    """Remove the deployments and the `gpu` pool, so later tests on the shared server find none.

    The pool goes too: its stopped worker stays online on the server until its heartbeat
    expires, and a dispatch test run next on this server would take it for a live one.
    """
    from prefect.client.orchestration import get_client

    async with get_client() as client:
        for name in ("evosyn-train/evosyn-train", "evosyn-evaluate/evosyn-evaluate"):
            deployment = await client.read_deployment_by_name(name)
            await client.delete_deployment(deployment.id)
        await client.delete_work_pool("gpu")


async def _runs() -> dict[str, Any]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName

    # The session's server holds other tests' runs: only this campaign's are read.
    names = FlowRunFilterName(any_=["rl-round-1", "rl-train-r1", "rl-evaluate-r1"])
    async with get_client() as client:
        found = await client.read_flow_runs(flow_run_filter=FlowRunFilter(name=names))
        runs = {r.name: r for r in found}
        parents = {
            name: await client.read_task_run(run.parent_task_run_id)
            for name, run in runs.items()
            if run.parent_task_run_id is not None
        }
    return {"runs": runs, "parents": parents}


@pytest.fixture
def gpu_pool(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Path]:
    """A process worker polling `gpu` on the session's server; yields the tiny model's folder.

    The model, when no test of this run has built it yet, is built while the worker starts:
    both are process start-ups that take seconds.
    """
    from prefect.settings import PREFECT_API_URL

    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env |= {
        "PREFECT_API_URL": str(PREFECT_API_URL.value()),
        "PREFECT_WORKER_QUERY_SECONDS": "1",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        # The user simulator's gateway wants a key; the scripted server takes any.
        "OPENAI_API_KEY": "sk-test",
    }
    log = (tmp_path / "worker-gpu.log").open("wb")
    worker = subprocess.Popen(
        [str(Path(sys.executable).with_name("prefect")), "worker", "start", "--pool", "gpu"],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        asyncio.run(_deploy_on_gpu())
        tiny: TinyModel = request.getfixturevalue("tiny_qwen3")
        yield tiny.path
    finally:
        worker.terminate()
        try:
            # Idle now; it often sits out 10 s of SIGTERM.
            worker.wait(timeout=3)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait(timeout=10)
        log.close()
        asyncio.run(_undeploy())


@pytest.mark.timeout(600)
def test_rl_campaign_round_trains_grpo_steps_and_evaluates_on_the_gpu_pool(
    gpu_pool: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    cli = str(Path(interpreter()).parent / "llamafactory-cli")
    lake_root = tmp_path / "lake"
    steps, generations = 1, 2
    recipe = (
        f"{{model: '{gpu_pool}', generations: {generations}, prompts_per_step: 1, "
        f"max_steps: {steps}, max_tasks: 1, learning_rate: 0.001, device: cpu, bf16: false, "
        "gradient_checkpointing: false, cutoff_len: 8192, max_completion_tokens: 4}"
    )
    serve = (
        f"[env, 'API_PORT={{port}}', 'API_MODEL_NAME={{name}}', DISABLE_VERSION_CHECK=1, '{cli}', "
        "api, --model_name_or_path, '{checkpoint}', --template, qwen3, --infer_backend, "
        "huggingface, --max_new_tokens, '8']"
    )
    with OpenAIServer() as user:
        overrides = [
            f"lake.root={lake_root}",
            "campaign.rounds=1",
            "campaign.budget_per_round=12",
            "agents.learner.kind=rl",
            "agents.learner.weaknesses=[]",  # the base campaign's simulated learner's
            "agents.learner.dispatch=deployments",
            "agents.learner.worker_wait_s=120",
            "agents.learner.trials=1",
            f"agents.learner.rl={recipe}",
            f"agents.learner.rl_python={interpreter()}",
            f"agents.learner.work_dir={tmp_path / 'work'}",
            f"agents.learner.serve_command={serve}",
            f"agents.learner.serve_port={free_port()}",
            "agents.learner.serve_timeout_s=240",
            "agents.learner.max_steps=2",
            "agents.learner.infra_retries=0",
            f"llm.default.api_base={user.url}",
            "llm.default.max_attempts=1",
            "llm.roles.user_simulator.model=openai/user-model",
        ]
        cfg = load_config(MOCK, overrides)
        [summary] = campaign_flow(cfg, "rl")
        seen = asyncio.run(_runs())
    assert summary.status == "succeeded" and summary.diagnostic_n > 0, (
        summary,
        (tmp_path / "worker-gpu.log").read_text()[-3000:],
    )
    # Training and evaluation ran on the gpu pool's worker, as the round's children.
    runs, parents = seen["runs"], seen["parents"]
    for name in ("rl-train-r1", "rl-evaluate-r1"):
        run = runs[name]
        assert run.work_pool_name == "gpu", (name, run.work_pool_name)
        assert run.state is not None and run.state.is_completed(), (name, run.state)
        assert parents[name].flow_run_id == runs["rl-round-1"].id

    lake = Lake(lake_root)
    [training] = lake.read(Training, "rl", 1)
    assert training.learner == "rl" and training.status == "succeeded", training.error
    assert training.recipe["max_steps"] == steps and training.recipe["tasks"] == 1
    assert training.recipe["base"] == str(gpu_pool)  # round 1 starts from rl.model
    assert training.n_samples > 0
    checkpoint = lake_root / "checkpoints/rl/rl-r1-train"
    assert training.checkpoint_uri == str(checkpoint)
    assert (checkpoint / "config.json").exists()
    # The GRPO step: each sampled turn scored by the endpoint, the step's logged mean reward
    # the mean of those rewards.
    metrics = json.loads((checkpoint / METRICS_FILE).read_text())
    rollouts = [
        json.loads(line)
        for line in (tmp_path / "work/rl/rl-r1-train/rollouts.jsonl").read_text().splitlines()
    ]
    assert metrics["global_step"] == steps and len(metrics["steps"]) == steps
    assert len(rollouts) == steps * generations
    assert {r["reward"] for r in rollouts} <= {0.0, 1.0}
    mean = sum(r["reward"] for r in rollouts) / len(rollouts)
    assert metrics["steps"][0]["reward"] == pytest.approx(mean)
    # Evaluations: the official diagnostic tasks and the held-out ones, played by the served
    # checkpoint; a random model finishes none, and none is an infrastructure failure.
    results = lake.read(EvalResult, "rl", 1)
    assert len(results) > 4 and {r.training_id for r in results} == {training.training_id}
    ends = {(r.failure_reason or "").split(":")[0] for r in results}
    assert not any(r.success for r in results) and ends <= {"max_steps", "agent_error"}
    # Every learner turn was a model call over HTTP, counted under the training id.
    calls = lake.read(LLMCall, "rl", 1)
    served = [c for c in calls if c.role == "learner"]
    assert len(served) >= len(results) and all(c.outcome == "ok" for c in served)
    assert {c.model for c in served} == {f"openai/{training.training_id}"}
    [stored] = lake.read(RoundSummary, "rl", 1)
    assert stored.status == "succeeded"
