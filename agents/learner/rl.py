"""The RL learner: GRPO (TRL's ``GRPOTrainer``) on the round's verified tasks, through the episodes.

The design is *prefix GRPO with the verified continuation*. Every verified task of the round is
replayed through the episode API (:mod:`evosyn.agents.episodes`, the offline scripted user) with
its verified conversation, and each point where the agent is to speak becomes one GRPO prompt:
the conversation so far as SFT trains the learner on it and evaluation shows it (τ²-bench's
stock system prompt, the learner's view written as the SFT export writes a sample, the domain's
tools). The policy samples a group of next assistant turns for a prompt; each is scored by
playing the episode again with that turn in the agent's seat and the verified conversation's
later agent turns after it, to τ²-bench's end, and taking the replay verifier's reward of the
whole episode. A turn earns 1 when the task still succeeds with it in place of the verified one,
and 0 when it breaks the task (a write left out or wrong, a protocol error, an empty turn). GRPO
learns from the differences inside each group.

The scripted user says the verified conversation's user lines whatever the agent says, so a
group of text turns where the verified turn was text mostly scores alike (and gives no
advantage); tool calls and writes are what the reward tells apart. The policy's own later turns
are not played: credit goes to the one turn sampled, with the verified turns as the rest of the
episode, which keeps every reward a verdict of the same verifier on a complete τ²-bench episode.

``train`` builds the prompts here (in the synthesis stack), starts a loopback scoring endpoint
on the episode API, and runs ``rl_train.py`` in the training stack (torch, TRL, LLaMA-Factory:
``agents.learner.rl_python``), which renders the prompts with LLaMA-Factory's template (as SFT
renders a training sample), samples with the model, asks the endpoint for each completion's
reward and saves the trained weights. ``evaluate`` is the SFT learner's: the checkpoint is
served and plays τ²-bench episodes.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from tau2.data_model.message import AssistantMessage, Message, ToolMessage

from evosyn.agents.episodes import (
    EpisodeEnv,
    EpisodeSettings,
    ReplayPolicy,
    RewardVerdict,
    TaskSet,
    TaskSetError,
    play,
)
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
from evosyn.agents.learner.export import RESULT_SEPARATOR, call_value, learner_view
from evosyn.agents.learner.settings import RLSettings, ServingSettings, SFTSettings
from evosyn.agents.learner.sft import MissingToolError, SFTLearner, visible_gpus
from evosyn.config import CampaignConfig
from evosyn.records import Training

#: The script ``train`` runs in the training environment.
TRAIN_SCRIPT = Path(__file__).with_name("rl_train.py")
#: What ``rl_train.py`` writes beside the weights: its steps, rewards and losses.
METRICS_FILE = "rl_metrics.json"


class RLRecipe(BaseModel):
    """How the task agent is trained with GRPO on the round's verified tasks."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(
        default="Qwen/Qwen3-8B",
        description="Where GRPO starts: a Hugging Face id or a local folder: a base model, or an "
        "SFT checkpoint (a training's checkpoint_uri on a local lake).",
    )
    template: str = Field(
        default="qwen3", description="LLaMA-Factory chat template the prompts are rendered with."
    )
    finetuning: Literal["full", "lora"] = Field(
        default="full", description="Full-parameter GRPO, or LoRA (merged into the saved model)."
    )
    lora_rank: int = Field(default=16, ge=1, description="LoRA rank (finetuning: lora).")
    lora_target: str = Field(
        default="all-linear", description="LoRA target modules, as PEFT names them."
    )
    generations: int = Field(
        default=8, ge=2, description="Completions sampled per prompt (GRPO's group size)."
    )
    prompts_per_step: int = Field(default=2, ge=1, description="Prompts per optimizer step.")
    max_steps: int = Field(default=20, ge=1, description="Optimizer steps.")
    learning_rate: float = Field(default=1e-6, gt=0, description="Constant learning rate.")
    beta: float = Field(
        default=0.0, ge=0, description="KL coefficient to the starting model (0: no reference)."
    )
    temperature: float = Field(default=1.0, gt=0, description="Sampling temperature.")
    cutoff_len: int = Field(
        default=16_384,
        ge=256,
        description="Prompt tokens at most; a longer prompt is left out and counted. The served "
        "context at evaluation is this plus 4096, as for SFT.",
    )
    max_completion_tokens: int = Field(
        default=1024, ge=1, description="Tokens of a sampled assistant turn at most."
    )
    max_tasks: int | None = Field(
        default=None, ge=1, description="Verified tasks of the round used at most (first by id)."
    )
    bf16: bool = Field(default=True, description="bfloat16 weights and training (off on CPU).")
    gradient_checkpointing: bool = Field(default=True, description="Trade compute for memory.")
    device: Literal["cuda", "cpu"] = Field(
        default="cuda",
        description="cuda: one visible CUDA device (checked before training); cpu: smoke runs.",
    )
    seed: int = Field(default=0, description="Seed of sampling and of the prompts' order.")


