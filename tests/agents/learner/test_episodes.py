"""Parallel τ²-bench episodes: bounded by the concurrency setting, results as a serial run's,
spend caps kept as a serial run keeps them."""

from __future__ import annotations

import pytest

from evosyn.agents.gateway import BudgetExceeded, Gateway, GatewaySettings
from evosyn.agents.gateway.budget import forget_spend
from evosyn.agents.learner.base import DiagnosticItem
from evosyn.agents.learner.episodes import EpisodeRunner, EpisodeSettings, evaluation_concurrency
from evosyn.agents.learner.sft import episode_settings
from evosyn.config import CampaignConfig, ModelPrice
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


def test_parallel_episodes_keep_the_round_cap_as_a_serial_run_does() -> None:
    # $1 per completion token, one token a reply: every call costs $1; the round's cap is $10.
    price = ModelPrice(output_per_mtok=1_000_000.0)
    settings = GatewaySettings(
        model="openai/m", cache=False, max_attempts=1, price=price, round_budget_usd=10.0
    )
    forget_spend()
    with OpenAIServer(default=Reply.echo_user(delay_s=0.05, completion_tokens=1)) as server:
        on_server = settings.model_copy(update={"api_base": server.url})
        agent = Gateway("learner", on_server).bind_spend("cap", None, 1)
        user = Gateway("user_simulator", on_server).bind_spend("cap", None, 1)
        domain = get_domain("mock")
        tasks = {t.id: t for t in domain.tasks()}
        items = [DiagnosticItem(task_id=i, split="diagnostic", realized={}) for i in tasks]
        runner = EpisodeRunner(
            "mock",
            agent,
            user,
            lambda task: "POLICY",
            EpisodeSettings(trials=2, max_steps=30, infra_retries=0, concurrency=8),
        )
        with pytest.raises(BudgetExceeded) as stopped:
            runner.evaluate(TRAINING, tasks, items)
        assert server.max_in_flight > 1  # the episodes did run at once while far from the cap
    assert agent.ledger is not None
    # Eight episodes in flight would pass the cap by up to seven calls without holds.
    assert 10.0 <= agent.ledger.round_spent(1) <= 11.0
    assert sum(c.cost or 0.0 for c in stopped.value.calls) == agent.ledger.round_spent(1)
    forget_spend()


def test_evaluation_concurrency_defaults_to_the_learner_roles_limit() -> None:
    cfg = CampaignConfig.model_validate(
        {"llm": {"roles": {"learner": {"model": "openai/m", "concurrency": 32}}}}
    )
    assert evaluation_concurrency(cfg) == 32
    assert episode_settings(cfg).concurrency == 32
    cfg.agents.learner.concurrency = 4
    assert episode_settings(cfg).concurrency == 4
    assert evaluation_concurrency(CampaignConfig()) == 8  # the gateway's default limit
