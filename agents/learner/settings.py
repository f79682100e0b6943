"""The settings the ICL, SFT and RL learners declare where they register (``base.py``).

Each is written flat under ``agents.learner`` beside the keys every learner shares, and read
with ``cfg.agents.learner.kind_settings(SFTSettings)``. They live apart from the learners: a
config is validated against them, while the learners pull in litellm and τ²-bench.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class ICLSettings(BaseModel):
    """The ICL learner's own settings."""

    model_config = ConfigDict(extra="forbid")

    demonstrations: int = Field(
        default=3, ge=0, description="Verified trajectories shown per task."
    )


class ServingSettings(BaseModel):
    """How a learner with checkpoints (SFT, RL) keeps its runs and serves them to evaluate."""

    model_config = ConfigDict(extra="forbid")

    work_dir: str = Field(
        default=".evosyn-cache/train", description="Local folder of exports and runs."
    )
    endpoint: str | None = Field(
        default=None,
        description="An already-running OpenAI-compatible server of the checkpoint.",
    )
    serve_command: list[str] = Field(
        default_factory=lambda: [
            "vllm",
            "serve",
            "{checkpoint}",
            "--served-model-name",
            "{name}",
            "--port",
            "{port}",
            "--enable-auto-tool-choice",
            "--tool-call-parser",
            "hermes",
            "--max-model-len",
            "{max_len}",
        ],
        description="Server started for a checkpoint ({checkpoint} {name} {port}).",
    )
    serve_port: int = Field(default=8000, ge=1, le=65535, description="Server port.")
    serve_timeout_s: float = Field(
        default=900.0, gt=0, description="Seconds to wait for the server."
    )


class SFTSettings(ServingSettings):
    """The SFT learner's own settings."""

    recipe: dict[str, Any] = Field(
        default_factory=dict,
        description="TrainRecipe fields (model, epochs, gpus, ...); paper defaults.",
    )
    train_command: list[str] = Field(
        default_factory=lambda: ["llamafactory-cli", "train"],
        description="Command the rendered YAML is appended to.",
    )


class RLSettings(ServingSettings):
    """The RL learner's own settings; it serves and evaluates as the SFT learner does."""

    rl: dict[str, Any] = Field(
        default_factory=dict,
        description="RLRecipe fields (model, generations, max_steps, ...); GRPO "
        "from Qwen3-8B by default.",
    )
    rl_python: str | None = Field(
        default=None,
        description="Interpreter with torch, TRL and LLaMA-Factory that runs its "
        "GRPO script; None: the interpreter running evosyn.",
    )
