"""The in-context learner: indexing D_<=r, retrieval into its prompt, τ²-bench episodes."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evosyn.agents.gateway import BudgetExceeded, Gateway
from evosyn.agents.gateway.budget import forget_spend
from evosyn.agents.learner.base import DiagnosticItem, Evaluation
from evosyn.agents.learner.diagnostic import split_verified
from evosyn.agents.learner.icl import ICLLearner, similarity, word_bag
from evosyn.agents.roles import build_roles
from evosyn.cli import app
from evosyn.config import CampaignConfig, ModelPrice
from evosyn.records import EvalResult, LLMCall, SynthTask, Training, Verification
from evosyn.storage import Lake
from evosyn.tasks.learner_lake import eval_inputs, training_data
from evosyn.tasks.learning import evaluate_learner, train_learner
from tests.openai_server import OpenAIServer, Reply


@pytest.fixture(scope="module")
def lake_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("icl") / "lake"
    result = CliRunner().invoke(
        app,
        ["synth", "--n", "12", "--seed", "5", "--campaign-id", "icl", "--set", f"lake.root={root}"],
    )
    assert result.exit_code == 0, result.output
    return root


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with OpenAIServer() as srv:
        yield srv


def config(root: Path, server: OpenAIServer, **learner: object) -> CampaignConfig:
    return CampaignConfig.model_validate(
        {
            "lake": {"root": str(root)},
            "agents": {"learner": {"kind": "icl", "infra_retries": 1, **learner}},
            "llm": {
                "default": {"api_base": server.url, "timeout": 5, "backoff_base_s": 0.01},
                "roles": {
                    "learner": {"model": "openai/learner-model", "max_attempts": 1},
                    "user_simulator": {"model": "openai/user-model", "max_attempts": 1},
                },
            },
        }
    )


def _train(learner: ICLLearner, root: Path) -> Training:
    return learner.train(training_data(Lake(str(root)), "icl", up_to=1), 1, "icl-r1-train").training


def _evaluate(
    learner: ICLLearner, root: Path, training: Training, items: list[DiagnosticItem]
) -> Evaluation:
    inputs = eval_inputs(Lake(str(root)), learner, training, items, "airline")
    return learner.evaluate(training, items, inputs)


def _with_writes(held: list[DiagnosticItem]) -> list[DiagnosticItem]:
    """Held-out tasks an agent that only says "Sorry, I can't" fails (a refusal it passes)."""
    return [h for h in held if h.realized.get("num_write") not in (None, "0")]


def test_similarity_ranks_shared_words() -> None:
    a, b, c = (
        word_bag("cancel my flight"),
        word_bag("please cancel the flight"),
        word_bag("upgrade seat"),
    )
    assert similarity(a, b) > similarity(a, c) == 0.0
    assert similarity(a, word_bag("")) == 0.0


def test_icl_round_against_the_test_server(lake_root: Path, server: OpenAIServer) -> None:
    cfg = config(lake_root, server, demonstrations=2)
    learner = build_roles(cfg).learner
    assert isinstance(learner, ICLLearner)
    lake = Lake(str(lake_root))
    train, held = split_verified(lake.read(Verification, "icl"))
    held = _with_writes(held)
    training = _train(learner, lake_root)
    assert training.learner == "icl" and training.n_samples == len(train) > 0
    assert training.dataset_snapshot.startswith("sha256:")
    assert held, "the fixture campaign needs a held-out task"
    # One episode: user asks, the learner answers in text, the user stops.
    server.script(Reply.text("Hi, I need help with my booking."), Reply.text("Sorry, I can't."))
    server.script(Reply.text("###STOP###"))
    evaluation = _evaluate(learner, lake_root, training, held[:1])
    [result] = evaluation.results
    assert result.task_id == held[0].task_id and result.training_id == "icl-r1-train"
    assert result.failure_reason is not None and result.failure_reason.startswith("user_stop")
    assert result.success is (result.reward >= 1.0)
    assert evaluation.failures == []
    # Both sides of the episode come back as llm_calls rows of the training's round.
    calls = evaluation.calls
    assert {(c.campaign_id, c.round) for c in calls} == {("icl", 1)}
    assert {c.role for c in calls} == {"learner", "user_simulator"}
    assert all(c.outcome == "ok" for c in calls)
    prompts = [
        r.body["messages"][0]["content"]
        for r in server.requests
        if r.body["model"] == "learner-model"
    ]
    assert len(prompts) == 1
    assert prompts[0].count("<example id=") == 2
    tasks = {t.task_id: t.task for t in lake.read(SynthTask, "icl")}
    [first, _] = learner.retrieve(tasks[held[0].task_id])
    assert "assistant calls" in prompts[0] and first.trajectory_id in training.recipe["index"]


def test_infrastructure_failures_are_marked_not_scored(
    lake_root: Path, server: OpenAIServer
) -> None:
    cfg = config(lake_root, server)
    learner = ICLLearner(cfg)
    _, held = split_verified(Lake(str(lake_root)).read(Verification, "icl"))
    held = _with_writes(held)
    training = _train(learner, lake_root)
    # The learner's context overflows: not retried, marked, no result.
    server.script(Reply.text("Hello."), Reply.context_length())
    evaluation = _evaluate(learner, lake_root, training, held[:1])
    assert evaluation.results == []
    [failure] = evaluation.failures
    assert (failure.kind, failure.attempts, failure.task_id) == (
        "context_overflow",
        1,
        held[0].task_id,
    )
    # The user simulator fails twice (both attempts): marked as a user-simulator error.
    server.script(Reply.server_error(), Reply.server_error())
    evaluation = _evaluate(learner, lake_root, training, held[:1])
    assert evaluation.results == []
    [failure] = evaluation.failures
    assert (failure.kind, failure.attempts) == ("user_sim_error", 2)
    # The failed attempts are still accounted for.
    assert [c.outcome for c in evaluation.calls].count("error") >= 2
    # A retry that works is scored.
    server.script(
        Reply.server_error(), Reply.text("Hi."), Reply.text("No."), Reply.text("###STOP###")
    )
    evaluation = _evaluate(learner, lake_root, training, held[:1])
    [result] = evaluation.results
    assert evaluation.failures == [] and result.failure_reason is not None


def test_an_empty_learner_turn_is_the_learners_failure_not_a_crash(
    lake_root: Path, server: OpenAIServer
) -> None:
    learner = ICLLearner(config(lake_root, server))
    _, held = split_verified(Lake(str(lake_root)).read(Verification, "icl"))
    training = _train(learner, lake_root)
    # A weak model's whitespace-only reply: τ²-bench's orchestrator would raise on it.
    server.script(Reply.text("Hi, I need help."), Reply.text("\n\n  \n"))
    evaluation = _evaluate(learner, lake_root, training, _with_writes(held)[:1])
    [result] = evaluation.results
    assert evaluation.failures == [] and not result.success
    assert result.failure_reason == "agent_error: the learner sent an empty turn"


def test_evaluation_calls_count_toward_the_round_cap_and_are_stored_at_the_stop(
    lake_root: Path, server: OpenAIServer, tmp_path: Path
) -> None:
    root = tmp_path / "lake"
    shutil.copytree(lake_root, root)  # the module's lake stays without trainings
    cfg = config(root, server)
    price = ModelPrice(output_per_mtok=1_000_000.0)  # $1 per completion token
    cfg.llm.prices = {"openai/learner-model": price, "openai/user-model": price}
    cfg.llm.round_budget_usd = 10.0
    forget_spend()
    train_learner.fn(cfg, "icl", 1)
    # The user opens ($7), the learner answers ($3): round 1 is at its cap, the user's next
    # turn is refused, and the evaluation stops instead of scoring an infrastructure failure.
    server.script(
        Reply.text("Hi, I need help with my booking.", completion_tokens=7),
        Reply.text("Sorry, I can't.", completion_tokens=3),
    )
    with pytest.raises(BudgetExceeded) as stopped:
        evaluate_learner.fn(cfg, "icl", 1)
    assert str(stopped.value).startswith(
        "llm.round_budget_usd reached: round 1's model calls cost $10.0000 of its $10 cap "
        "(user_simulator call refused)"
    )
    assert server.request_count == 2
    lake = Lake(str(root))
    # Both paid attempts are stored under round 1 (the spend survives a restart); no results.
    calls = lake.read(LLMCall, "icl", 1)
    assert sorted((c.role, c.cost) for c in calls) == [("learner", 3.0), ("user_simulator", 7.0)]
    assert lake.read(EvalResult, "icl", 1) == []
    # A new process reads them back: the round is still at its cap, round 2 is not.
    forget_spend()
    gateway = Gateway.from_config(cfg.llm, "learner").bind_spend("icl", str(root), 1)
    assert gateway.ledger is not None
    assert gateway.ledger.round_spent(1) == 10.0 and gateway.ledger.round_spent(2) == 0.0
