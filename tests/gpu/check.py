"""The steps of tests/gpu/check.sh: a tiny Qwen3 trained, served and evaluated by the learner.

Run by check.sh after its preflight (``python -m tests.gpu.check --device cuda|cpu ...``). The
steps are the learner's own: ``train_learner`` (``SFTLearner.train``: export, the rendered recipe
and DeepSpeed config, ``llamafactory-cli train``, the checkpoint uploaded to the lake) and
``evaluate_learner`` (the checkpoint served by the configured command, τ²-bench episodes, one
``evaluations`` row each); then the same two for the RL learner (``RLLearner.train``: TRL's
GRPOTrainer from the SFT checkpoint over the round's verified tasks, rewards from the episode
API; its checkpoint served and evaluated the same way, one trial per task). Only the
substitutions differ by device:

- ``cuda``: bf16, DeepSpeed ZeRO-3 on one GPU, served by the default ``vllm serve`` command
  (hermes tool parser);
- ``cpu``: fp32, DeepSpeed ZeRO-3 on DeepSpeed's CPU accelerator (gloo), served by
  ``llamafactory-cli api`` (docs/training.md, "on a CPU").

The data is τ²-bench's mock domain synthesized by ``evosyn synth``; the episodes are its five
official test tasks, two trials each, against a scripted user simulator on a loopback port. Each
step prints one ``step ...`` line with its seconds; the figures are printed as ``figure NAME VALUE``
lines, and the last line is ``gpu-check: OK ...`` or the script exits non-zero.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from evosyn.agents.learner.rl import METRICS_FILE
from evosyn.agents.learner.settings import ServingSettings, SFTSettings
from evosyn.config import CampaignConfig, LearnerSection, load_config
from evosyn.records import EvalResult, LLMCall
from evosyn.storage import Lake
from evosyn.tasks.learning import evaluate_learner, train_learner
from tests.openai_server import OpenAIServer
from tests.samples import free_port

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "tests/agents/learner/tiny_qwen3.py"
CAMPAIGN = REPO / "deployments/campaigns/mock-offline.yaml"
CAMPAIGN_ID = "gpu-check"
EPISODES = 10  # mock's five official test tasks, two trials each
TRIALS = 2
RL_EPISODES = 5  # the RL checkpoint: one trial each
# The RL learner's own campaign (the same synthesis): a round's evaluation rows are stored under
# the split's name, so a second learner evaluated on the same round would replace the first's.
RL_CAMPAIGN_ID = "gpu-check-rl"


def _run(command: list[str]) -> str:
    """Run ``command``; its stdout, or a CalledProcessError after printing its output's tail."""
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = (done.stdout + done.stderr)[-3000:]
        print(f"{' '.join(command)} exited {done.returncode}:\n{tail}")
        done.check_returncode()
    return done.stdout


def _step(name: str, started: float, detail: str = "") -> None:
    print(f"step {name} {time.monotonic() - started:.1f}s{': ' + detail if detail else ''}")
    sys.stdout.flush()


def serve_command(device: str) -> list[str]:
    """The learner's serving command: vLLM's default on a GPU, LLaMA-Factory's API on a CPU."""
    if device == "cuda":
        return SFTSettings().serve_command
    return [
        "env",
        "API_PORT={port}",
        "API_MODEL_NAME={name}",
        "DISABLE_VERSION_CHECK=1",
        "llamafactory-cli",
        "api",
        "--model_name_or_path",
        "{checkpoint}",
        "--template",
        "qwen3",
        "--infer_backend",
        "huggingface",
    ]


def config(args: argparse.Namespace, model: Path, user_url: str) -> CampaignConfig:
    """The mock campaign with the SFT learner of the check."""
    cuda = args.device == "cuda"
    recipe = {
        "model": str(model),
        "cutoff_len": 2048,
        "bf16": cuda,
        "flash_attn": "sdpa",
        "gpus": 1,
        "device": args.device,
        "deepspeed": "zero3",
        "grad_accum": 1,
        "max_steps": args.steps,
        "logging_steps": 1,
        "learning_rate": 1e-3,
    }
    overrides = [
        f"lake.root={args.work / 'lake'}",
        "campaign.rounds=1",
        "agents.learner.kind=sft",
        "agents.learner.weaknesses=[]",  # the base campaign's simulated learner's
        "agents.learner.dispatch=inline",
        f"agents.learner.trials={TRIALS}",
        f"agents.learner.recipe={json.dumps(recipe)}",
        "agents.learner.train_command=['llamafactory-cli', train]",
        f"agents.learner.work_dir={args.work / 'train'}",
        f"agents.learner.serve_command={json.dumps(serve_command(args.device))}",
        f"agents.learner.serve_port={free_port()}",
        "agents.learner.serve_timeout_s=400",
        "agents.learner.max_steps=6",
        "agents.learner.infra_retries=0",
        f"llm.default.api_base={user_url}",
        "llm.default.max_attempts=1",
        "llm.default.timeout=120",
        f"llm.roles.learner.max_tokens={args.max_tokens}",
        "llm.roles.user_simulator.model=openai/user-model",
    ]
    return load_config(CAMPAIGN, overrides)


