"""The file bridge over real HTTP on loopback: roles' requests become files, answers are files."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evosyn.agents.gateway import ConcurrencyLimiter, Gateway, RetryableLLMError
from evosyn.agents.gateway.bridge import (
    AnswerError,
    Bridge,
    BridgeRecord,
    BridgeServer,
    normalize_message,
    pending_requests,
    read_answer,
    render_pending,
    write_answer,
)
from evosyn.agents.llm_output import ask_json
from evosyn.cli import app
from evosyn.config import load_config

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_user_details",
            "description": "Look up a user.",
            "parameters": {
                "type": "object",
                "properties": {"user_id": {"type": "string"}},
                "required": ["user_id"],
            },
        },
    }
]


def start(folder: Path, **kw: Any) -> BridgeServer:
    return BridgeServer(Bridge(folder, poll_s=0.02, **kw)).start()


@pytest.fixture
def bridge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[BridgeServer]:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with start(tmp_path / "bridge") as server:
        yield server


def gateway(server: BridgeServer, tmp_path: Path, role: str = "generator", **kw: Any) -> Gateway:
    """A role's gateway, configured as docs/llm.md tells a campaign to (through load_config)."""
    sets = [
        f"llm.roles.{role}.model=openai/{role}",
        f"llm.roles.{role}.api_base={server.url}",
        f"llm.roles.{role}.timeout=30",
        f"llm.roles.{role}.cache=false",
    ]
    cfg = load_config(overrides=sets, environ={})
    kw.setdefault("max_attempts", 1)
    return Gateway.from_config(cfg.llm, role, limiter=ConcurrencyLimiter(), seed=0, **kw)


