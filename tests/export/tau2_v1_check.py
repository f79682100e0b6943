"""Score trajectories with τ²-bench 1.0's own task and message models and its own evaluator.

Run with an interpreter that has τ²-bench 1.0 installed from a source checkout
(TAU2_V1_PYTHON; see test_tau2_v1.py and docs/verification.md):

    python tau2_v1_check.py DOMAIN TRAJECTORIES_JSONL [--tasks TASKS_JSON] [--judge]

TRAJECTORIES_JSONL holds one ``{"task_id", "trajectory_id", "messages"}`` object a line, the
messages as EvoSyn stores them. The tasks are TASKS_JSON (a τ²-bench task list, e.g. an
``evosyn export tau2`` folder's ``tasks.json``) or, without it, DOMAIN's official tasks as
τ²-bench 1.0's own registry loads them from its checkout's data.

Each trajectory is scored by ``tau2.evaluator.evaluator.evaluate_simulation`` with evaluation
type ALL, as a run that ended with the agent's stop, in DOMAIN's environment from τ²-bench's
registry. Natural-language assertions need an LLM judge: without ``--judge`` they are left out
of the task's reward basis for the evaluation and reported as not judged; with it τ²-bench's
own NL-assertion evaluator runs under its configured model. Where the evaluator raises (a tool
observation that does not replay, a malformed call), the reward is 0 with the error, as
EvoSyn's verifier fails such a trajectory.

Every task and message is parsed with τ²-bench 1.0's models; a field of ours that a model does
not keep (pydantic drops unknown keys) is reported in ``dropped``.

Prints one JSON object: the τ²-bench version, its data directory and git revision, and one
result per trajectory.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from loguru import logger
from tau2.data_model.message import (
    AssistantMessage,
    MultiToolMessage,
    SystemMessage,
    ToolMessage,
    UserMessage,
)
from tau2.data_model.simulation import SimulationRun, TerminationReason
from tau2.data_model.tasks import RewardType, Task
from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation
from tau2.registry import registry
from tau2.utils.utils import DATA_DIR

# τ²-bench logs every tool response at DEBUG: keep its warnings only.
logger.remove()
logger.add(sys.stderr, level="WARNING")

MESSAGE_MODELS = {
    "system": SystemMessage,
    "assistant": AssistantMessage,
    "user": UserMessage,
    "tool": ToolMessage,
}


def message_model(raw: dict[str, Any]) -> Any:
    """τ²-bench's model of a message, by its role (a tool turn of several results: multi)."""
    if raw["role"] == "tool" and "tool_messages" in raw:
        return MultiToolMessage
    return MESSAGE_MODELS[raw["role"]]


def dropped_keys(given: Any, kept: Any, where: str = "") -> list[str]:
    """Paths of the keys of ``given`` that the parsed model's dump ``kept`` lacks."""
    if isinstance(given, dict) and isinstance(kept, dict):
        out = []
        for key, value in given.items():
            path = f"{where}.{key}" if where else key
            if key not in kept:
                out.append(path)
            else:
                out += dropped_keys(value, kept[key], path)
        return out
    if isinstance(given, list) and isinstance(kept, list):
        pairs = enumerate(zip(given, kept, strict=False))
        return [p for i, (g, k) in pairs for p in dropped_keys(g, k, f"{where}[{i}]")]
    return []


def parse(model: Any, raw: dict[str, Any], where: str, dropped: list[str]) -> Any:
    """``raw`` as ``model``; any key the model does not keep is added to ``dropped``."""
    parsed = model.model_validate(raw)
    kept = parsed.model_dump(mode="json", exclude_unset=True)
    dropped += [f"{where}:{p}" for p in dropped_keys(raw, kept)]
    return parsed


