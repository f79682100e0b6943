"""SFT export: ShareGPT rows LLaMA-Factory accepts, OpenAI JSONL, token counts, D_<=r."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from tau2.data_model.message import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from typer.testing import CliRunner

from evosyn.agents.learner.diagnostic import is_held_out
from evosyn.agents.learner.export import (
    RESULT_SEPARATOR,
    ExportError,
    count_tokens,
    export_sft,
    learner_view,
    split_call,
    to_openai,
    to_sharegpt,
)
from evosyn.agents.learner.recipe import TrainRecipe
from evosyn.cli import app
from evosyn.environments import get_domain
from evosyn.names import global_id, split_global_id
from evosyn.records import Trajectory, Verification
from evosyn.storage import Lake
from evosyn.tasks.learner_lake import training_data

TOOLS = get_domain("airline").tool_schemas("assistant")


def _call(name: str, call_id: str, requestor: str = "assistant", **arguments: object) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=dict(arguments), requestor=requestor)  # type: ignore[arg-type]


def _trajectory(messages: list[Message], trajectory_id: str = "t-1") -> Trajectory:
    return Trajectory(
        campaign_id="c", round=1, trajectory_id=trajectory_id, task_id="k", messages=messages
    )


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Lake:
    root = tmp_path_factory.mktemp("lake")
    result = CliRunner().invoke(
        app,
        ["synth", "--n", "30", "--seed", "3", "--campaign-id", "exp", "--set", f"lake.root={root}"],
    )
    assert result.exit_code == 0, result.output
    return Lake(str(root))


def test_turns_alternate_as_llamafactory_reads_them() -> None:
    messages: list[Message] = [
        SystemMessage(role="system", content="POLICY"),
        UserMessage(role="user", content="Hi, cancel my trip."),
        UserMessage(role="user", content="It is reservation ABC123."),
        AssistantMessage(role="assistant", content="Let me look."),
        AssistantMessage(
            role="assistant",
            tool_calls=[
                _call("get_reservation_details", "a", reservation_id="ABC123"),
                _call("get_user_details", "b", user_id="u1"),
            ],
        ),
        ToolMessage(role="tool", id="a", content='{"r": 1}', requestor="assistant"),
        ToolMessage(role="tool", id="b", content='{"u": 1}', requestor="assistant"),
        AssistantMessage(role="assistant", content="Found it. Cancel?"),
        UserMessage(role="user", content="Yes, thanks. ###STOP###"),
    ]
    sample, texts = to_sharegpt(_trajectory(messages), "AGENT PROMPT", TOOLS)
    roles = [t.role for t in sample.conversations]
    assert roles == ["human", "function_call", "observation", "gpt"]
    # The trajectory's own system turn is whoever rolled it out; the agent sees its own prompt.
    assert sample.system == "AGENT PROMPT"
    assert sample.conversations[0].value == "Hi, cancel my trip.\nIt is reservation ABC123."
    # "Let me look." preceded the call in the same reply: kept as the text beside the calls.
    text, calls = split_call(sample.conversations[1].value)
    assert texts == 1 and text == "Let me look."
    assert sample.conversations[1].value.startswith("Let me look.\n<tool_call>[")
    assert [c["name"] for c in calls] == ["get_reservation_details", "get_user_details"]
    # Parallel results stay two results, as LLaMA-Factory's openai reader keeps them.
    assert sample.conversations[2].value == f'{{"r": 1}}{RESULT_SEPARATOR}{{"u": 1}}'
    row = to_openai(_trajectory(messages), "AGENT PROMPT", TOOLS)
    assert [m["role"] for m in row["messages"]] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
    ]
    assert row["messages"][2]["content"] == "Let me look."
    assert json.loads(row["messages"][2]["tool_calls"][0]["function"]["arguments"]) == {
        "reservation_id": "ABC123"
    }


def test_the_conversation_opens_with_the_user_in_every_export() -> None:
    messages: list[Message] = [
        AssistantMessage(role="assistant", content="Hi! How can I help you today?"),
        UserMessage(role="user", content="Cancel my trip."),
        AssistantMessage(role="assistant", content="Which one?"),
    ]
    sample, _ = to_sharegpt(_trajectory(messages), "STOCK", TOOLS)
    assert sample.system == "STOCK"
    assert [t.role for t in sample.conversations] == ["human", "gpt"]
    row = to_openai(_trajectory(messages), "STOCK", TOOLS)
    assert [m["role"] for m in row["messages"]] == ["system", "user", "assistant"]
    assert learner_view(messages) == messages[1:]
    first = sample.row()["conversations"][0]
    assert first == {"from": "human", "value": sample.conversations[0].value}


def test_user_device_tools_are_not_part_of_the_agent_view() -> None:
    messages: list[Message] = [
        UserMessage(role="user", content="My phone has no signal."),
        AssistantMessage(role="assistant", content="Please toggle airplane mode."),
        UserMessage(role="user", tool_calls=[_call("toggle_airplane_mode", "u", requestor="user")]),
        ToolMessage(role="tool", id="u", content="airplane mode off", requestor="user"),
        UserMessage(role="user", content="Done, it works."),
        AssistantMessage(role="assistant", content="Great."),
    ]
    sample, _ = to_sharegpt(_trajectory(messages), "POLICY", TOOLS)
    assert [t.role for t in sample.conversations] == ["human", "gpt", "human", "gpt"]
    assert "airplane mode off" not in json.dumps(sample.row())
    row = to_openai(_trajectory(messages), "POLICY", TOOLS)
    roles = [m["role"] for m in row["messages"]]
    assert roles == ["system", "user", "assistant", "user", "assistant"]
    assert row["messages"][0]["content"] == "POLICY"


def test_invalid_rows_name_the_trajectory() -> None:
    unknown = [
        UserMessage(role="user", content="hi"),
        AssistantMessage(role="assistant", tool_calls=[_call("launch_rocket", "x")]),
        ToolMessage(role="tool", id="x", content="?", requestor="assistant"),
        AssistantMessage(role="assistant", content="ok"),
    ]
    with pytest.raises(ExportError, match=r"trajectory bad-7: .*launch_rocket"):
        to_sharegpt(_trajectory(unknown, "bad-7"), "P", TOOLS)
    no_reply = [UserMessage(role="user", content="hello?")]
    with pytest.raises(ExportError, match="trajectory t-1"):
        to_sharegpt(_trajectory(no_reply), "P", TOOLS)


def test_export_of_a_real_campaign(lake: Lake, tmp_path: Path) -> None:
    report = export_sft(training_data(lake, "exp"), tmp_path, recipe=TrainRecipe(cutoff_len=6000))
    rows = json.loads((tmp_path / f"{report.dataset}.json").read_text())
    passed = [v for v in lake.read(Verification, "exp") if v.passed]
    held = [v for v in passed if is_held_out(v.task_id)]
    assert report.n_samples == len(rows) == len(passed) - len(held) > 0
    assert report.n_held_out == len(held)
    assert {r["id"] for r in rows} == {
        global_id("exp", v.trajectory_id) for v in passed if not is_held_out(v.task_id)
    }
    info = json.loads((tmp_path / "dataset_info.json").read_text())
    assert info[report.dataset]["file_name"] == f"{report.dataset}.json"
    assert info[report.dataset]["formatting"] == "sharegpt"
    jsonl = (tmp_path / f"{report.dataset}.openai.jsonl").read_text().splitlines()
    assert [json.loads(line)["id"] for line in jsonl] == [r["id"] for r in rows]
    # Every sample shows the agent τ²-bench's stock prompt, as the sft learner is evaluated.
    assert {r["system"] for r in rows} == {trained_system("airline")}
    # Token counts are real Qwen counts: the policy alone is well over a thousand tokens.
    assert all(s.tokens > 1000 for s in report.tokens)
    assert report.over_cutoff == [s.trajectory_id for s in report.tokens if s.tokens > 6000]


def test_sample_ids_are_unique_across_campaigns_and_stable(lake: Lake, tmp_path: Path) -> None:
    # A copy of the shared lake (lakes are portable), so other tests keep one campaign.
    shutil.copytree(lake.root, tmp_path / "lake")
    copy = Lake(tmp_path / "lake")
    # A second campaign numbers its rows as the first does (r1-...-b0000-task, ...).
    other = CliRunner().invoke(
        app,
        [
            "synth",
            "--n",
            "8",
            "--seed",
            "3",
            "--campaign-id",
            "exp2",
            "--set",
            f"lake.root={copy.root}",
        ],
    )
    assert other.exit_code == 0, other.output
    local = {v.trajectory_id for v in copy.read(Verification, "exp")}
    assert local & {v.trajectory_id for v in copy.read(Verification, "exp2")}, "ids collide"
    ids = []
    for campaign in ("exp", "exp2"):
        report = export_sft(training_data(copy, campaign), tmp_path / campaign)
        rows = json.loads((tmp_path / campaign / f"{report.dataset}.json").read_text())
        ids += [r["id"] for r in rows]
        assert {split_global_id(r["id"])[0] for r in rows} == {campaign}
    assert len(ids) == len(set(ids))
    # Exporting again (as after a resume) names every sample alike.
    again = export_sft(training_data(copy, "exp"), tmp_path / "again")
    rows = json.loads((tmp_path / "again" / f"{again.dataset}.json").read_text())
    assert [r["id"] for r in rows] == ids[: len(rows)]


def test_tokens_grow_with_text() -> None:
    base: list[Message] = [
        UserMessage(role="user", content="hi"),
        AssistantMessage(role="assistant", content="ok"),
    ]
    longer: list[Message] = [base[0], AssistantMessage(role="assistant", content="ok " * 200)]
    short, _ = to_sharegpt(_trajectory(list(base)), "P", TOOLS)
    long, _ = to_sharegpt(_trajectory(list(longer)), "P", TOOLS)
    assert count_tokens(long, "Qwen/Qwen3-8B") - count_tokens(short, "Qwen/Qwen3-8B") >= 199


def test_round_scopes(lake: Lake, tmp_path: Path) -> None:
    assert export_sft(training_data(lake, "exp", only=1), tmp_path / "a").rounds == [1]
    with pytest.raises(ExportError, match="no verified training data in round 2"):
        export_sft(training_data(lake, "exp", only=2), tmp_path / "b")
    assert not (tmp_path / "b").exists()


def test_cli_export(lake: Lake, tmp_path: Path) -> None:
    args = ["export", "sft", "exp", "--out", str(tmp_path), "--set", f"lake.root={lake.root}"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "samples" in result.output and (tmp_path / "dataset_info.json").exists()
    missing = CliRunner().invoke(app, [*args[:2], "nope", *args[3:]])
    assert missing.exit_code == 2 and "unknown campaign 'nope'" in missing.output
    assert "(known: exp)" in missing.output


def test_recipe_defaults_are_the_papers() -> None:
    recipe = TrainRecipe()
    assert recipe.global_batch == 16
    args = recipe.llamafactory_args("d", "/data", "/out", "/ds.json")
    assert args["finetuning_type"] == "full" and args["cutoff_len"] == 16_384
    assert args["num_train_epochs"] == 6 and args["learning_rate"] == 1e-5
    assert args["lr_scheduler_type"] == "cosine" and args["warmup_ratio"] == 0.1
    assert args["deepspeed"] == "/ds.json" and args["flash_attn"] == "fa2"
    ds = recipe.deepspeed_config()
    assert ds is not None and ds["zero_optimization"]["stage"] == 3
    lora = TrainRecipe(finetuning="lora", deepspeed="none").llamafactory_args("d", "/d", "/o")
    assert lora["lora_rank"] == 16 and "deepspeed" not in lora


def trained_system(domain: str) -> str:
    """The system prompt of every exported training sample of ``domain``."""
    from evosyn.environments.kit.dialogue import stock_system_prompt

    return stock_system_prompt(get_domain(domain))
