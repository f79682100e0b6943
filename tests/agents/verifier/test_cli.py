"""``evosyn env`` commands."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from evosyn.agents.verifier.cli import env_app
from evosyn.environments import get_domain
from evosyn.environments.trajectories import dump_message, gold_trajectory

runner = CliRunner()


def test_list() -> None:
    result = runner.invoke(env_app, ["list", "--json"])
    assert result.exit_code == 0
    rows = {r["domain"]: r for r in json.loads(result.stdout)["domains"]}
    assert rows["telecom"]["splits"]["base"] == 114
    assert rows["telecom"]["user_tools"] > 0
    assert runner.invoke(env_app, ["list"]).exit_code == 0


def test_verify_split_json() -> None:
    result = runner.invoke(env_app, ["verify", "--domain", "retail", "--split", "test", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert (summary["total"], summary["passed"], summary["failed"]) == (40, 40, 0)
    assert summary["seconds"] >= 0
    assert len(summary["results"]) == 40


def _write_trajectories(path: Path) -> None:
    domain = get_domain("airline")
    with_writes = [
        t
        for t in domain.tasks("base")
        if any(domain.symbol(a.name) == "write" for a in t.evaluation_criteria.actions or [])
    ]
    lines = []
    for index, task in enumerate(with_writes[:3]):
        messages = gold_trajectory(domain, task)
        if index == 1:
            messages = messages[-1:]  # only the closing message: no writes, a failure
        lines.append({"task_id": task.id, "messages": [dump_message(m) for m in messages]})
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")


def test_verify_trajectory_file(tmp_path: Path) -> None:
    trajectories = tmp_path / "t.jsonl"
    _write_trajectories(trajectories)
    args = ["verify", "--domain", "airline", "--trajectories", str(trajectories), "--json"]
    result = runner.invoke(env_app, args)
    assert result.exit_code == 1
    summary = json.loads(result.stdout)
    assert (summary["total"], summary["passed"], summary["failed"]) == (3, 2, 1)
    failed = next(r for r in summary["results"] if not r["passed"])
    assert failed["reasons"]
    table = runner.invoke(env_app, args[:-1])
    assert table.exit_code == 1 and "2/3 passed" in table.stdout


def test_verify_with_own_tasks_file(tmp_path: Path) -> None:
    domain = get_domain("retail")
    task = domain.tasks("base")[0].model_copy(update={"id": "synthetic-1"})
    tasks = tmp_path / "tasks.json"
    tasks.write_text(json.dumps([task.model_dump(mode="json")]))
    line = {
        "task_id": "synthetic-1",
        "messages": [dump_message(m) for m in gold_trajectory(domain, task)],
    }
    trajectories = tmp_path / "t.jsonl"
    trajectories.write_text(json.dumps(line) + "\n")
    result = runner.invoke(
        env_app,
        ["verify", "-d", "retail", "--tasks", str(tasks), "--trajectories", str(trajectories)],
    )
    assert result.exit_code == 0, result.output


def _error(args: list[str]) -> str:
    result = runner.invoke(env_app, args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    return lines[0]


def test_bad_input_is_one_line_error(tmp_path: Path) -> None:
    assert "unknown domain" in _error(["verify", "--domain", "bank", "--split", "base"])
    assert "unknown split" in _error(["verify", "--domain", "retail", "--split", "dev"])
    missing = tmp_path / "missing.jsonl"
    assert "no such file" in _error(["verify", "-d", "retail", "--trajectories", str(missing)])
    assert "exactly one" in _error(["verify", "-d", "retail"])
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"task_id": "0", "messages": []}\n{not json\n')
    assert f"{bad}:2" in _error(["verify", "-d", "retail", "--trajectories", str(bad)])
    unknown = tmp_path / "unknown.jsonl"
    unknown.write_text('{"task_id": "no-such-task", "messages": []}\n')
    assert "unknown task_id" in _error(["verify", "-d", "retail", "--trajectories", str(unknown)])
    role = tmp_path / "role.jsonl"
    role.write_text('{"task_id": "0", "messages": [{"role": "robot"}]}\n')
    assert "unknown message role" in _error(["verify", "-d", "retail", "--trajectories", str(role)])
    nofield = tmp_path / "nofield.jsonl"
    nofield.write_text('{"messages": []}\n')
    assert "task_id" in _error(["verify", "-d", "retail", "--trajectories", str(nofield)])