def source_revision() -> dict[str, Any]:
    """The τ²-bench that scores: package version, data directory, its git revision."""
    root = Path(DATA_DIR).resolve().parent

    def git(*args: str) -> str | None:
        done = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, check=False
        )
        return done.stdout.strip() or None

    return {
        "tau2_version": importlib.metadata.version("tau2"),
        "data_dir": str(Path(DATA_DIR).resolve()),
        "git_revision": git("rev-parse", "HEAD"),
        "git_describe": git("describe", "--tags", "--always"),
    }


def load_tasks(domain: str, tasks_path: Path | None, dropped: list[str]) -> dict[str, Task]:
    """The tasks by id: TASKS_JSON's, parsed here, or the domain's official ones."""
    if tasks_path is None:
        return {t.id: t for t in registry.get_tasks_loader(domain)(None)}
    rows = json.loads(tasks_path.read_text("utf-8"))
    return {row["id"]: parse(Task, row, f"task {row['id']}", dropped) for row in rows}


def score(domain: str, task: Task, messages: list[Any], judge: bool) -> dict[str, Any]:
    """τ²-bench's reward for ``messages`` on ``task``, NL assertions as ``judge`` says."""
    criteria = task.evaluation_criteria
    not_judged: list[str] = []
    if criteria is not None and RewardType.NL_ASSERTION in criteria.reward_basis and not judge:
        not_judged = list(criteria.nl_assertions or [])
        basis = [b for b in criteria.reward_basis if b != RewardType.NL_ASSERTION]
        criteria = criteria.model_copy(update={"reward_basis": basis})
        task = task.model_copy(update={"evaluation_criteria": criteria})
    run = SimulationRun(
        id="evosyn-check",
        task_id=task.id,
        start_time="",
        end_time="",
        duration=0.0,
        termination_reason=TerminationReason.AGENT_STOP,
        messages=messages,
    )
    result: dict[str, Any] = {"nl_not_judged": not_judged}
    try:
        info = evaluate_simulation(
            simulation=run,
            task=task,
            evaluation_type=EvaluationType.ALL,
            solo_mode=False,
            domain=domain,
        )
    except Exception as exc:  # the evaluator's own failure is a finding, scored 0
        result |= {"reward": 0.0, "error": f"{type(exc).__name__}: {str(exc)[:300]}"}
        return result
    breakdown = {str(getattr(k, "value", k)): v for k, v in (info.reward_breakdown or {}).items()}
    return result | {"reward": info.reward, "breakdown": breakdown}


def main(domain: str, trajectories: Path, tasks_path: Path | None, judge: bool) -> dict[str, Any]:
    dropped: list[str] = []
    tasks = load_tasks(domain, tasks_path, dropped)
    results = []
    for number, line in enumerate(trajectories.read_text("utf-8").splitlines()):
        if not line.strip():
            continue
        row = json.loads(line)
        where = f"{trajectories.name}:{number}"
        task = tasks.get(row["task_id"])
        if task is None:
            results.append({"line": number, "task_id": row["task_id"], "error": "unknown task"})
            continue
        messages = [
            parse(message_model(m), m, f"{where} message {i}", dropped)
            for i, m in enumerate(row["messages"])
        ]
        results.append(
            {"task_id": task.id, "trajectory_id": row.get("trajectory_id")}
            | score(domain, task, messages, judge)
        )
        if len(results) % 100 == 0:
            print(f"scored {len(results)}", file=sys.stderr, flush=True)
    tasks_file = tasks_path or Path(DATA_DIR) / "tau2" / "domains" / domain / "tasks.json"
    digest = hashlib.sha256(tasks_file.read_bytes()).hexdigest() if tasks_file.is_file() else None
    return source_revision() | {
        "domain": domain,
        "tasks_file": str(tasks_file),
        "tasks_sha256": digest,
        "tasks": len(tasks),
        "judge": judge,
        "dropped": dropped,
        "results": results,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("domain")
    parser.add_argument("trajectories", type=Path)
    parser.add_argument("--tasks", type=Path, default=None)
    parser.add_argument("--judge", action="store_true")
    args = parser.parse_args()
    print(json.dumps(main(args.domain, args.trajectories, args.tasks, args.judge)))