def synth_command(args: argparse.Namespace, campaign_id: str) -> list[str]:
    """``evosyn synth`` of the check's 12 mock blueprints into ``campaign_id``."""
    return [
        str(Path(sys.executable).parent / "evosyn"),
        "synth",
        "--domain",
        "mock",
        "--n",
        "12",
        "--seed",
        "5",
        "--campaign-id",
        campaign_id,
        "--set",
        f"lake.root={args.work / 'lake'}",
    ]


def rl_config(
    args: argparse.Namespace, cfg: CampaignConfig, start: str, steps: int
) -> CampaignConfig:
    """``cfg`` with the RL learner: GRPO from the SFT checkpoint ``start``."""
    cuda = args.device == "cuda"
    recipe = {
        "model": start,
        "generations": 8 if cuda else 4,
        "prompts_per_step": 2 if cuda else 1,
        "max_steps": steps,
        "learning_rate": 1e-5,
        "bf16": cuda,
        "gradient_checkpointing": False,
        "device": args.device,
        # The tiny tokenizer spells a mock prompt in 2,000 to 4,500 tokens.
        "cutoff_len": 8192,
        "max_completion_tokens": args.max_tokens,
    }
    # The SFT learner's shared and serving settings; its recipe and training command are SFT's.
    section = cfg.agents.learner
    learner = LearnerSection.model_validate(
        section.model_dump(include=set(LearnerSection.model_fields))
        | section.kind_settings(ServingSettings).model_dump(
            include=set(ServingSettings.model_fields)
        )
        | {"kind": "rl", "rl": recipe, "rl_python": args.train_python, "trials": 1}
    )
    return cfg.model_copy(update={"agents": cfg.agents.model_copy(update={"learner": learner})})


def training_figures(checkpoint: Path) -> dict[str, Any]:
    """LLaMA-Factory's own training metrics (``all_results.json`` beside the weights)."""
    results: dict[str, Any] = json.loads((checkpoint / "all_results.json").read_text())
    return results


def serving_figures(calls: list[LLMCall]) -> dict[str, float]:
    """Tokens and seconds of the learner's model calls (sequential, one episode at a time)."""
    ok = [c for c in calls if c.role == "learner" and c.outcome == "ok"]
    seconds = sum(c.latency_s for c in ok)
    out = sum(c.tokens_out for c in ok)
    total = out + sum(c.tokens_in for c in ok)
    return {
        "calls": len(ok),
        "completion_tokens": out,
        "generation_tokens_per_s": out / seconds if seconds else 0.0,
        "prompt_and_generation_tokens_per_s": total / seconds if seconds else 0.0,
    }


