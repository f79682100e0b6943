"""Parallel τ²-bench episodes: bounded by the concurrency setting, results as a serial run's."""

from __future__ import annotations

from evosyn.agents.gateway import Gateway, GatewaySettings
from evosyn.agents.learner.base import DiagnosticItem
from evosyn.agents.learner.episodes import EpisodeRunner, EpisodeSettings
from evosyn.environments import get_domain
from evosyn.records import EvalResult, Training
from tests.openai_server import OpenAIServer, Reply

TRAINING = Training(
    campaign_id="par",
    round=1,
    training_id="par-r1",
    learner="icl",
    recipe={},
    dataset_snapshot="",
    n_samples=0,
    status="succeeded",
)


def _evaluate(server: OpenAIServer, concurrency: int) -> tuple[list[EvalResult], list[str]]:
    domain = get_domain("mock")
    tasks = {t.id: t for t in domain.tasks()[:4]}
    items = [DiagnosticItem(task_id=i, split="diagnostic", realized={}) for i in tasks]
    settings = GatewaySettings(model="openai/m", api_base=server.url, cache=False, max_attempts=1)
    runner = EpisodeRunner(
        "mock",
        Gateway("learner", settings),
        Gateway("user_simulator", settings),
        lambda task: "POLICY",
        EpisodeSettings(trials=2, max_steps=6, infra_retries=0, concurrency=concurrency),
    )
    results = runner.evaluate(TRAINING, tasks, items)
    return results, [f"{f.task_id}#{f.trial}:{f.kind}" for f in runner.failures]


def test_parallel_episodes_give_the_serial_results_in_the_serial_order() -> None:
    # Every reply echoes the request's last user line: a pure function of the conversation, so
    # the order in which episodes reach the server cannot change any episode.
    with OpenAIServer(default=Reply.echo_user(delay_s=0.05)) as server:
        serial = _evaluate(server, 1)
        assert server.max_in_flight == 1
        server.reset()
        parallel = _evaluate(server, 8)
        assert server.max_in_flight > 1
    assert [r.task_id for r in serial[0]] == [r.task_id for r in parallel[0]]
    assert [r.model_dump() for r in serial[0]] == [r.model_dump() for r in parallel[0]]
    assert serial[1] == parallel[1]
    assert len(serial[0]) + len(serial[1]) == 8
