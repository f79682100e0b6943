"""The RL learner's GRPO steps, run in the training environment (torch, TRL, LLaMA-Factory).

``python rl_train.py RUN_JSON``, started by ``RLLearner.train`` (agents/learner/rl.py), which
wrote ``RUN_JSON``: the recipe, the prompt rows (JSONL) and the URL of its scoring endpoint.
This script imports nothing of evosyn (the training environment need not have it):

1. renders each row (system prompt, the conversation as the SFT export writes it, tools) with
   LLaMA-Factory's chat template, as SFT renders a training sample, up to the assistant's
   turn; rows over ``cutoff_len`` tokens are left out and counted;
2. runs TRL's ``GRPOTrainer`` on the rendered prompts; its one reward function decodes each
   sampled turn (special tokens skipped, as a server decodes a reply), reads its tool calls
   with the template's extractor, and posts the turns to the scoring endpoint, which answers
   the replay verifier's reward of the episode with the turn in place;
3. saves the weights (LoRA merged) and the tokenizer with its chat template to
   ``output_dir``, with ``rl_metrics.json``: steps, per-step reward and loss, prompt counts.

Every scored turn is appended to ``rollouts`` (JSONL): step, row, reward, termination reason.
"""

from __future__ import annotations

import json
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any


def load_rows(path: Path) -> list[dict[str, Any]]:
    """The prompt rows, in file order."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def render(template: Any, tokenizer: Any, row: dict[str, Any]) -> list[int]:
    """The prompt ids of ``row``: its turns, then the assistant's, as SFT renders a sample."""
    turns = [*row["turns"], {"role": "assistant", "content": ""}]
    ids, _ = template.encode_oneturn(tokenizer, turns, row["system"], row["tools"])
    return list(ids)


