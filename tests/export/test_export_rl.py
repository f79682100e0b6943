"""`evosyn export nemo-gym` and `evosyn export verl`: rows the trainers' own code reads.

The checks with the trainers' packages run in their own interpreters, named by NEMO_GYM_PYTHON
(nemo-gym) and VERL_PYTHON (verl with torch, and evosyn): neither fits the synthesis venv
(nemo-gym pins openai<=2.7.2 and wants Python 3.12; verl pins transformers and needs torch).
Without them those tests are skipped with the reason; docs/training.md says how to build both.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from evosyn.agents.episodes.chat import ChatEpisode, EpisodeRef, reference_sources
from evosyn.agents.episodes.episode import EpisodeEnv
from evosyn.agents.episodes.server import RewardRequest, RewardService
from evosyn.agents.episodes.tasks import TaskSet
from evosyn.agents.learner.diagnostic import is_held_out
from evosyn.cli import app
from evosyn.environments.trajectories import parse_message
from evosyn.export.rl import (
    MANIFEST_FILE,
    NEMO_GYM_AGENT_CONFIG,
    NEMO_GYM_CONFIG,
    VERL_AGENT_NAME,
    VERL_LOOP_CONFIG,
    VERL_LOOP_TARGET,
    RLExportError,
    _opening,
    export_nemo_gym,
    responses_tools,
    tau2_run_config,
)
from evosyn.names import global_id, split_global_id
from evosyn.records import SynthTask, Verification
from evosyn.storage import Lake

CAMPAIGN = "exp"  # the campaign of the shared lake (conftest.py)
HERE = Path(__file__).resolve().parent
TINY_QWEN3 = HERE.parent / "agents" / "learner" / "tiny_qwen3.py"
DOC = (HERE.parents[1] / "docs" / "training.md").read_text("utf-8")


def _interpreter(variable: str) -> str | None:
    named = os.environ.get(variable)
    return named if named and Path(named).exists() else None


NEMO_GYM_PYTHON = _interpreter("NEMO_GYM_PYTHON")
VERL_PYTHON = _interpreter("VERL_PYTHON")
needs_nemo_gym = pytest.mark.skipif(
    NEMO_GYM_PYTHON is None,
    reason="no nemo-gym interpreter: set NEMO_GYM_PYTHON (docs/training.md, RL exports)",
)
needs_verl = pytest.mark.skipif(
    VERL_PYTHON is None,
    reason="no verl interpreter: set VERL_PYTHON (docs/training.md, RL exports)",
)


def _export(kind: str, lake: Lake, out: Path, *extra: str) -> None:
    args = ["export", kind, CAMPAIGN, "--out", str(out), "--lake", lake.root, *extra]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="module")
def gym_dir(lake: Lake, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("nemo-gym")
    _export("nemo-gym", lake, out)
    return out


@pytest.fixture(scope="module")
def verl_dir(lake: Lake, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("verl")
    _export("verl", lake, out)
    return out


def _gym_rows(folder: Path) -> dict[str, list[dict[str, Any]]]:
    return {
        kind: [json.loads(line) for line in (folder / f"{kind}.jsonl").read_text().splitlines()]
        for kind in ("train", "validation")
    }


def _verified_tasks(lake: Lake) -> dict[str, SynthTask]:
    passed = {v.task_id for v in lake.read(Verification, CAMPAIGN) if v.passed}
    return {t.task_id: t for t in lake.read(SynthTask, CAMPAIGN) if t.task_id in passed}


def test_nemo_gym_rows_hold_every_verified_task_with_its_reference(
    lake: Lake, gym_dir: Path
) -> None:
    rows = _gym_rows(gym_dir)
    verified = _verified_tasks(lake)
    held = {global_id(CAMPAIGN, t) for t in verified if is_held_out(t)}
    assert {r["task"]["id"] for r in rows["validation"]} == held
    assert len(rows["train"]) + len(rows["validation"]) == len(verified)
    system_prompt, tools = _opening("airline")
    for row in rows["train"] + rows["validation"]:
        ref = EpisodeRef.model_validate(row["evosyn"])
        stored = verified[split_global_id(row["task"]["id"])[1]].task
        task = stored.model_copy(update={"id": ref.task_id})
        assert row["task"] == task.model_dump(mode="json")
        assert row["config"] == tau2_run_config("airline", 0) and row["seed"] == ref.seed == 0
        assert row["responses_create_params"] == {
            "input": [{"role": "system", "content": system_prompt}],
            "tools": responses_tools(tools),
        }
        # Per message: whose it is, from the verified conversation itself.
        messages = [parse_message(m) for m in ref.reference]
        assert ref.reference_sources == reference_sources(task, messages)
        roles = {
            m.role for m, s in zip(messages, ref.reference_sources, strict=True) if s == "policy"
        }
        assert roles == {"assistant"}
    config = (gym_dir / NEMO_GYM_CONFIG).read_text()
    assert NEMO_GYM_AGENT_CONFIG in config and "_inherit_from: tau2_agent" in config
    assert json.loads((gym_dir / MANIFEST_FILE).read_text())["splits"] == {
        "train": len(rows["train"]),
        "diagnostic": len(rows["validation"]),
    }


def test_the_reward_server_scores_a_rows_reference_with_its_inline_task(gym_dir: Path) -> None:
    # What a trainer does with a rollout: POST /reward with the row's task and the messages.
    service = RewardService(domain="airline")
    rows = _gym_rows(gym_dir)
    opening_only = []
    for row in rows["train"][:6] + rows["validation"][:2]:
        messages = row["evosyn"]["reference"]
        verdict = service.score(RewardRequest(task=row["task"], messages=messages))
        assert verdict.reward == 1.0 and verdict.task_id == row["task"]["id"]
        cut = service.score(RewardRequest(task=row["task"], messages=messages[:3]))
        opening_only.append(cut.reward)
    assert 0.0 in opening_only  # the verdict is the conversation's, not the row's


def test_verl_rows_open_the_episode_the_adapter_plays(lake: Lake, verl_dir: Path) -> None:
    tables = {
        s: pq.read_table(verl_dir / f"{s}.parquet").to_pylist() for s in ("train", "diagnostic")
    }
    rows = tables["train"] + tables["diagnostic"]
    assert len(rows) == len(_verified_tasks(lake))
    assert sorted(r["extra_info"]["index"] for r in rows) == list(range(len(rows)))
    env = EpisodeEnv(TaskSet("airline", []))
    for row in rows[:8]:
        assert row["agent_name"] == VERL_AGENT_NAME and row["data_source"] == "evosyn/airline"
        ref, task = EpisodeRef.from_columns(row["extra_info"])
        assert row["reward_model"]["ground_truth"] == ref.task_id == task.id
        assert ref.split == ("diagnostic" if row in tables["diagnostic"] else "train")
        chat = ChatEpisode(env, ref.item(task), ref.seed)
        assert row["prompt"] == chat.prompt
        # The stock system prompt, then the user's first line (no greeting), as in SFT.
        assert [m["role"] for m in row["prompt"]] == ["system", "user"]
    loop = (verl_dir / VERL_LOOP_CONFIG).read_text()
    assert f"name: {VERL_AGENT_NAME}" in loop and f"_target_: {VERL_LOOP_TARGET}" in loop
    manifest = json.loads((verl_dir / MANIFEST_FILE).read_text())
    assert manifest["prompt_tokens_max"] > 1000
    assert any(
        u.startswith("actor_rollout_ref.rollout.agent.agent_loop_config_path=")
        for u in manifest["usage"]
    )


def test_an_unknown_campaign_or_empty_scope_is_one_line(lake: Lake, tmp_path: Path) -> None:
    for kind in ("nemo-gym", "verl"):
        args = ["export", kind, "nope", "--out", str(tmp_path), "--lake", lake.root]
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 2
        assert "unknown campaign 'nope'" in result.output and "(known: exp)" in result.output
    with pytest.raises(RLExportError, match="campaign 'exp', rounds <= 0: no task has a verified"):
        export_nemo_gym(lake, CAMPAIGN, tmp_path / "empty", up_to=0)
    assert not (tmp_path / "empty").exists()


def test_the_guide_names_the_files_and_commands_the_code_writes() -> None:
    assert "evosyn export nemo-gym" in DOC and "evosyn export verl" in DOC
    for name in (NEMO_GYM_CONFIG, VERL_LOOP_CONFIG, MANIFEST_FILE, VERL_LOOP_TARGET):
        assert name in DOC
    assert "NEMO_GYM_PYTHON" in DOC and "VERL_PYTHON" in DOC


def _run(python: str, *args: str, timeout: int = 280) -> dict[str, Any]:
    done = subprocess.run(
        [python, *args], capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


@needs_nemo_gym
def test_nemo_gyms_own_models_and_data_preparation_accept_every_row(
    gym_dir: Path, tmp_path: Path
) -> None:
    assert NEMO_GYM_PYTHON is not None
    system_prompt, tools = _opening("retail")  # NeMo Gym ships retail rows to compare with
    opening = tmp_path / "opening.json"
    opening.write_text(
        json.dumps({"system_prompt": system_prompt, "tools": responses_tools(tools)})
    )
    report = _run(
        NEMO_GYM_PYTHON, str(HERE / "nemo_gym_check.py"), str(gym_dir), str(opening), str(tmp_path)
    )
    rows = _gym_rows(gym_dir)
    assert report["example_rows"] > 0 and report["example_errors"] == []  # the control
    assert report["export"] == {
        "rows": {"train": len(rows["train"]), "validation": len(rows["validation"])},
        "errors": [],
        "normalize_changed": [],
    }
    # EvoSyn's retail prompt and tools are what NeMo Gym's own τ²-bench rows carry.
    assert report["opening"]["system_prompt_equal"]
    assert report["opening"]["tools_shared"] >= 10 and report["opening"]["tools_differing"] == []
    prepared = report["prepare_data"]
    assert prepared["returncode"] == 0, prepared["stderr_tail"]
    assert prepared["train_examples"] == len(rows["train"])
    assert prepared["validation_examples"] == len(rows["validation"])
    assert prepared["train_agents"] == [f"evosyn_{CAMPAIGN}_tau2_agent"]


@needs_nemo_gym
def test_the_nemo_gym_check_rejects_rows_that_break_the_request(
    gym_dir: Path, tmp_path: Path
) -> None:
    assert NEMO_GYM_PYTHON is not None
    broken = tmp_path / "broken"
    shutil.copytree(gym_dir, broken)
    lines = (broken / "train.jsonl").read_text().splitlines()
    first, second = json.loads(lines[0]), json.loads(lines[1])
    del first["seed"]
    second["config"]["not_a_field"] = 1
    lines[:2] = [json.dumps(first), json.dumps(second)]
    (broken / "train.jsonl").write_text("\n".join(lines) + "\n")
    opening = tmp_path / "opening.json"
    opening.write_text(json.dumps({"system_prompt": "", "tools": []}))
    check = HERE / "nemo_gym_check.py"
    report = _run(
        NEMO_GYM_PYTHON, str(check), str(broken), str(opening), str(tmp_path), "--rows-only"
    )
    errors = report["export"]["errors"]
    assert len(errors) == 2, errors
    assert (
        errors[0].startswith("train.jsonl:0: seed")
        and "train.jsonl:1: config.not_a_field" in errors[1]
    )


@needs_verl
def test_verl_loads_the_dataset_and_its_agent_loop_worker_rolls_out_every_row(
    verl_dir: Path, tmp_path: Path
) -> None:
    assert VERL_PYTHON is not None
    model = tmp_path / "tiny-qwen3"
    _run(VERL_PYTHON, str(TINY_QWEN3), "build", str(model))
    report = _run(VERL_PYTHON, str(HERE / "verl_check.py"), str(verl_dir), str(model), timeout=290)
    manifest = json.loads((verl_dir / MANIFEST_FILE).read_text())
    n = sum(manifest["splits"].values())
    assert report["dataset_rows"] == n and len(report["rows"]) == n  # RLHFDataset kept every row
    assert report["raw_prompt_is_row_prompt"]
    assert {"prompts", "responses", "response_mask", "rm_scores"} <= set(report["batch_keys"])
    assert report["reward_extra_keys"] == ["passed", "tau2_reward"]
    rewards = []
    for row in report["rows"]:
        assert row["agent_name"] == VERL_AGENT_NAME
        # verl's reward is the episode API's for the same turns, on the last response token.
        assert row["verl_reward"] == row["reward_at_last_token"] == row["episode_reward"]
        assert row["verl_termination"] == row["episode_termination"]
        # Exactly the policy's tokens are trainable, and they are what the server generated.
        assert row["mask_is_policy"]
        assert row["policy_spans"] == [f"{g}<|im_end|>" for g in row["generated"]]
        assert all("<tool_response>" in s for s in row["observation_spans"])
        assert row["verl_user_lines"] == row["episode_user_lines"]
        rewards.append(row["verl_reward"])
    # The replayed rows (even index) all pass; rows missing their last call mostly fail.
    assert all(r["verl_reward"] == 1.0 for r in report["rows"] if r["index"] % 2 == 0)
    assert 0.0 in rewards