class PromptRow(BaseModel):
    """One GRPO prompt: a verified task's conversation up to an agent turn."""

    model_config = ConfigDict(extra="forbid")

    index: int = Field(ge=0, description="Position in the prompt file; what a score names.")
    task_id: str = Field(description="The verified task.")
    turn: int = Field(ge=0, description="How many agent turns of the verified episode precede.")
    seed: int = Field(description="The episode's seed.")
    system: str = Field(description="The learner's system prompt (τ²-bench's stock prompt).")
    turns: list[dict[str, str]] = Field(
        description="The conversation so far as LLaMA-Factory turns (role user, assistant, "
        "function or observation; content), written as the SFT export writes a sample."
    )
    tools: str = Field(description="The agent's tools: OpenAI function schemas as JSON text.")
    verified_call: bool = Field(description="Whether the verified turn here is a tool call.")


class PromptSet(BaseModel):
    """The prompts of a round and the tasks that gave none, with the reason."""

    model_config = ConfigDict(extra="forbid")

    rows: list[PromptRow]
    rejected: dict[str, str] = Field(
        default_factory=dict, description="Task id -> why it gave no prompt."
    )


# ShareGPT's speakers (the SFT export's) by the role LLaMA-Factory's template renders them as.
_TEMPLATE_ROLES = {
    "human": "user",
    "gpt": "assistant",
    "function_call": "function",
    "observation": "observation",
}


def learner_turns(messages: Sequence[Message]) -> list[dict[str, str]]:
    """``messages`` as LLaMA-Factory turns, written as ``export.to_sharegpt`` writes a sample.

    The learner's view (:func:`~evosyn.agents.learner.export.learner_view`), a call's text
    kept beside it (:func:`~evosyn.agents.learner.export.call_value`), a parallel call's results
    joined into one observation, consecutive lines of one speaker joined; unlike a training
    sample it keeps the closing user line or result, which is the prompt's end.
    """
    turns: list[tuple[str, str]] = []
    previous: Message | None = None
    for m in learner_view(messages):
        if isinstance(m, AssistantMessage) and m.tool_calls:
            text = (m.content or "").strip()
            if turns and turns[-1][0] == "gpt":
                text = "\n".join(t for t in (turns.pop()[1], text) if t)
            turns.append(("function_call", call_value(text, m.tool_calls)))
            previous = m
            continue
        if isinstance(m, ToolMessage):
            role = "observation"
            separator = RESULT_SEPARATOR if isinstance(previous, ToolMessage) else "\n"
        else:
            role = "gpt" if m.role == "assistant" else "human"
            separator = "\n"
        text = m.content or ""
        if turns and turns[-1][0] == role:
            turns[-1] = (role, f"{turns[-1][1]}{separator}{text}")
        else:
            turns.append((role, text))
        previous = m
    return [{"role": _TEMPLATE_ROLES[role], "content": text} for role, text in turns]


