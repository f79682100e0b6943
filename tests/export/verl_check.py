"""Load an `evosyn export verl` folder with verl itself and roll out every row through it.

Run with an interpreter that has verl and evosyn (VERL_PYTHON; see test_export_rl.py):

    python verl_check.py EXPORT_DIR MODEL_DIR

MODEL_DIR holds a tiny Qwen3 (tests/agents/learner/tiny_qwen3.py build). The dataset is read by
verl's ``RLHFDataset`` and batched by its ``collate_fn``; the rollouts run in verl's own
``AgentLoopWorker`` (``generate_sequences``: the agent loop named in the rows, registered from the
export's ``agent_loop.yaml``, then verl's padding and reward placement) against a stand-in for the
rollout server that writes, as a Qwen model would (hermes tool calls, ``<|im_end|>``), either the
verified conversation's agent turns or those turns with one left out. Prints one JSON object: per
row the reward verl placed and the episode API's own reward for the same turns, and what the
response tokens decode to by source.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import verl
from omegaconf import OmegaConf
from tau2.user.user_simulator import UserSimulator
from verl.experimental.agent_loop.agent_loop import AgentLoopWorker
from verl.protocol import DataProto
from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn
from verl.workers.rollout.replica import TokenOutput

from evosyn.agents.episodes import ReplayPolicy, play
from evosyn.agents.episodes.chat import EpisodeRef
from evosyn.agents.episodes.users import split_turns
from evosyn.agents.episodes.verl_loop import episode_env

# A ChatML template with hermes tool calls, in the layout of Qwen's: the tools in the system
# turn, calls as <tool_call> JSON, results as <tool_response> blocks in one user turn.
CHAT_TEMPLATE = (Path(__file__).parent / "chatml_tools.jinja").read_text().strip()


def script_turns(extra_info: dict[str, Any]) -> list[Any]:
    """The agent turns the stand-in policy says for a row: the verified conversation's, and
    for rows with an odd index the same without its last tool call (most often the write)."""
    ref, task = EpisodeRef.from_columns(extra_info)
    item = ref.item(task)
    turns = list(split_turns(item.task, item.reference or []).agent)
    if extra_info["index"] % 2:
        last_call = max(i for i, t in enumerate(turns) if t.tool_calls)
        del turns[last_call]
    return turns


def qwen_text(message: Any) -> str:
    """What a Qwen model writes for a τ²-bench assistant message (hermes tool calls)."""
    if message.tool_calls:
        calls = [
            "<tool_call>\n"
            + json.dumps({"name": c.name, "arguments": c.arguments}, ensure_ascii=False)
            + "\n</tool_call>"
            for c in message.tool_calls
        ]
        return "\n".join(calls)
    return message.content or ""


def first_user_line(prompt: Any) -> str:
    """The first user line of a row's prompt: what the stand-in server knows a row by."""
    return str(next(m["content"] for m in prompt if m["role"] == "user"))


def turn_text(span: str) -> str:
    """The text of a rendered user turn (what lies between its header and its end)."""
    return span.split("<|im_start|>user\n", 1)[-1].split("<|im_end|>", 1)[0]


class ScriptedServer:
    """Stands in for verl's rollout server: each request's next scripted agent turn, as tokens.

    The request's row is found by its prompt's first user line; its turn by the number of
    assistant turns already in the prompt.
    """

    def __init__(self, tokenizer: Any, rows: list[dict[str, Any]]) -> None:
        self.tokenizer = tokenizer
        self.scripts: dict[str, list[str]] = {}
        for row in rows:
            texts = [qwen_text(t) for t in script_turns(row["extra_info"])]
            self.scripts[first_user_line(row["prompt"])] = [*texts, ReplayPolicy.closing]
        #: What was generated, by the row's first user line.
        self.generated: dict[str, list[str]] = {}

    async def generate(
        self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any], **_: Any
    ) -> TokenOutput:
        text = self.tokenizer.decode(prompt_ids)
        first_user = text.split("<|im_start|>user\n", 1)[1].split("<|im_end|>", 1)[0]
        script = self.scripts[first_user]
        turn = text.count("<|im_start|>assistant") - 1  # the last one opens this turn
        reply = script[min(turn, len(script) - 1)]
        self.generated.setdefault(first_user, []).append(reply)
        ids = self.tokenizer.encode(reply + "<|im_end|>", add_special_tokens=False)
        return TokenOutput(token_ids=ids, log_probs=None, stop_reason="completed")


