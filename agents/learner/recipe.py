"""The SFT training recipe, rendered to a LLaMA-Factory YAML and a DeepSpeed config.

Defaults are the paper's: full-parameter SFT of Qwen3-8B, cutoff 16,384 tokens, 6 epochs,
learning rate 1e-5 with cosine decay and 10% warm-up, bf16, FlashAttention-2, one sample per
device with 2 accumulation steps over 8 GPUs (global batch 16), DeepSpeed ZeRO-3.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class TrainRecipe(BaseModel):
    """How the task agent is fine-tuned on the exported verified data."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(
        default="Qwen/Qwen3-8B",
        description="Base model: a Hugging Face id, a local folder or an s3:// prefix.",
    )
    template: str = Field(default="qwen3", description="LLaMA-Factory chat template.")
    finetuning: Literal["full", "lora"] = Field(default="full", description="Full or LoRA SFT.")
    cutoff_len: int = Field(default=16_384, ge=256, description="Tokens per sample, at most.")
    epochs: float = Field(default=6.0, gt=0, description="Passes over the data.")
    learning_rate: float = Field(default=1e-5, gt=0, description="Peak learning rate.")
    lr_scheduler: Literal["cosine", "linear", "constant"] = Field(
        default="cosine", description="Decay after warm-up."
    )
    warmup_ratio: float = Field(default=0.1, ge=0, lt=1, description="Share of steps warming up.")
    bf16: bool = Field(default=True, description="bfloat16 training (off on CPU).")
    flash_attn: Literal["fa2", "sdpa", "disabled", "auto"] = Field(
        default="fa2", description="Attention kernel."
    )
    per_device_batch: int = Field(default=1, ge=1, description="Samples per device and step.")
    grad_accum: int = Field(default=2, ge=1, description="Gradient-accumulation steps.")
    gpus: int = Field(default=8, ge=1, description="Devices the launcher spreads the job over.")
    device: Literal["cuda", "cpu"] = Field(
        default="cuda",
        description="Where training runs: cuda needs ``gpus`` visible CUDA devices (checked "
        "before training); cpu is for smoke runs and CI.",
    )
    deepspeed: Literal["zero3", "zero2", "none"] = Field(
        default="zero3", description="DeepSpeed ZeRO stage, or none."
    )
    lora_rank: int = Field(default=16, ge=1, description="LoRA rank (finetuning: lora).")
    lora_target: str = Field(default="all", description="LoRA target modules (finetuning: lora).")
    max_steps: int | None = Field(
        default=None, ge=1, description="Stop after this many steps (smoke runs); None: epochs."
    )
    logging_steps: int = Field(default=10, ge=1, description="Steps between loss logs.")

    @property
    def global_batch(self) -> int:
        """Samples per optimizer step over all devices."""
        return self.per_device_batch * self.grad_accum * self.gpus

    def llamafactory_args(
        self,
        dataset: str,
        dataset_dir: str,
        output_dir: str,
        deepspeed_config: str | None = None,
    ) -> dict[str, Any]:
        """The keys of a ``llamafactory-cli train`` YAML for ``dataset`` in ``dataset_dir``."""
        args: dict[str, Any] = {
            "model_name_or_path": self.model,
            "trust_remote_code": True,
            "stage": "sft",
            "do_train": True,
            "finetuning_type": self.finetuning,
            "dataset": dataset,
            "dataset_dir": dataset_dir,
            "template": self.template,
            "cutoff_len": self.cutoff_len,
            "overwrite_cache": True,
            "output_dir": output_dir,
            "overwrite_output_dir": True,
            "save_strategy": "epoch" if self.max_steps is None else "no",
            "logging_steps": self.logging_steps,
            "plot_loss": True,
            "per_device_train_batch_size": self.per_device_batch,
            "gradient_accumulation_steps": self.grad_accum,
            "learning_rate": self.learning_rate,
            "num_train_epochs": self.epochs,
            "lr_scheduler_type": self.lr_scheduler,
            "warmup_ratio": self.warmup_ratio,
            "bf16": self.bf16,
            "flash_attn": self.flash_attn,
            "report_to": "none",
            # all_results.json then holds effective_tokens_per_sec, the training throughput.
            "include_effective_tokens_per_second": True,
        }
        if self.max_steps is not None:
            args["max_steps"] = self.max_steps
        if self.finetuning == "lora":
            args |= {"lora_rank": self.lora_rank, "lora_target": self.lora_target}
        if deepspeed_config is not None and self.deepspeed != "none":
            args["deepspeed"] = deepspeed_config
        return args

    def deepspeed_config(self) -> dict[str, Any] | None:
        """The DeepSpeed JSON config; ``auto`` values are filled in by the HF trainer."""
        if self.deepspeed == "none":
            return None
        zero: dict[str, Any] = {
            "stage": 3 if self.deepspeed == "zero3" else 2,
            "overlap_comm": False,
            "contiguous_gradients": True,
            "reduce_bucket_size": "auto",
        }
        if self.deepspeed == "zero3":
            zero |= {
                "sub_group_size": 1_000_000_000,
                "stage3_prefetch_bucket_size": "auto",
                "stage3_param_persistence_threshold": "auto",
                "stage3_max_live_parameters": 1_000_000_000,
                "stage3_max_reuse_distance": 1_000_000_000,
                # Full weights on save, so the checkpoint serves directly with vLLM.
                "stage3_gather_16bit_weights_on_model_save": True,
            }
        else:
            zero |= {"allgather_partitions": True, "reduce_scatter": True}
        return {
            "train_batch_size": "auto",
            "train_micro_batch_size_per_gpu": "auto",
            "gradient_accumulation_steps": "auto",
            "gradient_clipping": "auto",
            "zero_allow_untested_optimizer": True,
            "bf16": {"enabled": "auto"},
            "fp16": {"enabled": "auto", "loss_scale": 0, "initial_scale_power": 16},
            "zero_optimization": zero,
        }
