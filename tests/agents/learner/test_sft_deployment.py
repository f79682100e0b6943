"""One round of a ``learner.kind: sft`` campaign through the deployments, on CPU.

Process workers stand in for both pools: the round runs on `cpu` and dispatches training and
evaluation to `gpu` (the sft default). The learner is a tiny random Qwen3 trained by
``llamafactory-cli train`` from the training environment (training_env.py), and its evaluation
talks to the project's local OpenAI-compatible test server as the already-running endpoint of
the checkpoint.
"""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evosyn.records import EvalResult, Training
from evosyn.storage import Lake
from tests.agents.learner.training_env import interpreter, needs_llamafactory
from tests.flows.test_deployment import OFFLINE, ops  # noqa: F401  (the fixture)
from tests.openai_server import OpenAIServer

TINY = Path(__file__).with_name("tiny_qwen3.py")
pytestmark = [pytest.mark.slow, needs_llamafactory]


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIServer]:
    # Set before `ops` starts the workers, which inherit the environment.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with OpenAIServer() as server:
        yield server


async def _pools(api: str) -> dict[str, str | None]:
    from prefect.client.orchestration import get_client

    async with get_client() as client:
        assert str(client.api_url).rstrip("/") == api
        return {r.name: r.work_pool_name for r in await client.read_flow_runs()}


@pytest.mark.timeout(900)
def test_sft_campaign_round_runs_through_the_deployments(
    endpoint: OpenAIServer,
    ops: dict[str, Any],  # noqa: F811
    tmp_path: Path,
) -> None:
    from prefect.deployments import run_deployment
    from prefect.settings import PREFECT_API_URL, temporary_settings

    base = tmp_path / "tiny-qwen3"
    subprocess.run([interpreter(), str(TINY), "build", str(base)], check=True, timeout=300)
    cli = Path(interpreter()).parent / "llamafactory-cli"
    lake_root = tmp_path / "lake"
    recipe = (
        f"{{model: '{base}', cutoff_len: 1024, bf16: false, flash_attn: sdpa, gpus: 1, "
        "device: cpu, deepspeed: none, grad_accum: 1, max_steps: 2, logging_steps: 1}"
    )
    overrides = [
        f"lake.root={lake_root}",
        "campaign.rounds=1",
        "campaign.budget_per_round=12",
        "agents.learner.kind=sft",
        f"agents.learner.recipe={recipe}",
        f"agents.learner.train_command=['{cli}', train]",
        f"agents.learner.work_dir={tmp_path / 'work'}",
        f"agents.learner.endpoint={endpoint.url}",
        "agents.learner.max_steps=4",
        "agents.learner.infra_retries=0",
        f"llm.default.api_base={endpoint.url}",
        "llm.default.max_attempts=1",
        "llm.roles.user_simulator.model=openai/user-model",
    ]
    params = {"config_path": OFFLINE, "overrides": overrides}
    with temporary_settings(updates={PREFECT_API_URL: ops["api"]}):
        campaign = run_deployment(
            "evosyn-campaign-deployment/evosyn-campaign",
            parameters={**params, "campaign_id": "sft"},
            timeout=600,
        )
        logs = ops["logs"]
        assert campaign.state is not None and campaign.state.is_completed(), (
            f"{campaign.state}\n{Path(logs, 'worker-cpu.log').read_text()[-4000:]}"
        )
        runs = asyncio.run(_pools(ops["api"]))
    # The round dispatched both to the gpu pool (the sft default), not inline on cpu.
    assert runs["sft-train-r1"] == runs["sft-evaluate-r1"] == "gpu", runs

    lake = Lake(lake_root)
    [training] = lake.read(Training, "sft", 1)
    assert training.learner == "sft" and training.status == "succeeded"
    assert training.checkpoint_uri == f"{lake_root}/checkpoints/sft/sft-r1-train"
    assert (lake_root / "checkpoints/sft/sft-r1-train/config.json").exists()
    results = lake.read(EvalResult, "sft", 1)
    assert len(results) >= 30  # the official diagnostic tasks and the held-out ones
    assert all(r.failure_reason and r.failure_reason.startswith("max_steps") for r in results)
    assert endpoint.request_count >= 2 * len(results)
