"""The SFT learner: rendering, the training subprocess, upload, and τ²-bench evaluation."""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from samples import free_port
from typer.testing import CliRunner

from evosyn.agents.learner.base import EvalInputs
from evosyn.agents.learner.diagnostic import split_verified
from evosyn.agents.learner.recipe import TrainRecipe
from evosyn.agents.learner.settings import SFTSettings
from evosyn.agents.learner.sft import (
    MissingToolError,
    ServerError,
    SFTLearner,
    launcher_env,
    render_serve_command,
)
from evosyn.agents.roles import build_roles
from evosyn.cli import app
from evosyn.config import CampaignConfig, ModelSettings
from evosyn.records import EvalResult, LLMCall, Training, Verification
from evosyn.storage import Lake
from evosyn.tasks import learner_lake
from evosyn.tasks.learner_lake import local_checkpoint
from tests.agents.learner.test_export import trained_system
from tests.openai_server import OpenAIServer, Reply

# A stand-in for `llamafactory-cli train`: reads the YAML, writes a checkpoint folder.
FAKE_TRAIN = """
import json, sys, pathlib, yaml
args = yaml.safe_load(open(sys.argv[-1]))
info = json.load(open(pathlib.Path(args["dataset_dir"]) / "dataset_info.json"))
assert args["dataset"] in info, args["dataset"]
out = pathlib.Path(args["output_dir"]); out.mkdir(parents=True)
(out / "config.json").write_text(json.dumps({"model_type": "qwen3"}))
(out / "model.safetensors").write_bytes(b"weights")
print("trained", args["model_name_or_path"], args.get("deepspeed"))
"""


