"""The SFT learner: LLaMA-Factory fine-tuning on D_<=r, evaluation of the checkpoint with vLLM.

``train`` exports D_<=r, renders the recipe to a LLaMA-Factory YAML and a DeepSpeed JSON and runs
the configured training command (``llamafactory-cli train`` by default; its launcher spreads the
job over ``recipe.gpus`` devices through torchrun); the train task uploads the checkpoint to the
lake. ``evaluate`` serves the local copy of the checkpoint the evaluate task fetched with vLLM's
OpenAI-compatible server (or uses an endpoint that is already running) and runs τ²-bench
episodes against it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import yaml
from tau2.data_model.tasks import Task

from evosyn.agents.learner.base import (
    DiagnosticItem,
    EvalInputs,
    Evaluation,
    LakeInput,
    Trained,
    TrainingData,
    Weakness,
    succeeded_by,
)
from evosyn.agents.learner.episodes import (
    EpisodeRunner,
    EpisodeSettings,
    TrainedAgent,
    evaluation_concurrency,
    learner_gateways,
)
from evosyn.agents.learner.export import ExportError, export_sft
from evosyn.agents.learner.recipe import TrainRecipe
from evosyn.agents.learner.settings import SFTSettings
from evosyn.config import CampaignConfig
from evosyn.environments import get_domain
from evosyn.environments.kit.dialogue import stock_system_prompt
from evosyn.records import Training


class ServerError(RuntimeError):
    """The model server for a checkpoint did not come up."""


class MissingToolError(RuntimeError):
    """A command the SFT learner runs is not installed where it runs; the message says how."""


def require_command(command: Sequence[str], what: str, install: str) -> None:
    """MissingToolError unless ``command``'s program is on this machine's PATH."""
    program = command[0] if command else ""
    if not program or shutil.which(program) is None:
        raise MissingToolError(
            f"{what} command {program!r} not found on {socket.gethostname()}: {install}"
        )


def visible_gpus() -> int | None:
    """CUDA devices ``nvidia-smi`` lists on this machine; None when there is no ``nvidia-smi``."""
    if shutil.which("nvidia-smi") is None:
        return None
    done = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return 0
    return sum(line.startswith("GPU ") for line in done.stdout.splitlines())


def require_devices(recipe: TrainRecipe) -> None:
    """MissingToolError unless the recipe trains on cpu or this machine shows its CUDA devices."""
    if recipe.device == "cpu":
        return
    found = visible_gpus()
    if found is not None and found >= recipe.gpus:
        return
    shows = "no nvidia-smi" if found is None else f"{found} CUDA device(s)"
    raise MissingToolError(
        f"the recipe trains on {recipe.gpus} CUDA device(s) but {socket.gethostname()} has "
        f"{shows}: run training on the gpu pool, or set agents.learner.recipe.device: cpu "
        "for a CPU smoke run"
    )


def dataset_digest(files: Sequence[Path]) -> str:
    """``sha256:`` digest of the exported files' bytes, in order."""
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return f"sha256:{digest.hexdigest()}"


def launcher_env(recipe: TrainRecipe) -> dict[str, str]:
    """Environment of ``llamafactory-cli train``: torchrun over ``recipe.gpus`` devices.

    On the CPU the job is one process (DeepSpeed's CPU accelerator, gloo).
    """
    env = {"DISABLE_VERSION_CHECK": "1"}
    processes = recipe.gpus
    if recipe.device == "cpu":
        # A CPU run stays on the CPU even where a GPU happens to be visible, in one process.
        env["CUDA_VISIBLE_DEVICES"] = ""
        processes = 1
    # LLaMA-Factory runs DeepSpeed only under torchrun, on a single device too.
    if processes > 1 or recipe.deepspeed != "none":
        env |= {"FORCE_TORCHRUN": "1", "NPROC_PER_NODE": str(processes)}
    return env


def render_serve_command(
    template: Sequence[str], checkpoint: str, name: str, port: int, max_len: int
) -> list[str]:
    """The model-server command line for ``checkpoint`` from the configured template."""
    values = {"checkpoint": checkpoint, "name": name, "port": str(port), "max_len": str(max_len)}
    return [part.format(**values) for part in template]


