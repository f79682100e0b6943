"""The RL learner: prompts from verified episodes, the continuation reward, GRPO through the pool.

The unit tests run on a mock round synthesized in process (a few seconds); one of them trains
two GRPO steps of the tiny random Qwen3 (tiny_qwen3.py) on CPU through the train task, in the
training environment (training_env.py), in about half a minute. The issue's check, one round of a
``learner.kind: rl`` campaign with training and evaluation on the `gpu` pool, is
tests/flows/test_rl_pool_campaign.py.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from synthesis_checks import exploration
from tau2.data_model.message import AssistantMessage

from evosyn.agents.episodes import EpisodeEnv, ReplayPolicy, TaskSet
from evosyn.agents.episodes.chat import chat_messages
from evosyn.agents.learner import LEARNERS
from evosyn.agents.learner.base import TrainingData
from evosyn.agents.learner.export import to_sharegpt
from evosyn.agents.learner.rl import (
    METRICS_FILE,
    ContinuationScorer,
    PromptRow,
    PromptSet,
    RLLearner,
    RLRecipe,
    prompt_rows,
    scoring_endpoint,
)
from evosyn.agents.learner.sft import MissingToolError
from evosyn.agents.planner.programmatic import ProgrammaticPlanner
from evosyn.agents.synthesis import SynthesisBatch, synthesize
from evosyn.agents.verifier.replay import ReplayVerifier
from evosyn.config import CampaignConfig
from evosyn.environments.kit.dialogue import stock_system_prompt
from evosyn.environments.registry import domain_plugin, get_domain
from evosyn.flows.dispatch import dispatched
from evosyn.records import Training
from evosyn.space import seed_space
from evosyn.storage import Lake
from evosyn.tasks import learner_lake
from tests.agents.learner.training_env import (
    TinyModel,
    interpreter,
    needs_llamafactory,
    run_tiny,
    tiny_qwen3,  # noqa: F401  (the fixture)
)

pytestmark = pytest.mark.heavy

SHAREGPT_ROLES = {"human": "user", "gpt": "assistant", "function_call": "function"}


@pytest.fixture(scope="module")
def batch() -> SynthesisBatch:
    plugin = domain_plugin("mock")
    space = seed_space("mock", "rl-test", round=1)
    direction = exploration(space, 12, direction_id="r1-uniform")
    blueprints = ProgrammaticPlanner(plugin.infeasible).plan(space, direction, seed=5)
    return synthesize(blueprints, plugin.generator(), plugin.teacher(), ReplayVerifier("mock"), 5)


@pytest.fixture(scope="module")
def env(batch: SynthesisBatch) -> EpisodeEnv:
    return EpisodeEnv(TaskSet.from_records(batch.tasks, batch.trajectories, batch.verifications))


@pytest.fixture(scope="module")
def prompts(env: EpisodeEnv) -> PromptSet:
    return prompt_rows(env, seed=0)


def _verified_turn(env: EpisodeEnv, row: PromptRow) -> dict[str, Any]:
    episode = env.reset(row.task_id, row.seed)
    replay = ReplayPolicy()
    while episode.policy_turns < row.turn:
        episode.step(replay(episode))
    message: dict[str, Any] = chat_messages([replay(episode)])[0]
    return message


def _config(**learner: Any) -> CampaignConfig:
    return CampaignConfig.model_validate(
        {"campaign": {"domain": "mock"}, "agents": {"learner": {"kind": "rl", **learner}}}
    )


def test_rl_is_a_gpu_learner_built_from_its_recipe() -> None:
    cfg = _config(rl={"model": "some/model", "generations": 4})
    assert LEARNERS.get("rl").gpu and dispatched(cfg)
    learner = LEARNERS.get("rl").build(cfg)
    assert isinstance(learner, RLLearner) and learner.name == "rl"
    assert learner.recipe.model == "some/model" and learner.recipe.generations == 4
    assert learner.reads == frozenset({"examples", "tasks", "checkpoint", "previous"})
    # Evaluated as an SFT checkpoint is, serving with the RL recipe's model and context.
    server = learner.server()
    assert server.recipe.model == "some/model" and server.recipe.cutoff_len == 16_384
    with pytest.raises(ValueError, match="generation"):
        RLRecipe.model_validate({"generations": 1})
    with pytest.raises(ValueError, match="extra"):
        RLRecipe.model_validate({"epochs": 2})


def test_a_stored_training_answers_only_the_same_recipe() -> None:
    learner = RLLearner(_config(rl={"max_steps": 3}))
    record = {
        "campaign_id": "c",
        "round": 1,
        "training_id": "c-r1-train",
        "dataset_snapshot": "sha256:0",
        "n_samples": 1,
        "status": "succeeded",
    }
    asked = learner.recipe.model_dump()
    same = Training(**record, learner="rl", recipe=asked | {"command": ["python"]})
    assert learner.answers(same)
    assert not learner.answers(same.model_copy(update={"recipe": asked | {"max_steps": 4}}))
    assert not learner.answers(same.model_copy(update={"learner": "sft"}))
    assert not learner.answers(same.model_copy(update={"status": "failed"}))


def test_preflight_names_what_is_missing_in_one_line(tmp_path: Path) -> None:
    learner = RLLearner(_config(rl_python=str(tmp_path / "no-python"), rl={"device": "cpu"}))
    with pytest.raises(MissingToolError, match="lacks torch, trl or llamafactory") as caught:
        learner.preflight("train")
    assert "\n" not in str(caught.value) and "agents.learner.rl_python" in str(caught.value)
    without_trl = RLLearner(_config(rl={"device": "cpu"}))  # this venv has no torch
    with pytest.raises(MissingToolError, match="lacks torch"):
        without_trl.preflight("train")
    serving = RLLearner(_config(serve_command=["no-such-server"]))
    with pytest.raises(MissingToolError, match="serving command 'no-such-server'"):
        serving.preflight("evaluate")


def test_one_prompt_per_agent_turn_written_as_the_sft_export_writes_samples(
    batch: SynthesisBatch, env: EpisodeEnv, prompts: PromptSet
) -> None:
    assert prompts.rejected == {}
    assert [r.index for r in prompts.rows] == list(range(len(prompts.rows)))
    by_task: dict[str, list[PromptRow]] = {}
    for row in prompts.rows:
        by_task.setdefault(row.task_id, []).append(row)
    assert set(by_task) == set(env.tasks.ids())
    system = stock_system_prompt(get_domain("mock"))
    tools = get_domain("mock").tool_schemas("assistant")
    trajectories = {t.task_id: t for t in batch.trajectories}
    for task_id, rows in by_task.items():
        assert [r.turn for r in rows] == list(range(len(rows)))
        assert all(r.system == system and json.loads(r.tools) == tools for r in rows)
        # Each prompt ends where the agent is to speak: after a user line or a tool result.
        assert all(r.turns[-1]["role"] in {"user", "observation"} for r in rows)
        assert all(r.turns[0]["role"] == "user" for r in rows)
        # The prompt before the agent's last verified turn is the SFT training sample's
        # conversation up to that turn, speaker for speaker and character for character.
        sample, _ = to_sharegpt(trajectories[task_id], system, tools)
        turns = sample.conversations
        last_policy = max(i for i, t in enumerate(turns) if t.role in {"gpt", "function_call"})
        expected = [
            {"role": SHAREGPT_ROLES.get(t.role, t.role), "content": t.value}
            for t in turns[:last_policy]
        ]
        assert any(r.turns == expected for r in rows), task_id


def test_the_reward_is_the_verifiers_verdict_on_the_episode_with_the_turn_in_place(
    env: EpisodeEnv, prompts: PromptSet
) -> None:
    scorer = ContinuationScorer(env, prompts.rows)
    broken_by_text: dict[str, int] = {}
    for row in prompts.rows:
        verdict, reason = scorer.score(row.index, _verified_turn(env, row))
        assert verdict.reward == 1.0 and verdict.passed and reason == "user_stop", row
        empty, why = scorer.score(row.index, {"role": "assistant", "content": ""})
        assert empty.reward == 0.0 and why == "agent_error"
        if row.verified_call:
            text, _ = scorer.score(row.index, {"role": "assistant", "content": "One moment."})
            broken_by_text[row.task_id] = broken_by_text.get(row.task_id, 0) + (text.reward == 0)
    # Leaving out a verified call breaks the task for most calls: the reward tells turns apart.
    calls = sum(r.verified_call for r in prompts.rows)
    assert sum(broken_by_text.values()) >= 0.75 * calls > 0
    # A wrong call is a wrong write or a failed read: the episode goes on, as τ²-bench's would.
    row = next(r for r in prompts.rows if r.verified_call)
    wrong = AssistantMessage.model_validate(
        {
            "role": "assistant",
            "tool_calls": [{"id": "x", "name": "no_such_tool", "arguments": {}}],
        }
    )
    verdict, reason = scorer.score(row.index, chat_messages([wrong])[0])
    assert reason == "user_stop" and verdict.reward in {0.0, 1.0}


def test_the_scoring_endpoint_answers_in_order_and_rejects_malformed_requests(
    env: EpisodeEnv, prompts: PromptSet
) -> None:
    rows = prompts.rows[:3]
    scorer = ContinuationScorer(env, prompts.rows)

    def post(url: str, payload: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        request = urllib.request.Request(url, data=json.dumps(payload).encode())
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                return answer.status, json.loads(answer.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    with scoring_endpoint(scorer) as url:
        items = [{"row": r.index, "message": _verified_turn(env, r)} for r in rows]
        items.append({"row": rows[0].index, "message": {"role": "assistant", "content": ""}})
        status, body = post(url, {"items": items})
        assert status == 200
        assert [v["reward"] for v in body["verdicts"]] == [1.0, 1.0, 1.0, 0.0]
        assert body["verdicts"][-1]["termination_reason"] == "agent_error"
        status, body = post(url, {"items": [{"row": 10_000, "message": {}}]})
        assert status == 400 and body["error"].startswith("no prompt row 10000")
        status, body = post(url, {"rows": []})
        assert status == 400 and body["error"].startswith("items: Field required")


def test_a_round_without_verified_tasks_is_a_failed_training_with_the_reason(
    tmp_path: Path,
) -> None:
    learner = RLLearner(_config(work_dir=str(tmp_path)))
    data = TrainingData(campaign_id="c", verified=[], held_out=0)
    trained = learner.train(data, 2, "c-r2-train")
    assert trained.checkpoint is None
    assert trained.training.status == "failed" and trained.training.learner == "rl"
    assert "round 2 of c" in (trained.training.error or "")


def test_a_later_round_starts_from_the_previous_rounds_rl_checkpoint(
    batch: SynthesisBatch, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Round 2's tasks are round 1's, stored again under round 2.
    lake = Lake(str(tmp_path / "lake"))
    for records in (batch.tasks, batch.trajectories, batch.verifications):
        lake.write(records, "synth")
    again = [v.model_copy(update={"round": 2}) for v in batch.verifications]
    lake.write(again, "synth")
    # rl_python `false` ends the GRPO run at once: the record and run.json say where it started.
    learner = RLLearner(
        _config(work_dir=str(tmp_path / "work"), rl_python="false", rl={"max_steps": 3})
    )
    monkeypatch.setattr(learner, "preflight", lambda stage: None)
    first = learner_lake.train(lake, learner, "rl-test", 1, "rl-test-r1-train", "checkpoints")
    assert first.status == "failed" and first.recipe["base"] == "Qwen/Qwen3-8B"
    assert first.recipe["base_training"] is None

    checkpoint = tmp_path / "lake/checkpoints/rl-test/rl-test-r1-train"
    checkpoint.mkdir(parents=True)
    (checkpoint / "config.json").write_text("{}")
    stored = first.model_copy(
        update={"status": "succeeded", "error": None, "checkpoint_uri": str(checkpoint)}
    )
    # Passed over: another learner's checkpoint, and an RL one of another recipe stored later.
    sft = stored.model_copy(update={"training_id": "rl-test-r1-sft", "learner": "sft"})
    other = stored.model_copy(
        update={
            "training_id": "rl-test-r1-train-retry1",
            "recipe": stored.recipe | {"max_steps": 4},
            "checkpoint_uri": f"{checkpoint}-retry1",
        }
    )
    lake.write([stored, sft, other], "train")
    second = learner_lake.train(lake, learner, "rl-test", 2, "rl-test-r2-train", "checkpoints")
    assert second.recipe["base"] == str(checkpoint)
    assert second.recipe["base_training"] == "rl-test-r1-train"
    run = json.loads((tmp_path / "work/rl-test/rl-test-r2-train/run.json").read_text())
    assert run["recipe"]["model"] == str(checkpoint)
    # Chaining does not change the recipe a stored training is reused by.
    assert learner.answers(second.model_copy(update={"status": "succeeded"}))


def _read_rollouts(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _check_steps(metrics: dict[str, Any], rollouts: list[dict[str, Any]], steps: int) -> None:
    assert metrics["global_step"] == steps and len(metrics["steps"]) == steps
    assert {r["reward"] for r in rollouts} <= {0.0, 1.0}
    for step in range(steps):  # each step's logged mean is the mean of its scored turns
        scored = [r["reward"] for r in rollouts if r["batch"] == step]
        assert metrics["steps"][step]["reward"] == pytest.approx(sum(scored) / len(scored))


@needs_llamafactory
@pytest.mark.timeout(300)
def test_grpo_steps_on_cpu_through_the_train_task(
    batch: SynthesisBatch,
    tiny_qwen3: TinyModel,  # noqa: F811
    tmp_path: Path,
) -> None:
    # The gpu pool's train flow runs learner_lake.train: D_<=r from the lake, then the learner,
    # then the checkpoint uploaded. About a minute on two cores.
    lake = Lake(str(tmp_path / "lake"))
    for records in (batch.tasks, batch.trajectories, batch.verifications):
        lake.write(records, "synth")
    base = tiny_qwen3.path
    # Two steps show each step's rewards logged apart; the smallest GRPO group (two sampled
    # turns) of a few tokens keeps a step's passes over a prompt of thousands of tokens cheap.
    steps, generations = 2, 2
    cfg = CampaignConfig.model_validate(
        {
            "campaign": {"domain": "mock"},
            "lake": {"root": str(tmp_path / "lake")},
            "agents": {
                "learner": {
                    "kind": "rl",
                    "rl_python": interpreter(),
                    "work_dir": str(tmp_path / "work"),
                    "rl": {
                        "model": str(base),
                        "generations": generations,
                        "prompts_per_step": 1,
                        "max_steps": steps,
                        "learning_rate": 1e-3,
                        "device": "cpu",
                        "bf16": False,
                        "gradient_checkpointing": False,
                        "cutoff_len": 8192,
                        "max_completion_tokens": 8,
                    },
                }
            },
        }
    )
    learner = RLLearner(cfg)
    learner.preflight("train")
    training = learner_lake.train(lake, learner, "rl-test", 1, "rl-test-r1-train", "checkpoints")
    assert training.status == "succeeded", training.error
    # The prompts: every agent turn of the round's verified tasks, the held-out ones excepted.
    data = learner_lake.training_data(lake, "rl-test", up_to=1)
    expected = prompt_rows(EpisodeEnv(learner.round_tasks(data, 1)), seed=0)
    assert training.n_samples == len(expected.rows) > 0
    assert training.recipe["tasks"] == len({r.task_id for r in expected.rows})
    assert training.checkpoint_uri == f"{tmp_path / 'lake'}/checkpoints/rl-test/rl-test-r1-train"
    checkpoint = Path(training.checkpoint_uri)
    metrics = json.loads((checkpoint / METRICS_FILE).read_text())
    assert metrics["prompts"] == training.n_samples and metrics["prompts_over_cutoff"] == 0
    rollouts = _read_rollouts(tmp_path / "work/rl-test/rl-test-r1-train/rollouts.jsonl")
    assert len(rollouts) == steps * generations
    _check_steps(metrics, rollouts, steps)
    # The saved model loads and runs, with the chat template it was trained with.
    assert (checkpoint / "chat_template.jinja").exists()
    loaded = run_tiny("load", checkpoint)
    assert loaded["model_type"] == "qwen3" and loaded["finite"] is True
