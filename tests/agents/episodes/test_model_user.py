"""Episodes with the configured user simulator: τ²-bench's, through the gateway, over HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from openai_server import OpenAIServer, Reply
from tau2.data_model.simulation import TerminationReason

from evosyn.agents.episodes import EpisodeEnv, TaskSet
from evosyn.agents.learner.episodes import InfraError
from evosyn.config import load_config

CAMPAIGN = Path(__file__).resolve().parents[3] / "deployments/campaigns/mock-offline.yaml"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # the test server ignores it
    with OpenAIServer(default=Reply.server_error()) as srv:
        yield srv


def _env(server: OpenAIServer, tasks: TaskSet, tmp_path: Path) -> EpisodeEnv:
    cfg = load_config(
        CAMPAIGN,
        [
            f"lake.root={tmp_path / 'lake'}",
            f"llm.default.api_base={server.url}",
            "llm.default.max_attempts=1",
            "llm.default.cache=false",
            "llm.roles.user_simulator.model=openai/user-model",
        ],
    )
    return EpisodeEnv.from_config(cfg, tasks)


def test_the_model_user_answers_through_the_gateway(
    server: OpenAIServer, task_sets: dict[str, TaskSet], tmp_path: Path
) -> None:
    tasks = task_sets["airline"]
    item = next(iter(tasks))
    server.script(Reply.text("I want to change my flight."), Reply.text("Thanks! ###STOP###"))
    env = _env(server, tasks, tmp_path)
    episode = env.reset(item.task_id, seed=4)
    assert episode.opening.messages[-1].content == "I want to change my flight."
    turn = episode.step({"role": "assistant", "content": "Which reservation?"})
    assert turn.done and turn.outcome is not None
    assert turn.outcome.termination_reason == TerminationReason.USER_STOP.value
    # Nothing was booked, so the verifier fails the task: the reward says so, with reasons.
    assert turn.outcome.reward == 0.0 and turn.outcome.verdict.reasons
    first, second = (r.body for r in server.requests)
    assert first["model"] == "user-model" and first.get("seed") == 4
    # τ²-bench's user simulator: its guidelines and the task's scenario, roles flipped.
    system = first["messages"][0]["content"]
    assert str(item.task.user_scenario.instructions.reason_for_call) in system
    assert second["messages"][-1] == {"role": "user", "content": "Which reservation?"}


def test_a_failing_user_model_is_an_infra_error_not_a_reward(
    server: OpenAIServer, task_sets: dict[str, TaskSet], tmp_path: Path
) -> None:
    tasks = task_sets["airline"]
    env = _env(server, tasks, tmp_path)
    with pytest.raises(InfraError, match="user_sim_error"):
        env.reset(tasks.ids()[0])
