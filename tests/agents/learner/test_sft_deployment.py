"""One round of a ``learner.kind: sft`` campaign through the deployments, on CPU, for real.

Process workers stand in for both pools (the `ops` fixture of test_deployment.py): the round runs
on `cpu` and dispatches training and evaluation to `gpu` (the sft default), checked through
Prefect's own API to have run there as the round's children. The learner is a tiny random Qwen3
built offline, trained by ``llamafactory-cli train`` from the training environment
(training_env.py); its checkpoint is served by LLaMA-Factory's own OpenAI-compatible server
(``llamafactory-cli api``, CPU) and plays τ²-bench episodes against a scripted user simulator.
The campaign is on τ²-bench's mock domain, whose short policy and four diagnostic tasks keep a
CPU forward pass per turn cheap. In the default run: about 3 minutes on two cores.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from samples import free_port

from evosyn.records import EvalResult, LLMCall, RoundSummary, Training
from evosyn.storage import Lake
from tests.agents.learner.training_env import (
    TinyModel,
    interpreter,
    needs_llamafactory,
    tiny_qwen3,  # noqa: F401  (the fixture)
)
from tests.flows.test_deployment import ops  # noqa: F401  (the fixture)
from tests.openai_server import OpenAIServer

MOCK = "deployments/campaigns/mock-offline.yaml"
pytestmark = [needs_llamafactory, pytest.mark.heavy]


@pytest.fixture
def user_simulator(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIServer]:
    # Set before `ops` starts the workers, which inherit the environment.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with OpenAIServer() as server:
        yield server


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


@pytest.mark.timeout(900)
def test_sft_campaign_round_trains_serves_and_evaluates_on_the_gpu_pool(
    tiny_qwen3: TinyModel,  # noqa: F811
    user_simulator: OpenAIServer,
    ops: dict[str, Any],  # noqa: F811
    tmp_path: Path,
) -> None:
    from prefect.deployments import run_deployment
    from prefect.settings import PREFECT_API_URL, temporary_settings

    base = tiny_qwen3.path
    cli = str(Path(interpreter()).parent / "llamafactory-cli")
    lake_root = tmp_path / "lake"
    recipe = (
        f"{{model: '{base}', cutoff_len: 1024, bf16: false, flash_attn: sdpa, gpus: 1, "
        "device: cpu, deepspeed: none, grad_accum: 1, max_steps: 2, logging_steps: 1}"
    )
    # LLaMA-Factory's own server of the checkpoint (docs/training.md, "on a CPU").
    serve = (
        f"[env, 'API_PORT={{port}}', 'API_MODEL_NAME={{name}}', DISABLE_VERSION_CHECK=1, '{cli}', "
        "api, --model_name_or_path, '{checkpoint}', --template, qwen3, --infer_backend, "
        "huggingface, --max_new_tokens, '8']"
    )
    overrides = [
        f"lake.root={lake_root}",
        "campaign.rounds=1",
        "campaign.budget_per_round=12",
        "agents.learner.kind=sft",
        "agents.learner.weaknesses=[]",  # the base campaign's simulated learner's
        "agents.learner.trials=1",
        f"agents.learner.recipe={recipe}",
        f"agents.learner.train_command=['{cli}', train]",
        f"agents.learner.work_dir={tmp_path / 'work'}",
        f"agents.learner.serve_command={serve}",
        f"agents.learner.serve_port={free_port()}",
        "agents.learner.serve_timeout_s=240",
        "agents.learner.max_steps=4",
        "agents.learner.infra_retries=0",
        f"llm.default.api_base={user_simulator.url}",
        "llm.default.max_attempts=1",
        "llm.roles.user_simulator.model=openai/user-model",
    ]
    params = {"config_path": MOCK, "overrides": overrides}
    with temporary_settings(updates={PREFECT_API_URL: ops["api"]}):
        campaign = run_deployment(
            "evosyn-campaign-deployment/evosyn-campaign",
            parameters={**params, "campaign_id": "sft"},
            timeout=600,
            poll_interval=1,  # not the default 5 s after the run has ended
        )
        seen = asyncio.run(_runs(ops["api"]))
    logs = Path(ops["logs"])
    assert campaign.state is not None and campaign.state.is_completed(), (
        f"{campaign.state}\n{(logs / 'worker-cpu.log').read_text()[-3000:]}\n"
        f"{(logs / 'worker-gpu.log').read_text()[-3000:]}"
    )
    # The round dispatched both to the gpu pool (the sft default) as its children.
    runs, parents = seen["runs"], seen["parents"]
    assert runs["sft"].work_pool_name == "cpu"
    assert runs["sft-round-1"].work_pool_name is None  # a subflow of the campaign, on cpu
    for name in ("sft-train-r1", "sft-evaluate-r1"):
        run = runs[name]
        assert run.work_pool_name == "gpu", (name, run.work_pool_name)
        assert run.state is not None and run.state.is_completed(), (name, run.state)
        assert parents[name].flow_run_id == runs["sft-round-1"].id

    lake = Lake(lake_root)
    [training] = lake.read(Training, "sft", 1)
    assert training.learner == "sft" and training.status == "succeeded"
    assert training.checkpoint_uri == f"{lake_root}/checkpoints/sft/sft-r1-train"
    assert (lake_root / "checkpoints/sft/sft-r1-train/config.json").exists()
    results = lake.read(EvalResult, "sft", 1)
    assert len(results) > 4  # the official diagnostic tasks and the held-out ones
    assert {r.training_id for r in results} == {training.training_id}
    # A random model never finishes a task: each episode runs out of steps or the model says
    # nothing (its own protocol error); none is an infrastructure failure.
    ends = {(r.failure_reason or "").split(":")[0] for r in results}
    assert not any(r.success for r in results) and ends <= {"max_steps", "agent_error"}
    # The trained model answered every learner turn over HTTP, and each call was counted.
    calls = lake.read(LLMCall, "sft", 1)
    served = [c for c in calls if c.role == "learner"]
    assert len(served) >= len(results) and all(c.outcome == "ok" for c in served)
    assert {c.model for c in served} == {f"openai/{training.training_id}"}
    [summary] = lake.read(RoundSummary, "sft", 1)
    assert summary.status == "succeeded" and summary.diagnostic_n > 0
