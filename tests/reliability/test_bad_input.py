"""Bad input: each case is a clear one-line error or a recorded rejection, and stored data stays.

Every case runs the real ``evosyn`` command in a subprocess, so a traceback would show up in
stderr exactly as a user would see it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from evosyn.environments import get_domain
from evosyn.environments.trajectories import dump_message, gold_trajectory
from evosyn.records import Verification
from evosyn.storage import Lake


def _evosyn(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evosyn", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
        env={"PATH": "/usr/bin:/bin", "HOME": str(cwd)},
    )


def _one_line_error(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert proc.returncode not in (0, 1) or "error" in proc.stderr, proc.stdout
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert lines and lines[0].startswith("error:"), proc.stderr
    text = " ".join(line.strip() for line in lines)
    for needle in needles:
        assert needle in text, text


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with a lake holding one synthesized round, to prove nothing is lost."""
    root = tmp_path_factory.mktemp("bad")
    args = ["synth", "--n", "8", "--campaign-id", "keep", "--set", "lake.root=lake"]
    proc = _evosyn(*args, cwd=root)
    assert proc.returncode == 0, proc.stderr
    return root


def _rows(root: Path) -> list[str]:
    return sorted(v.trajectory_id for v in Lake(str(root / "lake")).read(Verification, "keep"))


@pytest.mark.parametrize(
    ("text", "needles"),
    [
        ("campaign: {rounds: [1, 2\n", ["c.yaml", "YAML"]),
        ("campaign: {roundz: 3}\n", ["campaign.roundz"]),
        ("campaign: {domain: bakery}\n", ["campaign.domain", "bakery"]),
        ("campaign: {budget_per_round: 0}\n", ["campaign.budget_per_round"]),
        ("lake: {root: lake}\nagents: {teacher: {kind: wizard}}\n", ["agents.teacher.kind"]),
    ],
    ids=["malformed-yaml", "unknown-key", "missing-domain", "empty-budget", "unknown-kind"],
)
def test_bad_campaign_configs(stored: Path, text: str, needles: list[str]) -> None:
    before = _rows(stored)
    (stored / "c.yaml").write_text(text, "utf-8")
    _one_line_error(_evosyn("campaign", "run", "c.yaml", cwd=stored), *needles)
    assert _rows(stored) == before


def test_non_utf8_config(stored: Path) -> None:
    (stored / "latin.yaml").write_bytes(b"campaign: {name: caf\xe9}\n")
    _one_line_error(_evosyn("campaign", "run", "latin.yaml", cwd=stored), "latin.yaml", "UTF-8")


def test_corrupt_and_non_utf8_task_files(stored: Path) -> None:
    domain = get_domain("airline")
    task = domain.tasks()[0]
    messages = [dump_message(m) for m in gold_trajectory(domain, task)]
    line = {"task_id": task.id, "messages": messages}
    (stored / "t.jsonl").write_text(json.dumps(line) + "\n", "utf-8")
    (stored / "tasks.json").write_text('[{"id": "x", "user_scenario": ', "utf-8")
    args = ["env", "verify", "-d", "airline", "--trajectories", "t.jsonl", "--tasks"]
    _one_line_error(_evosyn(*args, "tasks.json", cwd=stored), "tasks.json", "not valid JSON")
    (stored / "tasks.json").write_bytes(b'[{"id": "\xff\xfe"}]')
    _one_line_error(_evosyn(*args, "tasks.json", cwd=stored), "tasks.json", "UTF-8")
    (stored / "t.jsonl").write_bytes(b"\x80not json\n")
    _one_line_error(
        _evosyn("env", "verify", "-d", "airline", "--trajectories", "t.jsonl", cwd=stored),
        "t.jsonl",
    )


def test_unknown_tool_and_huge_observation_are_recorded_verdicts(stored: Path) -> None:
    domain = get_domain("airline")
    task = next(
        t for t in domain.tasks() if t.evaluation_criteria and t.evaluation_criteria.actions
    )
    messages = [dump_message(m) for m in gold_trajectory(domain, task)]
    calls = [i for i, m in enumerate(messages) if m.get("tool_calls")]
    unknown = json.loads(json.dumps(messages))
    unknown[calls[0]]["tool_calls"][0]["name"] = "teleport_passenger"
    huge = json.loads(json.dumps(messages))
    tool_turn = next(i for i, m in enumerate(huge) if m["role"] == "tool")
    huge[tool_turn]["content"] = "x" * 5_000_000
    lines = [
        {"task_id": task.id, "trajectory_id": "unknown-tool", "messages": unknown},
        {"task_id": task.id, "trajectory_id": "huge-observation", "messages": huge},
    ]
    path = stored / "odd.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), "utf-8")
    proc = _evosyn(
        "env", "verify", "-d", "airline", "--trajectories", "odd.jsonl", "--json", cwd=stored
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    summary = json.loads(proc.stdout)
    verdicts = {r["trajectory_id"]: r for r in summary["results"]}
    assert not verdicts["unknown-tool"]["passed"]
    assert any(
        "teleport_passenger" in text
        for text in verdicts["unknown-tool"]["reasons"] + verdicts["unknown-tool"]["warnings"]
    )
    # A huge observation is the replay's business, not a crash: the replay recomputes it.
    assert verdicts["huge-observation"]["trajectory_id"] == "huge-observation"
    assert proc.returncode == 1  # at least one trajectory failed


def test_bad_sql_and_unknown_campaign(stored: Path) -> None:
    before = _rows(stored)
    _one_line_error(
        _evosyn("sql", "DELETE FROM verifications", "--set", "lake.root=lake", cwd=stored)
    )
    _one_line_error(
        _evosyn("export", "sft", "nope", "--out", "o", "--set", "lake.root=lake", cwd=stored),
        "nope",
    )
    assert _rows(stored) == before