def prompt_rows(env: EpisodeEnv, seed: int, max_tasks: int | None = None) -> PromptSet:
    """One prompt per agent turn of each task's verified episode, replayed with ``seed``.

    A task whose verified conversation does not replay to reward 1 gives no prompt (the
    continuation reward would not measure the sampled turn): it is listed with the reason.
    """
    rows: list[PromptRow] = []
    rejected: dict[str, str] = {}
    ids = sorted(env.tasks.ids())[:max_tasks]
    for task_id in ids:
        episode = env.reset(task_id, seed)
        tools = json.dumps(episode.opening.tools, ensure_ascii=False)
        replay = ReplayPolicy()
        found: list[PromptRow] = []
        while not episode.done:
            verified = replay(episode)
            found.append(
                PromptRow(
                    index=len(rows) + len(found),
                    task_id=task_id,
                    turn=episode.policy_turns,
                    seed=seed,
                    system=episode.system_prompt,
                    turns=learner_turns(episode.view()),
                    tools=tools,
                    verified_call=bool(verified.tool_calls),
                )
            )
            episode.step(verified)
        assert episode.outcome is not None
        if not found:
            rejected[task_id] = "the episode ended before the agent spoke"
        elif episode.outcome.reward != 1.0:
            why = "; ".join(episode.outcome.verdict.reasons) or "reward 0"
            rejected[task_id] = f"its verified conversation replays to reward 0: {why}"
        else:
            rows.extend(found)
    return PromptSet(rows=rows, rejected=rejected)


class ScoreItem(BaseModel):
    """A sampled assistant turn for a prompt row."""

    model_config = ConfigDict(extra="forbid")

    row: int = Field(ge=0, description="The prompt row's index.")
    message: dict[str, Any] = Field(description="The assistant turn, OpenAI chat format.")


class ScoreRequest(BaseModel):
    """What ``rl_train.py`` posts to the scoring endpoint."""

    model_config = ConfigDict(extra="forbid")

    items: list[ScoreItem]


class ContinuationScorer:
    """Rewards of sampled turns: the episode replayed with the turn in place of the verified one.

    Args:
        env: The episode environment of the round's tasks (offline scripted user).
        rows: The prompt rows, by index.
    """

    def __init__(self, env: EpisodeEnv, rows: Sequence[PromptRow]) -> None:
        self.env = env
        self.rows = list(rows)

    def score(self, row: int, message: Mapping[str, Any]) -> tuple[RewardVerdict, str]:
        """The verdict of the episode with ``message`` as the agent's turn at ``row``.

        Returns the verdict and τ²-bench's termination reason.

        Raises:
            IndexError: If there is no such row.
        """
        if not 0 <= row < len(self.rows):
            raise IndexError(f"no prompt row {row}: there are {len(self.rows)}")
        prompt = self.rows[row]
        episode = self.env.reset(prompt.task_id, prompt.seed)
        replay = ReplayPolicy()
        while episode.policy_turns < prompt.turn:
            episode.step(replay(episode))
        episode.step(message)
        # The verified turns after this one: ReplayPolicy goes by the turns already taken.
        outcome = play(episode, replay)
        return outcome.verdict, outcome.termination_reason


