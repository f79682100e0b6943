"""The reward server over real HTTP: verdicts equal τ²-bench's own evaluators'."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import uvicorn
from samples import free_port
from tau2.data_model.message import AssistantMessage, Message, ToolMessage
from tau2.data_model.simulation import SimulationRun, TerminationReason
from tau2.data_model.tasks import Task
from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation

from evosyn.agents.episodes import TaskSet
from evosyn.agents.episodes.server import RewardService, reward_app
from evosyn.agents.synthesis import SynthesisBatch
from evosyn.environments.base import FunctionalSymbol
from evosyn.environments.registry import get_domain

from .conftest import synthesized


class ServerThread:
    """uvicorn serving the reward app on a loopback port, in a thread."""

    def __init__(self, service: RewardService) -> None:
        self.port = free_port()
        config = uvicorn.Config(
            reward_app(service), host="127.0.0.1", port=self.port, log_level="warning"
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline, "the reward server did not start"
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)


@pytest.fixture(scope="module")
def client(task_sets: dict[str, TaskSet]) -> Iterator[httpx.Client]:
    """A client of a server holding the airline task set (inline tasks of any domain)."""
    server = ServerThread(RewardService(task_sets["airline"]))
    with server, httpx.Client(base_url=server.url, timeout=60) as http:
        yield http


def as_json(messages: list[Message]) -> list[dict[str, Any]]:
    return [m.model_dump(mode="json") for m in messages]


def stock(domain: str, task: Task, messages: list[Message], reason: str) -> float | None:
    """τ²-bench's reward for the conversation, evaluation type ALL; None where it raises."""
    run = SimulationRun(
        id="x",
        task_id=task.id,
        start_time="",
        end_time="",
        duration=0.0,
        termination_reason=TerminationReason(reason),
        messages=messages,
    )
    try:
        return float(evaluate_simulation(run, task, EvaluationType.ALL, False, domain).reward)
    except Exception:
        return None


def perturbations(domain: str, messages: list[Message]) -> dict[str, list[Message]]:
    """Gold conversations made wrong: the last write left out, a write's argument changed
    after the fact (its recorded answer no longer replays), every agent text left out."""
    spec = get_domain(domain).tool_spec
    writes = [
        i
        for i, m in enumerate(messages)
        if isinstance(m, AssistantMessage)
        and m.tool_calls
        and (s := spec(m.tool_calls[0].name)) is not None
        and s.symbol == FunctionalSymbol.WRITE
    ]
    out: dict[str, list[Message]] = {
        "silent": [m for m in messages if not (isinstance(m, AssistantMessage) and m.content)]
    }
    if writes:
        last = writes[-1]
        answers = 1
        while last + answers < len(messages) and isinstance(messages[last + answers], ToolMessage):
            answers += 1
        out["no_last_write"] = messages[:last] + messages[last + answers :]
        changed = messages[last].model_copy(deep=True)
        call = changed.tool_calls[0]
        key = next((k for k, v in call.arguments.items() if isinstance(v, str)), None)
        if key is not None:
            call.arguments[key] = call.arguments[key] + "X"
            out["changed_write"] = [*messages[:last], changed, *messages[last + 1 :]]
    return out


def agreement(
    client: httpx.Client, domain: str, batch: SynthesisBatch, limit: int
) -> dict[str, int]:
    """Server verdicts against τ²-bench's on the batch's trajectories and perturbed gold."""
    tasks = {t.task_id: t.task for t in batch.tasks}
    cases: list[tuple[Task, list[Message], str]] = []
    for trajectory in batch.trajectories[:limit]:
        task = tasks[trajectory.task_id]
        cases.append((task, trajectory.messages, "user_stop"))
        for messages in perturbations(domain, trajectory.messages).values():
            cases.append((task, messages, "user_stop"))
        cases.append((task, trajectory.messages, "max_steps"))
    requests = [
        {
            "task": task.model_dump(mode="json"),
            "domain": domain,
            "messages": as_json(messages),
            "termination_reason": reason,
        }
        for task, messages, reason in cases
    ]
    answer = client.post("/rewards", json={"requests": requests})
    assert answer.status_code == 200, answer.text
    verdicts = answer.json()["verdicts"]
    counts = {"cases": len(cases), "passed": 0, "raised": 0}
    for (task, messages, reason), verdict in zip(cases, verdicts, strict=True):
        expected = stock(domain, task, messages, reason)
        if expected is None:
            counts["raised"] += 1
            assert verdict["tau2_reward"] == 0.0 and not verdict["passed"], verdict
            continue
        assert verdict["tau2_reward"] == expected, (task.id, verdict)
        if not verdict["policy_violations"]:
            assert verdict["passed"] == (expected == 1.0)
        counts["passed"] += verdict["passed"]
    return counts