def test_a_cuda_recipe_without_its_devices_is_refused_before_training(
    lake_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A stand-in nvidia-smi that lists one GPU, on a PATH of its own.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 'GPU 0: NVIDIA H200 (UUID: GPU-0)'\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    cuda = {"gpus": 2, "bf16": False, "flash_attn": "sdpa", "device": "cuda"}
    cfg = config(lake_root, tmp_path, ["true"], recipe=cuda)
    with pytest.raises(MissingToolError) as caught:
        _train(cfg, lake_root)
    message = str(caught.value)
    assert "\n" not in message and "2 CUDA device(s)" in message and "1 CUDA device(s)" in message
    assert "recipe.device: cpu" in message
    cfg = config(lake_root, tmp_path, ["true"], recipe=cuda | {"gpus": 1})
    # One GPU is enough for gpus: 1: the preflight passes, `true` runs and saves nothing.
    training = _train(cfg, lake_root)
    assert training.error is not None and training.error.startswith("no config.json saved")


@pytest.fixture(scope="module")
def lake_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("sft") / "lake"
    result = CliRunner().invoke(
        app,
        ["synth", "--n", "12", "--seed", "5", "--campaign-id", "sft", "--set", f"lake.root={root}"],
    )
    assert result.exit_code == 0, result.output
    return root


def config(root: Path, work: Path, command: list[str], **learner: object) -> CampaignConfig:
    return CampaignConfig.model_validate(
        {
            "lake": {"root": str(root)},
            "agents": {
                "learner": {
                    "kind": "sft",
                    "recipe": {"gpus": 2, "bf16": False, "flash_attn": "sdpa", "device": "cpu"},
                    "train_command": command,
                    "work_dir": str(work),
                    **learner,
                }
            },
        }
    )


def _train(cfg: CampaignConfig, root: Path) -> Training:
    """The train task's body, without storing the record."""
    learner = build_roles(cfg).learner
    assert isinstance(learner, SFTLearner)
    prefix = cfg.agents.learner.checkpoint_prefix
    return learner_lake.train(Lake(str(root)), learner, "sft", 1, "sft-r1-train", prefix)


def test_train_runs_the_command_and_uploads_the_checkpoint(lake_root: Path, tmp_path: Path) -> None:
    script = tmp_path / "fake_train.py"
    script.write_text(FAKE_TRAIN)
    cfg = config(lake_root, tmp_path / "work", [sys.executable, str(script)])
    training = _train(cfg, lake_root)
    assert training.status == "succeeded", training.error
    assert training.learner == "sft" and training.n_samples > 0
    assert training.dataset_snapshot.startswith("sha256:") and len(training.dataset_snapshot) == 71
    assert training.recipe["gpus"] == 2 and training.recipe["command"][-1].endswith("train.yaml")
    assert training.checkpoint_uri == f"{lake_root}/checkpoints/sft/sft-r1-train"
    local = local_checkpoint(Lake(str(lake_root)), training.checkpoint_uri)
    assert (local / "model.safetensors").read_bytes() == b"weights"
    run = tmp_path / "work" / "sft" / "sft-r1-train"
    args = yaml.safe_load((run / "train.yaml").read_text())
    assert args["deepspeed"] == str(run / "ds_config.json")
    assert json.loads((run / "ds_config.json").read_text())["zero_optimization"]["stage"] == 3
    assert "trained Qwen/Qwen3-8B" in (run / "train.log").read_text()
    # The same export twice has the same digest.
    again = _train(config(lake_root, tmp_path / "work2", [sys.executable, str(script)]), lake_root)
    assert again.dataset_snapshot == training.dataset_snapshot


def test_a_failing_command_is_a_failed_training(lake_root: Path, tmp_path: Path) -> None:
    command = [sys.executable, "-c", "import sys; print('CUDA out of memory'); sys.exit(3)"]
    training = _train(config(lake_root, tmp_path, command), lake_root)
    assert training.status == "failed" and training.checkpoint_uri is None
    assert training.error is not None and "exit status 3" in training.error
    assert "CUDA out of memory" in training.error
    learner = SFTLearner(config(lake_root, tmp_path, command))
    with pytest.raises(ServerError, match="failed"):
        learner.evaluate(training, [], EvalInputs())


def test_launcher_and_server_commands() -> None:
    assert launcher_env(TrainRecipe())["NPROC_PER_NODE"] == "8"
    assert "FORCE_TORCHRUN" not in launcher_env(TrainRecipe(gpus=1, deepspeed="none"))
    # LLaMA-Factory refuses DeepSpeed outside torchrun, on one device too.
    assert launcher_env(TrainRecipe(gpus=1))["NPROC_PER_NODE"] == "1"
    cpu = launcher_env(TrainRecipe(device="cpu"))
    assert cpu["CUDA_VISIBLE_DEVICES"] == "" and cpu["NPROC_PER_NODE"] == "1"
    command = render_serve_command(SFTSettings().serve_command, "/ck", "r1", 8123, 20480)
    assert command[:3] == ["vllm", "serve", "/ck"]
    assert "--enable-auto-tool-choice" in command and "hermes" in command
    assert command[command.index("--port") + 1] == "8123"
    assert command[command.index("--max-model-len") + 1] == "20480"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with OpenAIServer() as srv:
        yield srv


def test_evaluate_against_a_running_endpoint(
    lake_root: Path, tmp_path: Path, server: OpenAIServer
) -> None:
    # One episode at a time: the server's script is one sequence across both trials.
    cfg = config(
        lake_root, tmp_path, ["true"], endpoint=server.url, trials=2, infra_retries=0, concurrency=1
    )
    limits = {"max_attempts": 1, "timeout": 5, "api_base": server.url}
    cfg.llm.roles["user_simulator"] = ModelSettings(model="openai/user-model", **limits)
    cfg.llm.roles["learner"] = ModelSettings(**limits)
    learner = SFTLearner(cfg)
    _, held = split_verified(Lake(str(lake_root)).read(Verification, "sft"))
    training = Training(
        campaign_id="sft",
        round=1,
        training_id="sft-r1-train",
        learner="sft",
        dataset_snapshot="sha256:x",
        n_samples=1,
        checkpoint_uri="/nowhere",
        status="succeeded",
    )
    # Trial 0 plays out; trial 1 hits a dead learner server and is marked, not scored.
    server.script(Reply.text("I want to change my flight."), Reply.text("Done."))
    server.script(Reply.text("###STOP###"), Reply.text("Hello?"), Reply.server_error(503))
    evaluation = learner_lake.evaluate(Lake(str(lake_root)), learner, training, held[:1], "airline")
    assert [r.task_id for r in evaluation.results] == [f"{held[0].task_id}#trial0"]
    [failure] = evaluation.failures
    assert (failure.trial, failure.kind) == (1, "server_down")
    models = [r.body["model"] for r in server.requests]
    assert models[:3] == ["user-model", "sft-r1-train", "user-model"]
    first = next(r for r in server.requests if r.body["model"] == "sft-r1-train")
    # The learner sees each conversation as its training samples lay it out (test_export): the
    # same system text, and the orchestrator's greeting in it rather than as a turn.
    messages = first.body["messages"]
    assert messages[0] == {"role": "system", "content": trained_system("airline")}
    assert messages[1]["role"] == "user"
    assert first.body["tools"], "the learner gets the domain's tool schemas"


def test_flows_record_failed_trainings_and_store_no_all_infra_evaluation(
    lake_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evosyn.flows.evaluate import EvaluationInfraError, evaluate_learner
    from evosyn.flows.train import TrainingFailedError, train_learner

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    root = tmp_path / "lake"
    shutil.copytree(lake_root, root)
    failing = config(root, tmp_path / "w1", [sys.executable, "-c", "raise SystemExit(2)"])
    with pytest.raises(TrainingFailedError, match="sft-r1-train: exit status 2"):
        train_learner.fn(failing, "sft", 1)
    [failed] = Lake(str(root)).read(Training, "sft", 1)
    assert failed.status == "failed"
    script = tmp_path / "fake_train.py"
    script.write_text(FAKE_TRAIN)
    good = config(root, tmp_path / "w2", [sys.executable, str(script)])
    trained = train_learner.fn(good, "sft", 1)
    assert (trained.training_id, trained.status) == ("sft-r1-train-retry1", "succeeded")
    assert train_learner.fn(good, "sft", 1) == trained  # reused, not trained again
    # A learner server nobody listens on: every episode is an infra failure, nothing stored.
    dead = f"http://127.0.0.1:{free_port()}/v1"
    down = config(root, tmp_path / "w2", ["true"], endpoint=dead, infra_retries=0)
    down.llm.default = ModelSettings(model="openai/m", api_base=dead, max_attempts=1, timeout=2)
    with pytest.raises(EvaluationInfraError, match="failed on infrastructure"):
        evaluate_learner.fn(down, "sft", 1)
    assert Lake(str(root)).read(EvalResult, "sft", 1) == []
    # The failed attempts of the evaluation's model calls are counted all the same.
    calls = Lake(str(root)).read(LLMCall, "sft", 1)
    assert calls and {c.role for c in calls} <= {"learner", "user_simulator"}
    assert all(c.outcome == "error" for c in calls)


# A stand-in for `vllm serve`: answers /v1/models on the rendered port.
FAKE_SERVE = """
import http.server, sys
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/v1/models" else 404)
        self.end_headers()
        self.wfile.write(b'{"data": [{"id": "%s"}]}' % sys.argv[2].encode())
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
"""


def test_served_starts_the_rendered_server_and_stops_it(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    port = free_port()
    script = tmp_path / "fake_serve.py"
    script.write_text(FAKE_SERVE)
    command = [sys.executable, str(script), "{port}", "{name}"]
    cfg = config(tmp_path, tmp_path, ["true"], serve_command=command, serve_port=port)
    learner = SFTLearner(cfg)
    training = Training(
        campaign_id="c",
        round=1,
        training_id="c-r1-train",
        learner="sft",
        dataset_snapshot="sha256:x",
        n_samples=1,
        checkpoint_uri=str(tmp_path),
        status="succeeded",
    )
    with learner.served(training, tmp_path) as base_url:
        assert base_url == f"http://127.0.0.1:{port}/v1"
        with urllib.request.urlopen(f"{base_url}/models", timeout=5) as answer:
            assert b"c-r1-train" in answer.read()
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", port)) != 0, "the server was stopped"
    # A server that dies says why in its own log, whose tail the error carries; the worker's
    # output stays free of the server's lines.
    dying = [sys.executable, "-c", "import sys; print('boom: no CUDA device'); sys.exit(3)"]
    crashing = config(tmp_path, tmp_path, ["true"], serve_command=dying, serve_port=port)
    with (
        pytest.raises(ServerError, match=r"exited with status 3 \(log .*\):\nboom: no CUDA"),
        SFTLearner(crashing).served(training, tmp_path),
    ):
        pass
    assert "boom" not in capfd.readouterr().out


def test_checkpoints_upload_to_an_s3_lake(
    tmp_path: Path, s3_server: str, s3_bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = f"s3://{s3_bucket}/lake"
    sets = ["--set", f"lake.root={root}", "--set", f"lake.s3_endpoint={s3_server}"]
    sets += ["--set", f"lake.cache_dir={tmp_path / 'cache'}"]
    result = CliRunner().invoke(
        app, ["synth", "--n", "6", "--seed", "5", "--campaign-id", "sft", *sets]
    )
    assert result.exit_code == 0, result.output
    script = tmp_path / "fake_train.py"
    script.write_text(FAKE_TRAIN)
    cfg = config(Path("unused"), tmp_path / "work", [sys.executable, str(script)])
    cfg.lake.root, cfg.lake.s3_endpoint = root, s3_server
    cfg.lake.cache_dir = str(tmp_path / "cache2")
    lake = Lake(root, s3_server, cfg.lake.cache_dir)
    training = learner_lake.train(lake, SFTLearner(cfg), "sft", 1, "sft-r1-train", "checkpoints")
    assert training.status == "succeeded", training.error
    assert training.checkpoint_uri == f"{root}/checkpoints/sft/sft-r1-train"
    local = local_checkpoint(lake, training.checkpoint_uri)
    assert local.is_relative_to(tmp_path / "cache2")
    assert (local / "model.safetensors").read_bytes() == b"weights"


def test_the_test_split_is_official_tasks_three_trials_at_temperature_one() -> None:
    from evosyn.config import load_config
    from evosyn.flows.evaluate import TEST_OVERRIDES, items_of

    cfg = load_config(overrides=["agents.learner.kind=icl", *TEST_OVERRIDES], environ={})
    assert cfg.agents.learner.trials == 3 and cfg.llm.roles["learner"].temperature == 1.0
    items = items_of(cfg, [], "test")
    assert items and {i.split for i in items} == {"test"}
    diagnostic = {i.task_id for i in items_of(cfg, [], "diagnostic")}
    assert diagnostic and not diagnostic & {i.task_id for i in items}


def test_the_sft_learner_is_prompted_as_tau2_bench_prompts_its_agent(tmp_path: Path) -> None:
    from tau2.data_model.message import AssistantMessage
    from tau2.data_model.tasks import InitialState

    from evosyn.environments import get_domain
    from evosyn.environments.kit.dialogue import stock_system_prompt

    learner = SFTLearner(config(tmp_path, tmp_path, ["true"]))
    task = get_domain("airline").tasks()[0]
    stock = stock_system_prompt(get_domain("airline"))
    assert learner.system_prompt(task) == trained_system("airline") == stock
    opening = AssistantMessage(role="assistant", content="Welcome back, where were we?")
    resumed = task.model_copy(update={"initial_state": InitialState(message_history=[opening])})
    assert learner.system_prompt(resumed) == stock