@contextmanager
def scoring_endpoint(scorer: ContinuationScorer) -> Iterator[str]:
    """A loopback HTTP endpoint of ``scorer``; yields its ``/score`` URL.

    ``POST /score`` takes a :class:`ScoreRequest` and answers ``{"verdicts": [...]}`` in order,
    each a :class:`RewardVerdict` with its ``termination_reason``; a malformed request is a 400
    with an ``error`` line.
    """

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                request = ScoreRequest.model_validate_json(body)
                verdicts = []
                for item in request.items:
                    verdict, reason = scorer.score(item.row, item.message)
                    verdicts.append(
                        verdict.model_dump(mode="json") | {"termination_reason": reason}
                    )
                self._answer(200, {"verdicts": verdicts})
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(part) for part in first["loc"]) or "body"
                self._answer(400, {"error": f"{where}: {first['msg']}"})
            except IndexError as exc:
                self._answer(400, {"error": str(exc)})

        def _answer(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the training log records the rewards."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1})
    thread.daemon = True
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/score"
    finally:
        server.shutdown()
        server.server_close()


class RLLearner:
    """A task agent trained with GRPO on verified tasks and evaluated as the SFT learner is.

    Args:
        cfg: The campaign config (``agents.learner.rl`` is the :class:`RLRecipe`; serving and
            evaluation use the SFT learner's settings).
    """

    name = "rl"

    def __init__(self, cfg: CampaignConfig) -> None:
        self.cfg = cfg
        self.settings = cfg.agents.learner.kind_settings(RLSettings)
        self.recipe = RLRecipe.model_validate(self.settings.rl)
        self.planted: tuple[Weakness, ...] = ()
        # A round continues from the previous round's RL checkpoint ("previous").
        self.reads: frozenset[LakeInput] = frozenset(
            {"examples", "tasks", "previous"}
            if self.settings.endpoint
            else {"examples", "tasks", "checkpoint", "previous"}
        )

    @property
    def python(self) -> str:
        """The training environment's interpreter (``agents.learner.rl_python``)."""
        return self.settings.rl_python or sys.executable

    def server(self) -> SFTLearner:
        """The SFT learner that serves and evaluates this learner's checkpoints.

        Its recipe is this one's model, template and cutoff (the served context).
        """
        recipe = {
            "model": self.recipe.model,
            "template": self.recipe.template,
            "cutoff_len": self.recipe.cutoff_len,
        }
        serving = self.settings.model_dump(include=set(ServingSettings.model_fields))
        return SFTLearner(self.cfg, SFTSettings(**serving, recipe=recipe))

    def preflight(self, stage: Literal["train", "evaluate"]) -> None:
        """MissingToolError, in one line, unless this machine can run ``stage``.

        Training needs an interpreter with torch, TRL and LLaMA-Factory and, for a cuda recipe,
        a CUDA device; evaluation what the SFT learner's needs.
        """
        if stage == "evaluate":
            self.server().preflight("evaluate")
            return
        probe = (
            "import importlib.util, sys; "
            "sys.exit(0 if all(importlib.util.find_spec(m) for m in "
            "('torch', 'trl', 'llamafactory')) else 1)"
        )
        try:
            found = subprocess.run([self.python, "-c", probe], check=False).returncode == 0
        except OSError:
            found = False
        if not found:
            raise MissingToolError(
                f"RL training interpreter {self.python!r} lacks torch, trl or llamafactory: "
                "install the training stack (pip install -e '.[train]'; make train-env on a "
                "CPU) or set agents.learner.rl_python"
            )
        if self.recipe.device == "cuda" and not visible_gpus():
            raise MissingToolError(
                "the RL recipe trains on a CUDA device but none is visible: run training on "
                "the gpu pool, or set agents.learner.rl.device: cpu for a CPU smoke run"
            )

    def answers(self, training: Training) -> bool:
        """A succeeded RL training with the asked recipe."""
        if not succeeded_by(training, self.name):
            return False
        asked = self.recipe.model_dump()
        return {key: training.recipe.get(key) for key in asked} == asked

    # ---------------------------------------------------------------- training

    def round_tasks(self, data: TrainingData, round: int) -> TaskSet:
        """The round's verified tasks (held-out ones are not in ``data``).

        Raises:
            TaskSetError: If the round has none.
        """
        verified = [v for v in data.verified if v.round == round]
        try:
            return TaskSet.from_records(data.tasks.values(), data.trajectories.values(), verified)
        except TaskSetError as exc:
            raise TaskSetError(f"round {round} of {data.campaign_id}: {exc}") from None

    def starting_point(self, data: TrainingData) -> tuple[str, str, str | None]:
        """Where GRPO starts: the weights to load, what they are, and the training that made them.

        The previous round's RL checkpoint when the train task found one (``data.previous``:
        loaded from its local copy, named by its lake URI and training id), otherwise
        ``rl.model`` (named by itself, made by no training of the campaign). The rounds of a
        campaign chain their policies, while each round's GRPO sees only its round's tasks.
        """
        previous, local = data.previous, data.previous_checkpoint
        if previous is None or local is None or previous.checkpoint_uri is None:
            return self.recipe.model, self.recipe.model, None
        return str(local), previous.checkpoint_uri, previous.training_id

    def run_config(self, run_dir: Path, prompts: Path, score_url: str, base: str) -> dict[str, Any]:
        """What ``rl_train.py`` reads: the recipe from ``base``, the files, the scoring endpoint."""
        return {
            "recipe": self.recipe.model_dump() | {"model": base},
            "prompts": str(prompts),
            "score_url": score_url,
            "output_dir": str(run_dir / "output"),
            "trainer_dir": str(run_dir / "trainer"),
            "rollouts": str(run_dir / "rollouts.jsonl"),
            "metrics_file": METRICS_FILE,
        }

    def train(self, data: TrainingData, round: int, training_id: str) -> Trained:
        """GRPO on the round's verified tasks; the record and the checkpoint folder.

        Call :meth:`preflight` first (the train task does).
        """
        run_dir = Path(self.settings.work_dir).absolute() / data.campaign_id / training_id
        run_dir.mkdir(parents=True, exist_ok=True)
        record: dict[str, Any] = {
            "campaign_id": data.campaign_id,
            "round": round,
            "training_id": training_id,
            "learner": self.name,
            "recipe": self.recipe.model_dump(),
        }

        def failed(error: str, seconds: float = 0.0) -> Trained:
            fields = {"dataset_snapshot": "", "n_samples": 0} | record
            training = Training(**fields, seconds=seconds, status="failed", error=error)
            return Trained(training=training)

        try:
            tasks = self.round_tasks(data, round)
        except TaskSetError as exc:
            return failed(str(exc))
        env = EpisodeEnv(tasks, settings=EpisodeSettings(seed=self.recipe.seed))
        built = prompt_rows(env, self.recipe.seed, self.recipe.max_tasks)
        prompts = run_dir / "prompts.jsonl"
        prompts.write_text("".join(row.model_dump_json() + "\n" for row in built.rows))
        (run_dir / "rejected.json").write_text(json.dumps(built.rejected, indent=2))
        snapshot = f"sha256:{hashlib.sha256(prompts.read_bytes()).hexdigest()}"
        record |= {"dataset_snapshot": snapshot, "n_samples": len(built.rows)}
        if not built.rows:
            return failed(f"no prompt from round {round}'s tasks: {built.rejected}")
        command = [self.python, str(TRAIN_SCRIPT), str(run_dir / "run.json")]
        base, base_uri, base_training = self.starting_point(data)
        record["recipe"] |= {
            "command": command,
            "tasks": len({row.task_id for row in built.rows}),
            "base": base_uri,
            "base_training": base_training,
        }
        env_vars = {**os.environ, "DISABLE_VERSION_CHECK": "1"}
        if self.recipe.device == "cpu":
            env_vars["CUDA_VISIBLE_DEVICES"] = ""  # a CPU run stays on the CPU
        started = time.monotonic()
        log = run_dir / "train.log"
        with scoring_endpoint(ContinuationScorer(env, built.rows)) as url:
            config = self.run_config(run_dir, prompts, url, base)
            (run_dir / "run.json").write_text(json.dumps(config, indent=2))
            with log.open("wb") as out:
                done = subprocess.run(
                    command, stdout=out, stderr=subprocess.STDOUT, env=env_vars, check=False
                )
        seconds = time.monotonic() - started
        output = run_dir / "output"
        if done.returncode != 0 or not (output / "config.json").exists():
            tail = log.read_text(errors="replace")[-2000:]
            why = f"exit status {done.returncode}" if done.returncode else "no config.json saved"
            return failed(f"{why}; log tail:\n{tail}", seconds)
        training = Training(**record, seconds=seconds, status="succeeded")
        return Trained(training=training, checkpoint=output)

    # ---------------------------------------------------------------- evaluation

    def evaluate(
        self, training: Training, items: Sequence[DiagnosticItem], inputs: EvalInputs
    ) -> Evaluation:
        """The checkpoint served and evaluated on ``items`` exactly as an SFT checkpoint is."""
        return self.server().evaluate(training, items, inputs)