def main() -> int:
    """Run the steps; 0 when the SFT checkpoint's 10 episodes and the RL one's 5 landed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["cuda", "cpu"], required=True)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--train-python", required=True, help="LLaMA-Factory's interpreter.")
    parser.add_argument("--steps", type=int, default=None, help="Training steps.")
    parser.add_argument("--max-tokens", type=int, default=None, help="Tokens per learner turn.")
    parser.add_argument("--rl-steps", type=int, default=None, help="GRPO steps.")
    args = parser.parse_args()
    args.steps = args.steps or (30 if args.device == "cuda" else 3)
    args.rl_steps = args.rl_steps or (10 if args.device == "cuda" else 2)
    args.max_tokens = args.max_tokens or (256 if args.device == "cuda" else 32)
    os.environ.setdefault("OPENAI_API_KEY", "sk-check")  # the scripted user simulator's

    started = time.monotonic()
    model = args.work / "tiny-qwen3"
    built = _run([args.train_python, str(TINY), "build", str(model)])
    _step("build-tiny-qwen3", started, built.strip().splitlines()[-1])

    started = time.monotonic()
    for campaign_id in (CAMPAIGN_ID, RL_CAMPAIGN_ID):
        _run(synth_command(args, campaign_id))
    _step("synthesize", started, "12 mock blueprints twice (SFT and RL), programmatic roles")

    with OpenAIServer() as user:
        cfg = config(args, model, user.url)
        sft = cfg.agents.learner.kind_settings(SFTSettings)
        recipe = sft.recipe
        command = [p for p in sft.serve_command if p != "env" and "=" not in p]
        print(
            f"gpu-check: device {args.device}, deepspeed {recipe['deepspeed']}, "
            f"bf16 {recipe['bf16']}, serving by {' '.join(command[:2])}"
        )
        started = time.monotonic()
        training = train_learner.fn(cfg, CAMPAIGN_ID, 1)
        assert training.checkpoint_uri is not None
        trained = training_figures(Path(training.checkpoint_uri))
        _step(
            "train",
            started,
            f"{training.n_samples} samples, {args.steps} steps, "
            f"train_runtime {trained['train_runtime']:.1f}s, checkpoint {training.checkpoint_uri}",
        )

        started = time.monotonic()
        results = evaluate_learner.fn(cfg, CAMPAIGN_ID, 1, "test")
        _step("evaluate", started, f"{len(results)} episodes scored")

        rl_cfg = rl_config(args, cfg, training.checkpoint_uri, args.rl_steps)
        started = time.monotonic()
        rl_training = train_learner.fn(rl_cfg, RL_CAMPAIGN_ID, 1)
        assert rl_training.checkpoint_uri is not None
        rl = json.loads((Path(rl_training.checkpoint_uri) / METRICS_FILE).read_text())
        _step(
            "rl-train",
            started,
            f"{rl['prompts']} prompts, {rl['global_step']} GRPO steps in {rl['seconds']:.1f}s "
            f"from the SFT checkpoint, checkpoint {rl_training.checkpoint_uri}",
        )
        started = time.monotonic()
        rl_results = evaluate_learner.fn(rl_cfg, RL_CAMPAIGN_ID, 1, "test")
        _step("rl-evaluate", started, f"{len(rl_results)} episodes scored")

    lake = Lake(str(args.work / "lake"))
    rows = lake.read(EvalResult, CAMPAIGN_ID, 1)
    rl_rows = lake.read(EvalResult, RL_CAMPAIGN_ID, 1)
    served = serving_figures(lake.read(LLMCall, CAMPAIGN_ID, 1))
    rewards = [step["reward"] for step in rl["steps"]]
    figures = {
        "evaluations_rows": len(rows),
        "training_tokens_per_s": trained.get("effective_tokens_per_sec", 0.0),
        "training_samples_per_s": trained["train_samples_per_second"],
        "learner_calls": served["calls"],
        "generation_tokens_per_s": served["generation_tokens_per_s"],
        "prompt_and_generation_tokens_per_s": served["prompt_and_generation_tokens_per_s"],
        "rl_steps": rl["global_step"],
        "rl_reward_first_step": f"{rewards[0]:.3f}",
        "rl_reward_last_step": f"{rewards[-1]:.3f}",
        "rl_train_seconds": rl["train_runtime"],
        "rl_evaluations_rows": len(rl_rows),
    }
    for name, value in figures.items():
        shown = f"{value:.1f}" if isinstance(value, float) else str(value)
        print(f"figure {name} {shown}")
    ends = sorted({(r.failure_reason or "success").split(":")[0] for r in rows})
    print(f"episodes end: {', '.join(ends)}")
    if len(rows) != EPISODES or {r.training_id for r in rows} != {training.training_id}:
        print(f"gpu-check: FAILED: {len(rows)} evaluations rows, expected {EPISODES}")
        return 1
    rl_trained = {r.training_id for r in rl_rows} == {rl_training.training_id}
    if rl["global_step"] != args.rl_steps or len(rl_rows) != RL_EPISODES or not rl_trained:
        print(
            f"gpu-check: FAILED: RL ran {rl['global_step']} of {args.rl_steps} steps, "
            f"{len(rl_rows)} evaluations rows of {RL_EPISODES}"
        )
        return 1
    if not figures["training_tokens_per_s"] or not served["generation_tokens_per_s"]:
        print("gpu-check: FAILED: a tokens/s figure is missing")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
