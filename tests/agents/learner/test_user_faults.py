"""User-simulator faults: planted ones are labelled, and their episodes are kept out of scoring."""

from __future__ import annotations

from typing import Any

import pytest
from tau2.data_model.message import AssistantMessage, ToolCall, ToolMessage, UserMessage

from evosyn.agents.gateway import Gateway, GatewaySettings
from evosyn.agents.learner.base import DiagnosticItem
from evosyn.agents.learner.episodes import EpisodeRunner, EpisodeSettings
from evosyn.agents.learner.user_faults import canonical, stated_facts, user_faults
from evosyn.environments import get_domain
from evosyn.records import Training
from tests.openai_server import OpenAIServer, Reply

DOMAIN = get_domain("airline")
TASKS = {t.id: t for t in DOMAIN.tasks("test")}
# Task 2: "You are Noah Muller. Your user id is noah_muller_9847."
NOAH = TASKS["2"]
DATABASE = canonical(DOMAIN.blank_state().db.model_dump_json())


def in_database(fact: str) -> bool:
    return fact in DATABASE


def user(text: str) -> UserMessage:
    return UserMessage(role="user", content=text)


def agent(text: str) -> AssistantMessage:
    return AssistantMessage(role="assistant", content=text)


def faults(messages: list[Any], termination: str = "user_stop") -> list[str]:
    return [f.label() for f in user_faults(NOAH, messages, termination, in_database)]


def test_facts_are_ids_dates_sums_and_addresses_not_words_with_a_digit() -> None:
    text = "id aarav_ahmed_6699, XEHM4B, #W2378156, card 7334, 2024-05-22, a.b@x.com, $1,234.50"
    assert stated_facts(text + ", 4g/5g, $50, 2 bags") == [
        "aarav_ahmed_6699",
        "xehm4b",
        "w2378156",
        "7334",
        "2024-05-22",
        "a.b@x.com",
        "1234.50",
    ]


def test_a_fact_from_the_instructions_or_the_conversation_is_no_fault() -> None:
    lookup = ToolCall(id="c1", name="get_user_details", arguments={"user_id": "noah_muller_9847"})
    messages = [
        agent("Hi! How can I help you today?"),
        user("Hi, my user id is noah_muller_9847."),
        AssistantMessage(role="assistant", content=None, tool_calls=[lookup]),
        ToolMessage(id="c1", role="tool", content='{"reservations": ["SDZQKO"]}'),
        agent("I see reservation SDZQKO. Is there anything else I can help you with?"),
        user("Yes, cancel SDZQKO please. ###STOP###"),
    ]
    assert faults(messages) == []


def test_planted_faults_are_each_labelled() -> None:
    invented = [agent("Hi!"), user("My reservation is QQQ999."), agent("Sorry, I cannot.")]
    [label] = faults(invented, "agent_stop")
    assert label.startswith("invented_fact: the user said 'qqq999'")
    assert label.endswith("(nor in the database)")
    # Another customer's id: in the database, never given to this user.
    guessed = [agent("Hi!"), user("I am mia_li_3668."), agent("Sorry, I cannot.")]
    [label] = faults(guessed, "agent_stop")
    assert "'mia_li_3668'" in label and label.endswith("(the database holds it)")
    hung_up = [
        agent("Hi!"),
        user("I want to change my flight, user id noah_muller_9847."),
        agent("Sure. Which reservation would you like to change?"),
        user("###STOP###"),
    ]
    [label] = faults(hung_up)
    assert label == (
        "ended_early: the user ended the conversation instead of answering "
        "'Sure. Which reservation would you like to change?'"
    )
    # Ended by the agent, or after the agent's closing offer: the user did nothing wrong.
    assert faults(hung_up, "agent_stop") == []
    offer = agent("Your flight is changed. Is there anything else I can help you with?")
    assert faults([*hung_up[:2], offer, user("No. ###STOP###")]) == []


# Episodes of three tasks, played one at a time: the user invents a fact in the first, hangs
# up in the second; the learner fails the third on its own.
PLANTED_IDS = ("2", "16", "8")
PLANTED_REPLIES = (
    # Task 2: the user invents a reservation id.
    Reply.text("Hi, please cancel reservation QQQ999."),
    Reply.text("I can't find it, sorry."),
    Reply.text("###STOP###"),
    # Task 16: the user hangs up on the agent's question.
    Reply.text("Hi, I'm aarav_garcia_1177 and I need to change my flight."),
    Reply.text("Which flight would you like instead?"),
    Reply.text("###STOP###"),
    # Task 8: the learner fails on its own: scored, and what the Reflector sees.
    Reply.text("Hi, I'm sophia_silva_7557 and I want to cancel a booking."),
    Reply.text("I can't help with bookings."),
    Reply.text("###STOP###"),
)

TRAINING = Training(
    campaign_id="uf",
    round=1,
    training_id="uf-r1",
    learner="icl",
    recipe={},
    dataset_snapshot="",
    n_samples=0,
    status="succeeded",
)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with OpenAIServer() as srv:
        yield srv


def test_faulty_episodes_are_marked_and_kept_out_of_the_results(server: OpenAIServer) -> None:
    settings = GatewaySettings(model="openai/m", api_base=server.url, cache=False, max_attempts=1)
    runner = EpisodeRunner(
        "airline",
        Gateway("learner", settings),
        Gateway("user_simulator", settings),
        lambda task: "POLICY",
        EpisodeSettings(max_steps=10, infra_retries=1, concurrency=1),
    )
    ids = list(PLANTED_IDS)
    server.script(*PLANTED_REPLIES)
    items = [DiagnosticItem(task_id=i, split="diagnostic", realized={}) for i in ids]
    results = runner.evaluate(TRAINING, {i: TASKS[i] for i in ids}, items)
    assert [(r.task_id, r.success) for r in results] == [("8", False)]
    marked = {f.task_id: f for f in runner.failures}
    assert set(marked) == {"2", "16"}
    assert all(f.kind == "user_sim_fault" and f.attempts == 1 for f in marked.values())
    assert marked["2"].message.startswith("user_sim_fault: invented_fact: the user said 'qqq999'")
    assert "ended_early" in marked["16"].message and "Which flight" in marked["16"].message
    assert server.request_count == 9  # not retried: the same seed would play it again