def in_thread(call: Callable[[], Any]) -> tuple[threading.Thread, dict[str, Any]]:
    """Run ``call`` beside the test; its result or exception lands in the dict."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["result"] = call()
        except Exception as exc:
            out["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


def wait_pending(folder: Path, count: int = 1, timeout: float = 10.0) -> list[Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        requests = pending_requests(folder)
        if len(requests) >= count:
            return requests
        time.sleep(0.01)
    raise AssertionError(f"no {count} pending request(s) in {folder}")


def test_a_role_gets_the_text_written_as_its_answer(bridge: BridgeServer, tmp_path: Path) -> None:
    folder = bridge.bridge.folder
    role = gateway(bridge, tmp_path)
    thread, out = in_thread(lambda: ask_json(role, "Answer with JSON: x = 1", lambda d: d, seed=3))
    [request] = wait_pending(folder)
    assert request.request["model"] == "generator"
    assert request.request["messages"] == [{"role": "user", "content": "Answer with JSON: x = 1"}]
    assert request.request["seed"] == 3 and request.request["temperature"] == 1.0
    # The viewer names the pending file and where the answer goes.
    view = render_pending(folder)
    assert request.name in view and "Answer with JSON: x = 1" in view
    assert str((folder / "answers" / f"{request.name}.txt").resolve()) in view
    # Written in place, as an editor would: read only once it stops changing.
    (folder / "answers" / f"{request.name}.txt").write_text('Here it is: {"x": 1}')
    thread.join(10)
    assert out == {"result": {"x": 1}}
    assert pending_requests(folder) == []
    record = BridgeRecord.model_validate_json(
        (folder / "done" / f"{request.name}.json").read_text()
    )
    assert record.answer == {"role": "assistant", "content": 'Here it is: {"x": 1}'}
    assert record.request["messages"] == request.request["messages"] and record.status == 200
    assert record.answer_file == str(folder / "done" / f"{request.name}.answer.txt")
    assert Path(record.answer_file).read_text() == 'Here it is: {"x": 1}'
    assert list((folder / "answers").iterdir()) == []
    [row] = role.records("c", 1)
    assert row.outcome == "ok" and row.tokens_in > 0 and row.tokens_out > 0


def test_a_tool_call_answer_is_sent_in_openai_form(bridge: BridgeServer, tmp_path: Path) -> None:
    folder = bridge.bridge.folder
    role = gateway(bridge, tmp_path, role="teacher")
    messages = [
        {"role": "system", "content": "You are an agent."},
        {"role": "user", "content": "Hi"},
    ]
    thread, out = in_thread(lambda: role.complete(messages, tools=TOOLS, tool_choice="auto"))
    [request] = wait_pending(folder)
    view = render_pending(folder)
    assert "tools (1): get_user_details" in view and 'tool_choice: "auto"' in view
    answer = {"tool_calls": [{"name": "get_user_details", "arguments": {"user_id": "u1"}}]}
    write_answer(folder, request.name.split("-")[0], message=answer)  # by its number
    thread.join(10)
    completion = out["result"]
    assert completion.text is None and completion.finish_reason == "tool_calls"
    [call] = completion.tool_calls
    assert call["type"] == "function" and call["id"].startswith("call_")
    assert call["function"] == {"name": "get_user_details", "arguments": '{"user_id": "u1"}'}


def test_no_answer_in_time_is_a_504(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with start(tmp_path / "bridge", timeout_s=0.3) as server:
        with pytest.raises(RetryableLLMError) as caught:
            gateway(server, tmp_path).complete([{"role": "user", "content": "hello"}])
        assert caught.value.status_code == 504
        assert "no answer within 0.3s" in str(caught.value)
        [failed] = (tmp_path / "bridge" / "failed").iterdir()
        assert BridgeRecord.model_validate_json(failed.read_text()).status == 504
        assert pending_requests(tmp_path / "bridge") == []


def test_a_malformed_answer_is_a_502_naming_the_file(bridge: BridgeServer, tmp_path: Path) -> None:
    folder = bridge.bridge.folder
    thread, out = in_thread(
        lambda: gateway(bridge, tmp_path).complete([{"role": "user", "content": "hi"}])
    )
    [request] = wait_pending(folder)
    answer = folder / "answers" / f"{request.name}.json"
    answer.write_text('{"content": "cut off')
    thread.join(10)
    error = out["error"]
    assert isinstance(error, RetryableLLMError) and error.status_code == 502
    assert f"{answer}: not JSON" in str(error)
    record = BridgeRecord.model_validate_json(
        (folder / "failed" / f"{request.name}.json").read_text()
    )
    assert record.status == 502 and str(answer) in (record.error or "")
    assert (folder / "failed" / f"{request.name}.answer.json").read_text() == '{"content": "cut off'


def test_tool_calls_written_as_text_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "000001-0123abcd.txt"
    path.write_text('{"tool_calls": [{"name": "f", "arguments": {}}]}')
    with pytest.raises(AnswerError, match=r"000001-0123abcd.txt: holds a message with tool_calls"):
        read_answer(path)


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        ({"text": "hi"}, "unknown key 'text'"),
        ({"content": None}, "neither content nor tool_calls"),
        ({"tool_calls": [{"arguments": {}}]}, "tool_calls[0] has no function name"),
        ({"tool_calls": [{"name": "f", "arguments": "{oops"}]}, "arguments are not JSON"),
        ({"role": "user", "content": "x"}, "role must be 'assistant'"),
        ([1], "must be a JSON object"),
    ],
)
def test_invalid_messages_say_what_is_wrong(answer: Any, error: str) -> None:
    with pytest.raises(AnswerError, match=error.replace("[", r"\[").replace("]", r"\]")):
        normalize_message(answer)


def test_answers_in_openai_form_or_as_a_completion_are_accepted() -> None:
    call = {"id": "c9", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
    assert normalize_message({"content": None, "tool_calls": [call]})["message"]["tool_calls"] == [
        call
    ]
    message = {"role": "assistant", "content": "ok", "refusal": None, "annotations": []}
    completion = {"choices": [{"message": message, "finish_reason": "length"}]}
    assert normalize_message(completion) == {
        "message": {"role": "assistant", "content": "ok"},
        "finish_reason": "length",
    }


def test_a_client_that_hangs_up_leaves_no_pending_request(
    bridge: BridgeServer, tmp_path: Path
) -> None:
    import httpx

    folder = bridge.bridge.folder
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(f"{bridge.url}/chat/completions", json=body, timeout=0.3)
    deadline = time.monotonic() + 5
    while pending_requests(folder) and time.monotonic() < deadline:
        time.sleep(0.02)
    [failed] = (folder / "failed").iterdir()
    assert "hung up" in (BridgeRecord.model_validate_json(failed.read_text()).error or "")


def test_streaming_and_unknown_routes_get_one_line_errors(bridge: BridgeServer) -> None:
    import httpx

    body = {"model": "m", "messages": [], "stream": True}
    response = httpx.post(f"{bridge.url}/chat/completions", json=body)
    assert response.status_code == 400 and "streaming" in response.json()["error"]["message"]
    assert httpx.get(f"{bridge.url}/models").json()["data"][0]["id"] == "bridge"
    assert httpx.get(f"{bridge.url}/nowhere").status_code == 404


def test_a_restarted_bridge_fails_what_it_left_and_counts_on(tmp_path: Path) -> None:
    folder = tmp_path / "bridge"
    first = Bridge(folder)
    left = first.submit({"model": "m", "messages": []}, "/v1/chat/completions", None)
    second = Bridge(folder)
    assert second.stale == 1 and pending_requests(folder) == []
    assert (folder / "failed" / f"{left.name}.json").exists()
    later = second.submit({"model": "m", "messages": []}, "/v1/chat/completions", "planner")
    assert later.name.startswith("000002-") and later.role == "planner"


def test_cli_pending_show_and_answer(tmp_path: Path) -> None:
    folder = tmp_path / "bridge"
    runner = CliRunner()
    missing = runner.invoke(app, ["bridge", "pending", "--dir", str(folder)])
    assert missing.exit_code == 1 and "no bridge folder" in missing.output
    bridge = Bridge(folder)
    messages = [{"role": "user", "content": f"turn {i}"} for i in range(6)]
    body = {"model": "designer", "messages": messages, "response_format": {"type": "json_object"}}
    request = bridge.submit(body, "/v1/chat/completions", None)
    view = runner.invoke(app, ["bridge", "pending", "--dir", str(folder)])
    assert view.exit_code == 0, view.output
    assert request.name in view.output and "... 2 more" in view.output
    assert "turn 0" in view.output and "turn 5" in view.output and "turn 1" not in view.output
    assert 'response_format: {"type": "json_object"}' in view.output
    show = runner.invoke(app, ["bridge", "show", "1", "--dir", str(folder)])
    assert show.exit_code == 0 and "-- [5] user\nturn 5" in show.output
    bad = tmp_path / "bad.json"
    bad.write_text('{"tool_calls": [{"arguments": {}}]}')
    refused = runner.invoke(
        app, ["bridge", "answer", "1", "--dir", str(folder), "--file", str(bad)]
    )
    assert refused.exit_code == 1 and "has no function name" in refused.output
    unknown = runner.invoke(app, ["bridge", "answer", "7", "--dir", str(folder), "--text", "x"])
    assert unknown.exit_code == 1 and "no pending request '7'" in unknown.output
    calls = '{"tool_calls": [{"name": "get_user_details", "arguments": {"user_id": "u1"}}]}'
    as_text = runner.invoke(app, ["bridge", "answer", "1", "--dir", str(folder), "--text", calls])
    assert as_text.exit_code == 1 and "send it as a message (--message" in as_text.output
    as_message = runner.invoke(
        app, ["bridge", "answer", "1", "--dir", str(folder), "--message", "--text", calls]
    )
    assert as_message.exit_code == 0, as_message.output
    assert json.loads((folder / "answers" / f"{request.name}.json").read_text()) == json.loads(
        calls
    )
    (folder / "answers" / f"{request.name}.json").unlink()
    wrote = runner.invoke(
        app, ["bridge", "answer", request.name, "--dir", str(folder), "--text", "{}"]
    )
    assert wrote.exit_code == 0, wrote.output
    assert (folder / "answers" / f"{request.name}.txt").read_text() == "{}"


def test_serve_ends_on_ctrl_c_with_one_line_and_130(tmp_path: Path) -> None:
    command = [
        sys.executable,
        "-m",
        "evosyn",
        "bridge",
        "serve",
        "--dir",
        str(tmp_path),
        "--port",
        "0",
    ]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy()
    )
    try:
        assert process.stdout is not None
        started = process.stdout.readline()
        assert started.startswith("bridge on http://127.0.0.1:"), started
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=10)
    finally:
        process.kill()
    assert process.returncode == 130
    assert stderr.strip().splitlines() == [
        f"interrupted: run it again with `evosyn bridge serve --dir {tmp_path} --port 0`"
    ]