def trainer_config(export: Path, model: Path, manifest: dict[str, Any]) -> Any:
    """verl's own generated PPO config with the export's overrides (its manifest's usage)."""
    generated = Path(verl.__file__).parent / "trainer" / "config" / "_generated_ppo_trainer.yaml"
    config = OmegaConf.load(generated)
    overrides = [line for line in manifest["usage"] if "=" in line]
    overrides += [
        "actor_rollout_ref.rollout.name=vllm",
        f"actor_rollout_ref.model.path={model}",
        # The tiny tokenizer spends more tokens than Qwen's on the same text.
        "data.max_prompt_length=100000",
        "data.max_response_length=100000",
    ]
    config.merge_with_dotlist(overrides)
    config.actor_rollout_ref.model.custom_chat_template = CHAT_TEMPLATE
    return config


async def rollout(worker: AgentLoopWorker, items: list[dict[str, Any]]) -> DataProto:
    proto = DataProto.from_single_dict(collate_fn(items), meta_info={"validate": False})
    result: DataProto = await worker.generate_sequences(proto)
    return result


def main(export: Path, model: Path) -> dict[str, Any]:
    manifest = json.loads((export / "rl_export.json").read_text())
    config = trainer_config(export, model, manifest)
    files = [str(export / f) for f in manifest["files"] if f.endswith(".parquet")]
    worker = AgentLoopWorker(config, llm_client=None)
    tokenizer = worker.tokenizer
    dataset = RLHFDataset(files, tokenizer, config.data, processor=None)
    items = [dataset[i] for i in range(len(dataset))]
    worker.llm_client = ScriptedServer(tokenizer, items)
    result = asyncio.run(rollout(worker, items))

    responses = result.batch["responses"]
    masks = result.batch["response_mask"]
    scores = result.batch["rm_scores"]
    rows = []
    for i, item in enumerate(items):
        sources = result.non_tensor_batch["token_sources"][i]
        length = len(sources)
        mask = masks[i, :length].tolist()
        ids = responses[i, :length].tolist()
        spans: dict[str, list[str]] = {"p": [], "o": [], "u": []}
        start = 0
        for end in range(1, length + 1):
            if end == length or sources[end] != sources[start]:
                spans[sources[start]].append(tokenizer.decode(ids[start:end]))
                start = end
        # The same turns played through the episode API by evosyn itself.
        info = item["extra_info"]
        ref, task = EpisodeRef.from_columns(info)
        said = iter(script_turns(info))

        def policy(_: Any, said: Any = said) -> Any:
            return next(said, None) or {"role": "assistant", "content": ReplayPolicy.closing}

        outcome = play(episode_env(ref.domain).reset(ref.item(task), ref.seed), policy)
        heard = [
            m.content
            for m in outcome.messages
            if m.role == "user" and m.content and not UserSimulator.is_stop(m)
        ]
        rows.append(
            {
                "task_id": ref.task_id,
                "index": int(info["index"]),
                "agent_name": str(item["agent_name"]),
                "verl_reward": float(scores[i].sum()),
                "reward_at_last_token": float(scores[i, length - 1]),
                "episode_reward": outcome.reward,
                "episode_termination": outcome.termination_reason,
                "verl_termination": str(result.non_tensor_batch["termination_reason"][i]),
                "episode_user_lines": heard[1:],  # after the prompt's first line
                "verl_user_lines": [turn_text(span) for span in spans["u"]],
                "generated": worker.llm_client.generated[first_user_line(item["prompt"])],
                "mask_is_policy": mask == [int(c == "p") for c in sources],
                "policy_spans": spans["p"],
                "observation_spans": spans["o"],
                "user_spans": spans["u"],
                "reward_reasons": list(result.non_tensor_batch["reward_reasons"][i]),
            }
        )
    return {
        "verl_version": verl.__version__,
        "dataset_rows": len(dataset),
        "raw_prompt_is_row_prompt": all(
            list(item["raw_prompt"]) == list(item["prompt"]) for item in items
        ),
        "rows": rows,
        "batch_keys": sorted(result.batch.keys()),
        "reward_extra_keys": sorted(result.meta_info.get("reward_extra_keys", [])),
    }


if __name__ == "__main__":
    report = main(Path(sys.argv[1]), Path(sys.argv[2]))
    print(json.dumps(report, default=lambda o: o.tolist() if isinstance(o, np.ndarray) else str(o)))
