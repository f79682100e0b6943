"""The export, the recipe and the evaluation prompt against LLaMA-Factory itself.

LLaMA-Factory lives in the training environment (the GPU image, `make train-env` on a CPU, or
any venv with the `train` extra), not beside the synthesis stack: see training_env.py.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml
from tau2.data_model.message import (
    AssistantMessage,
    Message,
    MultiToolMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from typer.testing import CliRunner

from evosyn.agents.gateway import Gateway, GatewaySettings
from evosyn.agents.learner.episodes import TrainedAgent
from evosyn.agents.learner.export import dataset_info_entry, export_sft, to_openai, to_sharegpt
from evosyn.agents.learner.recipe import TrainRecipe
from evosyn.cli import app
from evosyn.environments import get_domain
from evosyn.environments.kit.dialogue import stock_system_prompt
from evosyn.environments.quality import AGENT_GREETING
from evosyn.records import Trajectory
from evosyn.storage import Lake
from evosyn.tasks.learner_lake import training_data
from tests.agents.learner.training_env import interpreter, needs_llamafactory
from tests.openai_server import OpenAIServer, Reply

pytestmark = [needs_llamafactory, pytest.mark.heavy]
PROBE = Path(__file__).with_name("llamafactory_probe.py")


def _probe(
    out: Path, name: str, args: dict[str, object], requests: list[dict[str, object]] | None = None
) -> dict[str, object]:
    train_yaml = out / "train.yaml"
    train_yaml.write_text(yaml.safe_dump(args))
    extra = []
    if requests is not None:
        (out / "requests.json").write_text(json.dumps(requests))
        extra = [str(out / "requests.json")]
    done = subprocess.run(
        [interpreter(), str(PROBE), str(out), name, str(train_yaml), *extra],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "DISABLE_VERSION_CHECK": "1"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_llamafactory_reads_the_export_and_the_recipe(tmp_path: Path) -> None:
    root = tmp_path / "lake"
    result = CliRunner().invoke(
        app,
        ["synth", "--n", "20", "--seed", "5", "--campaign-id", "lf", "--set", f"lake.root={root}"],
    )
    assert result.exit_code == 0, result.output
    out = tmp_path / "sft"
    report = export_sft(training_data(Lake(str(root)), "lf"), out)
    recipe = TrainRecipe(bf16=False, flash_attn="sdpa")
    ds = out / "ds_z3.json"
    ds.write_text(json.dumps(recipe.deepspeed_config()))
    args = recipe.llamafactory_args(report.dataset, str(out), str(tmp_path / "ckpt"), str(ds))
    requests = [
        request
        for _, trajectory, task in _examples(root)
        for request in evaluation_requests(trajectory, task.domain)
    ]
    parsed = _probe(out, report.dataset, args, requests)
    # LLaMA-Factory's own pipeline reads every row of both files and skips none.
    assert parsed["rows"] == parsed["sharegpt_loaded"] == report.n_samples > 0
    assert parsed["broken"] == []
    assert parsed["openai_loaded"] == report.n_samples and parsed["openai_broken"] == []
    assert parsed["tools_kept"] is True
    # Both files are one conversation: LLaMA-Factory renders them alike, turn for turn. Its
    # openai reader alters system and tools (docs/training.md): train from the ShareGPT file.
    assert parsed["openai_renders_as_sharegpt"] == report.n_samples, parsed["openai_differences"]
    assert parsed["openai_system_newline"] == report.n_samples
    assert parsed["openai_tools_kept"] == 0
    # What the learner is asked at evaluation is its training prompt, byte for byte.
    assert parsed["requests_compared"] == len(requests) > report.n_samples
    assert parsed["n_request_differences"] == 0, parsed["request_differences"]
    # Every tool call the model learns to write is parsed back into the same call when served.
    assert parsed["tool_calls"] > report.n_samples
    assert parsed["n_tool_call_mismatches"] == 0, parsed["tool_call_mismatches"]
    assert parsed["cutoff_len"] == recipe.cutoff_len
    assert parsed["finetuning_type"] == "full"
    assert parsed["learning_rate"] == recipe.learning_rate
    assert parsed["deepspeed"] == str(ds)


def _examples(root: Path) -> list[tuple[object, Trajectory, object]]:
    from evosyn.agents.learner.export import training_examples

    return [(v, t, task) for v, t, task in training_examples(training_data(Lake(str(root)), "lf"))]


def _reply(message: AssistantMessage) -> Reply:
    if not message.tool_calls:
        return Reply.text(message.content or "")
    calls = [
        {
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
        }
        for call in message.tool_calls
    ]
    return Reply(content=message.content, tool_calls=calls, finish_reason="tool_calls")


def _to_agent(m: Message) -> bool:
    # What τ²-bench's orchestrator hands the agent: its tools' results and the user's lines.
    if isinstance(m, ToolMessage):
        return m.requestor == "assistant"
    return isinstance(m, UserMessage) and bool((m.content or "").strip()) and not m.tool_calls


def evaluation_requests(trajectory: Trajectory, domain: str) -> list[dict[str, object]]:
    """The chat requests a fine-tuned learner sends when it plays ``trajectory``'s agent turns.

    A served model answers each request with the trajectory's next agent turn; the agent is
    started as τ²-bench's orchestrator starts it (its greeting as history) and receives each
    user line and each reply's tool results (a parallel call's as one ``MultiToolMessage``).
    """
    agent_tools = get_domain(domain).tool_schemas("assistant")
    system = stock_system_prompt(get_domain(domain))
    messages = [m for m in trajectory.messages if not isinstance(m, SystemMessage)]
    with OpenAIServer() as server:
        settings = GatewaySettings(model="openai/learner", api_base=server.url, cache=False)
        agent = TrainedAgent(Gateway("learner", settings), agent_tools, system)
        state = agent.get_init_state(message_history=messages[:1])
        pending: list[Message] = []
        for m in messages[1:]:
            if isinstance(m, AssistantMessage) and pending:
                server.script(_reply(m))
                tools = [p for p in pending if isinstance(p, ToolMessage)]
                incoming = (
                    MultiToolMessage(role="tool", tool_messages=tools)
                    if len(tools) > 1
                    else pending[-1]
                )
                agent.generate_next_message(incoming, state)
                pending = []
            elif _to_agent(m):
                pending.append(m)
        sample_id = f"{trajectory.campaign_id}:{trajectory.trajectory_id}"
        return [{"id": sample_id, "turn": i, "body": r.body} for i, r in enumerate(server.requests)]


def _call(name: str, call_id: str, **arguments: object) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=dict(arguments), requestor="assistant")


def test_text_beside_calls_and_parallel_results_survive_training_and_evaluation(
    tmp_path: Path,
) -> None:
    messages: list[Message] = [
        SystemMessage(role="system", content="the teacher's brief, which the learner never sees"),
        AssistantMessage(role="assistant", content=AGENT_GREETING),
        UserMessage(role="user", content="Cancel reservation ABC123 for user mia_li_3668."),
        AssistantMessage(
            role="assistant",
            content="Let me pull up the reservation and your profile.",
            tool_calls=[
                _call("get_reservation_details", "a", reservation_id="ABC123"),
                _call("get_user_details", "b", user_id="mia_li_3668"),
            ],
        ),
        ToolMessage(role="tool", id="a", content='{"reservation": 1}', requestor="assistant"),
        ToolMessage(role="tool", id="b", content='{"user": 2}', requestor="assistant"),
        AssistantMessage(role="assistant", content="It is a basic economy trip. Cancel it?"),
        UserMessage(role="user", content="Yes please."),
        AssistantMessage(
            role="assistant",
            content="Cancelling now.",
            tool_calls=[_call("cancel_reservation", "c", reservation_id="ABC123")],
        ),
        ToolMessage(role="tool", id="c", content='{"status": "cancelled"}', requestor="assistant"),
        AssistantMessage(role="assistant", content="Done: ABC123 is cancelled."),
        UserMessage(role="user", content="Thanks. ###STOP###"),
    ]
    trajectory = Trajectory(
        campaign_id="lf", round=1, trajectory_id="t-1", task_id="k", messages=messages
    )
    domain = get_domain("airline")
    system, tools = stock_system_prompt(domain), domain.tool_schemas("assistant")
    sample, texts = to_sharegpt(trajectory, system, tools)
    assert texts == 2
    out = tmp_path / "sft"
    out.mkdir()
    (out / "evosyn_lf_r1.json").write_text(json.dumps([sample.row()]))
    row = to_openai(trajectory, system, tools)
    (out / "evosyn_lf_r1.openai.jsonl").write_text(json.dumps(row) + "\n")
    (out / "dataset_info.json").write_text(
        json.dumps({"evosyn_lf_r1": dataset_info_entry("evosyn_lf_r1.json")})
    )
    requests = evaluation_requests(trajectory, "airline")
    assert len(requests) == 4
    recipe = TrainRecipe(bf16=False, flash_attn="sdpa", deepspeed="none")
    parsed = _probe(
        out, "evosyn_lf_r1", recipe.llamafactory_args("evosyn_lf_r1", str(out), "ckpt"), requests
    )
    assert parsed["broken"] == [] and parsed["openai_broken"] == []
    assert parsed["texts_beside_calls"] == 2 and parsed["n_tool_call_mismatches"] == 0
    # LLaMA-Factory's openai reader keeps only the calls of a reply with text and calls: the
    # text is in the OpenAI file, but only the ShareGPT file trains it.
    assert parsed["openai_renders_as_sharegpt"] == 0
    assert "Let me pull up" not in json.dumps(parsed["openai_differences"])
    assert parsed["requests_compared"] == 4
    assert parsed["n_request_differences"] == 0, parsed["request_differences"]