def assistant_message(template: Any, text: str, turn: int) -> dict[str, Any]:
    """A sampled reply in OpenAI chat format: its thinking dropped, its calls parsed.

    The calls are read with the template's own tool extractor (LLaMA-Factory's API server reads
    a reply with it; for Qwen it reads the hermes ``<tool_call>`` blocks vLLM's parser reads).
    """
    result = template.extract_tool(template.remove_thought(text))
    if isinstance(result, list):
        calls = [
            {
                "id": f"call_rl{turn}_{index}",
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for index, call in enumerate(result)
        ]
        return {"role": "assistant", "content": "", "tool_calls": calls}
    return {"role": "assistant", "content": result}


def post(url: str, payload: dict[str, Any]) -> dict[str, Any]:
    """POST ``payload`` as JSON; the JSON answer (an HTTPError says why it failed)."""
    request = urllib.request.Request(
        url, data=json.dumps(payload).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=600) as response:
        answer: dict[str, Any] = json.loads(response.read())
    return answer


def main(run_json: Path) -> int:
    """Train; 0 when the weights were saved."""
    import torch  # type: ignore[import-not-found]
    from datasets import Dataset
    from llamafactory.data import get_template_and_fix_tokenizer  # type: ignore[import-not-found]
    from llamafactory.hparams import DataArguments  # type: ignore[import-not-found]
    from transformers import (  # type: ignore[import-not-found]
        AutoModelForCausalLM,
        AutoTokenizer,
    )
    from trl import GRPOConfig, GRPOTrainer  # type: ignore[import-not-found]

    run = json.loads(run_json.read_text())
    recipe = run["recipe"]
    started = time.monotonic()
    tokenizer = AutoTokenizer.from_pretrained(recipe["model"])
    template = get_template_and_fix_tokenizer(tokenizer, DataArguments(template=recipe["template"]))
    rows = load_rows(Path(run["prompts"]))
    prompts: list[dict[str, Any]] = []
    over = 0
    for row in rows:
        ids = render(template, tokenizer, row)
        if len(ids) > recipe["cutoff_len"]:
            over += 1
            continue
        prompts.append(
            {
                "prompt": tokenizer.decode(ids, skip_special_tokens=False),
                "row": row["index"],
                "prompt_tokens": len(ids),
            }
        )
    print(f"rl-train: {len(prompts)} prompts of {len(rows)} rows ({over} over cutoff_len)")
    if not prompts:
        print("rl-train: no prompt within cutoff_len", file=sys.stderr)
        return 1

    rollouts = Path(run["rollouts"])
    state: dict[str, Any] = {"batch": 0}

    def tau2_reward(
        prompts: list[str], completions: list[str], completion_ids: list[list[int]], **kw: Any
    ) -> list[float]:
        """The replay verifier's reward of each sampled turn, from the scoring endpoint."""
        texts = tokenizer.batch_decode(completion_ids, skip_special_tokens=True)
        turns = [assistant_message(template, text, i) for i, text in enumerate(texts)]
        items = [{"row": row, "message": m} for row, m in zip(kw["row"], turns, strict=True)]
        verdicts = post(run["score_url"], {"items": items})["verdicts"]
        step = kw["trainer_state"].global_step
        with rollouts.open("a") as out:
            for item, text, verdict in zip(items, texts, verdicts, strict=True):
                line = {
                    "step": step,
                    "batch": state["batch"],
                    "row": item["row"],
                    "reward": verdict["reward"],
                    "termination_reason": verdict["termination_reason"],
                    "tool_calls": len(item["message"].get("tool_calls") or []),
                    "text": text[:200],
                }
                out.write(json.dumps(line) + "\n")
        state["batch"] += 1
        return [float(v["reward"]) for v in verdicts]

    cpu = recipe["device"] == "cpu"
    bf16 = bool(recipe["bf16"]) and not cpu
    args = GRPOConfig(
        output_dir=run["trainer_dir"],
        per_device_train_batch_size=recipe["prompts_per_step"] * recipe["generations"],
        gradient_accumulation_steps=1,
        num_generations=recipe["generations"],
        max_prompt_length=None,  # over-long prompts were left out above, never cut
        max_completion_length=recipe["max_completion_tokens"],
        temperature=recipe["temperature"],
        max_steps=recipe["max_steps"],
        learning_rate=recipe["learning_rate"],
        lr_scheduler_type="constant",
        beta=recipe["beta"],
        bf16=bf16,
        use_cpu=cpu,
        gradient_checkpointing=recipe["gradient_checkpointing"],
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        seed=recipe["seed"],
        data_seed=recipe["seed"],
        remove_unused_columns=False,
    )
    peft_config = None
    if recipe["finetuning"] == "lora":
        from peft import LoraConfig  # type: ignore[import-not-found]

        peft_config = LoraConfig(
            r=recipe["lora_rank"], target_modules=recipe["lora_target"], task_type="CAUSAL_LM"
        )
    policy = AutoModelForCausalLM.from_pretrained(
        recipe["model"], dtype=torch.bfloat16 if bf16 else torch.float32
    )
    # TRL 0.24 marks a warning as issued in this dict, which transformers 5 models lack.
    if not hasattr(policy, "warnings_issued"):
        policy.warnings_issued = {}
    trainer = GRPOTrainer(
        model=policy,
        reward_funcs=[tau2_reward],
        args=args,
        train_dataset=Dataset.from_list(prompts),
        processing_class=tokenizer,
        peft_config=peft_config,
    )
    result = trainer.train()

    output = Path(run["output_dir"])
    model = trainer.model
    if peft_config is not None:
        model = model.merge_and_unload()
    model.save_pretrained(output)
    tokenizer.save_pretrained(output)
    steps = [entry for entry in trainer.state.log_history if "reward" in entry]
    metrics = {
        "global_step": trainer.state.global_step,
        "rows": len(rows),
        "prompts": len(prompts),
        "prompts_over_cutoff": over,
        "generations": recipe["generations"],
        "train_runtime": result.metrics.get("train_runtime"),
        "seconds": time.monotonic() - started,
        "device": "cpu" if cpu else torch.cuda.get_device_name(0),
        "steps": [
            {
                "step": entry.get("step"),
                "reward": entry.get("reward"),
                "reward_std": entry.get("reward_std"),
                "frac_reward_zero_std": entry.get("frac_reward_zero_std"),
                "loss": entry.get("loss"),
                "completion_length": entry.get("completions/mean_length"),
            }
            for entry in steps
        ],
    }
    (output / run["metrics_file"]).write_text(json.dumps(metrics, indent=2))
    print(f"rl-train: {trainer.state.global_step} steps in {metrics['seconds']:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