def test_verdicts_equal_tau2s_on_synthesized_and_perturbed_trajectories(
    client: httpx.Client, batches: dict[str, SynthesisBatch]
) -> None:
    # τ²-bench rebuilds airline's database from JSON per evaluation (about a second each on
    # two cores), so a few airline trajectories; mock's small database takes all of them.
    mock = agreement(client, "mock", synthesized("mock", budget=30, seed=2, mistake_rate=0.3), 30)
    airline = agreement(client, "airline", batches["airline"], 4)
    for counts in (mock, airline):
        assert 0 < counts["passed"] < counts["cases"]
    assert mock["raised"] > 0  # changed writes no longer replay: τ²-bench raises, we fail


@pytest.mark.slow
@pytest.mark.parametrize("domain", ["airline", "retail", "telecom"])
def test_verdicts_equal_tau2s_on_every_domain(client: httpx.Client, domain: str) -> None:
    counts = agreement(client, domain, synthesized(domain, budget=30, seed=8, mistake_rate=0.3), 30)
    assert 0 < counts["passed"] < counts["cases"]


def test_a_task_of_the_served_set_by_id(
    client: httpx.Client, task_sets: dict[str, TaskSet]
) -> None:
    item = next(iter(task_sets["airline"]))
    assert item.reference is not None
    answer = client.post(
        "/reward", json={"task_id": item.task_id, "messages": as_json(item.reference)}
    )
    assert answer.status_code == 200, answer.text
    verdict = answer.json()
    assert verdict["reward"] == 1.0 and verdict["passed"] and verdict["reasons"] == []
    assert verdict["task_id"] == item.task_id
    health = client.get("/health").json()
    assert health["status"] == "ok" and health["tasks"] == len(task_sets["airline"])


@pytest.mark.parametrize(
    ("body", "status", "error"),
    [
        ({"task_id": "nope", "messages": []}, 404, "no task 'nope'"),
        ({"messages": []}, 400, "exactly one of task_id and task"),
        ({"task_id": "x"}, 400, "messages: Field required"),
        ({"task": {"id": 3}, "messages": []}, 400, "task: "),
        ({"task_id": "x", "messages": [], "surprise": 1}, 400, "surprise"),
    ],
)
def test_a_bad_request_is_answered_with_its_reason(
    client: httpx.Client, body: dict[str, Any], status: int, error: str
) -> None:
    answer = client.post("/reward", json=body)
    assert answer.status_code == status
    assert error in answer.json()["error"]


def test_a_bad_message_or_reason_names_itself(
    client: httpx.Client, task_sets: dict[str, TaskSet]
) -> None:
    task_id = task_sets["airline"].ids()[0]
    bad = client.post("/reward", json={"task_id": task_id, "messages": [{"role": "robot"}]})
    assert bad.status_code == 400 and "messages[0]" in bad.json()["error"]
    reason = client.post(
        "/reward", json={"task_id": task_id, "messages": [], "termination_reason": "bored"}
    )
    assert reason.status_code == 400 and "bored" in reason.json()["error"]


def test_the_cli_names_what_is_missing() -> None:
    from typer.testing import CliRunner

    from evosyn.cli import app

    result = CliRunner().invoke(app, ["reward", "serve"])
    assert result.exit_code == 2
    assert "give --campaign, --tau2-dir or --domain" in result.output
    both = CliRunner().invoke(app, ["reward", "serve", "--campaign", "c", "--tau2-dir", "d"])
    assert both.exit_code == 2 and "exclude each other" in both.output