def wait_ready(
    base_url: str,
    timeout_s: float,
    process: subprocess.Popen[bytes] | None,
    log: Path | None = None,
) -> None:
    """Poll ``{base_url}/models`` until it answers; ServerError on exit or timeout.

    The error of a server that exited ends with the tail of its ``log``.
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            tail = log.read_text(errors="replace")[-1500:] if log and log.exists() else ""
            where = f" (log {log}):\n{tail}" if log else ""
            raise ServerError(f"model server exited with status {process.returncode}{where}")
        try:
            with urllib.request.urlopen(f"{base_url}/models", timeout=5):
                return
        except (urllib.error.URLError, OSError):
            time.sleep(1.0)
    raise ServerError(f"model server at {base_url} not ready after {timeout_s:.0f}s")


class SFTLearner:
    """A task agent fine-tuned with LLaMA-Factory and evaluated through τ²-bench.

    Args:
        cfg: The campaign config (``agents.learner``, ``llm``, the domain, and ``lake.root``,
            which scopes the spend caps its gateways count against).
        settings: Its own settings; default: those of ``cfg`` (the RL learner serves with its
            own).
    """

    name = "sft"

    def __init__(self, cfg: CampaignConfig, settings: SFTSettings | None = None) -> None:
        self.cfg = cfg
        self.settings = (
            settings if settings is not None else cfg.agents.learner.kind_settings(SFTSettings)
        )
        self.recipe = TrainRecipe.model_validate(self.settings.recipe)
        self.planted: tuple[Weakness, ...] = ()
        # A running endpoint needs no checkpoint fetched from the lake.
        self.reads: frozenset[LakeInput] = frozenset(
            {"examples", "tasks"} if self.settings.endpoint else {"examples", "tasks", "checkpoint"}
        )

    def preflight(self, stage: Literal["train", "evaluate"]) -> None:
        """MissingToolError, in one line, unless this machine can run ``stage``.

        Training needs the training command and, for a cuda recipe, its devices; evaluation
        needs the serving command unless an endpoint is configured.
        """
        if stage == "train":
            require_command(
                self.settings.train_command,
                "training",
                "install the training stack on this worker (pip install -e '.[train]' on a GPU "
                "machine, make train-env on a CPU one) or set agents.learner.train_command",
            )
            require_devices(self.recipe)
        elif not self.settings.endpoint:
            require_command(
                self.settings.serve_command,
                "serving",
                "install vLLM on this worker (pip install -e '.[serve]'), set "
                "agents.learner.serve_command, or agents.learner.endpoint to a running server",
            )

    def answers(self, training: Training) -> bool:
        """A succeeded SFT training with the asked recipe.

        A Qwen3-8B checkpoint must not stand in for a request with another base model or
        schedule.
        """
        if not succeeded_by(training, self.name):
            return False
        asked = self.recipe.model_dump()
        return {key: training.recipe.get(key) for key in asked} == asked

    # ---------------------------------------------------------------- training

    def render(self, run_dir: Path, dataset: str, dataset_dir: Path) -> Path:
        """Write ``train.yaml`` (and ``ds_config.json``) for the run; the YAML's path."""
        ds_path: str | None = None
        ds_config = self.recipe.deepspeed_config()
        if ds_config is not None:
            ds_file = run_dir / "ds_config.json"
            ds_file.write_text(json.dumps(ds_config, indent=2))
            ds_path = str(ds_file)
        args = self.recipe.llamafactory_args(
            dataset, str(dataset_dir), str(run_dir / "output"), ds_path
        )
        train_yaml = run_dir / "train.yaml"
        train_yaml.write_text(yaml.safe_dump(args, sort_keys=False))
        return train_yaml

    def train(self, data: TrainingData, round: int, training_id: str) -> Trained:
        """Export D_<=round and run the training command; the record and the checkpoint folder.

        Call :meth:`preflight` first (the train task does).
        """
        campaign_id = data.campaign_id
        run_dir = Path(self.settings.work_dir).absolute() / campaign_id / training_id
        run_dir.mkdir(parents=True, exist_ok=True)
        record: dict[str, Any] = {
            "campaign_id": campaign_id,
            "round": round,
            "training_id": training_id,
            "learner": self.name,
            "recipe": self.recipe.model_dump(),
        }
        try:
            report = export_sft(data, run_dir / "data", recipe=self.recipe)
        except ExportError as exc:
            failed = Training(
                **record, dataset_snapshot="", n_samples=0, status="failed", error=str(exc)
            )
            return Trained(training=failed)
        data_files = [Path(f) for f in report.files if f.endswith(".json")]
        record |= {"dataset_snapshot": dataset_digest(data_files), "n_samples": report.n_samples}
        train_yaml = self.render(run_dir, report.dataset, run_dir / "data")
        command = [*self.settings.train_command, str(train_yaml)]
        record["recipe"] |= {"command": command, "dataset": report.dataset}
        started = time.monotonic()
        log = run_dir / "train.log"
        with log.open("wb") as out:
            done = subprocess.run(
                command,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, **launcher_env(self.recipe)},
                check=False,
            )
        seconds = time.monotonic() - started
        output = run_dir / "output"
        if done.returncode != 0 or not (output / "config.json").exists():
            tail = log.read_text(errors="replace")[-2000:]
            why = f"exit status {done.returncode}" if done.returncode else "no config.json saved"
            failed = Training(
                **record, seconds=seconds, status="failed", error=f"{why}; log tail:\n{tail}"
            )
            return Trained(training=failed)
        training = Training(**record, seconds=seconds, status="succeeded")
        return Trained(training=training, checkpoint=output)

    # ---------------------------------------------------------------- evaluation

    def system_prompt(self, task: Task) -> str:
        """The system prompt of every training sample: τ²-bench's stock agent prompt."""
        return stock_system_prompt(get_domain(self.cfg.campaign.domain))

    @contextmanager
    def served(self, training: Training, checkpoint: Path | None) -> Iterator[str]:
        """The base URL of an OpenAI-compatible server of the training's local ``checkpoint``."""
        if self.settings.endpoint:
            yield self.settings.endpoint.rstrip("/")
            return
        if checkpoint is None:
            raise ServerError(f"training {training.training_id} has no checkpoint to serve")
        port = self.settings.serve_port
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                raise ServerError(f"port {port} is taken: set agents.learner.serve_port")
        command = render_serve_command(
            self.settings.serve_command,
            str(checkpoint),
            training.training_id,
            port,
            self.recipe.cutoff_len + 4096,
        )
        # The server logs every request: to its own file (named in any error), not the worker's
        # log, and not beside the checkpoint, which may be in the lake.
        log = Path(tempfile.mkdtemp(prefix="evosyn-serve-")) / f"{training.training_id}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
            try:
                base_url = f"http://127.0.0.1:{port}/v1"
                wait_ready(base_url, self.settings.serve_timeout_s, process, log)
                yield base_url
            finally:
                process.terminate()
                try:
                    process.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    process.kill()

    def evaluate(
        self, training: Training, items: Sequence[DiagnosticItem], inputs: EvalInputs
    ) -> Evaluation:
        """τ²-bench episodes of the served checkpoint, with infra failures and model calls.

        ``inputs`` holds the items' tasks and the local copy of the checkpoint.
        """
        if training.status != "succeeded":
            raise ServerError(f"training {training.training_id} failed: nothing to evaluate")
        llm = self.cfg.llm
        with self.served(training, inputs.checkpoint) as base_url:
            # A server we start serves the checkpoint under the training id; an endpoint from
            # the config serves llm.roles.learner.model when one is set.
            configured = llm.roles.get("learner")
            keep = self.settings.endpoint and configured is not None and configured.model
            model = None if keep else f"openai/{training.training_id}"
            agent, user = learner_gateways(self.cfg, training, model=model, api_base=base_url)
            runner = EpisodeRunner(
                self.cfg.campaign.domain,
                agent,
                user,
                self.system_prompt,
                episode_settings(self.cfg),
                agent_type=TrainedAgent,
            )
            return runner.run(training, inputs.tasks, items)


def episode_settings(cfg: CampaignConfig) -> EpisodeSettings:
    """The episode settings of a campaign's learner section."""
    learner = cfg.agents.learner
    return EpisodeSettings(
        trials=learner.trials,
        max_steps=learner.max_steps,
        infra_retries=learner.infra_retries,
        seed=cfg.campaign.seed,
        concurrency=evaluation_concurrency(cfg),
    )
