"""The training-grade checks of environments.quality on hand-built tasks and dialogues."""

from __future__ import annotations

from tau2.data_model.message import AssistantMessage, UserMessage
from tau2.data_model.tasks import (
    EvaluationCriteria,
    StructuredUserInstructions,
    Task,
    UserScenario,
)

from evosyn.agents.verifier.replay import ReplayVerifier
from evosyn.environments import get_domain, quality


def _task(answers: list[str], reason: str = "You want help.", known: str = "", unknown=None):
    return Task(
        id="t",
        user_scenario=UserScenario(
            instructions=StructuredUserInstructions(
                domain="retail",
                reason_for_call=reason,
                known_info=known,
                unknown_info=unknown,
                task_instructions="End the call when done.",
            )
        ),
        evaluation_criteria=EvaluationCriteria(actions=[], communicate_info=answers),
    )


def _say(*turns: tuple[str, str]):
    return [
        UserMessage(role="user", content=t) if r == "user" else AssistantMessage(role=r, content=t)
        for r, t in turns
    ]


def test_an_answer_to_a_question_is_in_context() -> None:
    task = _task(["3469.89"])
    dialogue = _say(
        ("user", "How much did my two orders come to?"),
        ("assistant", "Your two orders came to $3,469.89 in total."),
    )
    assert quality.out_of_context_answers(task, dialogue) == []


def test_a_closing_summary_line_is_out_of_context() -> None:
    task = _task(["3469.89"])
    dialogue = _say(
        ("user", "Yes, go ahead."),
        ("assistant", "Done. For your records: 3469.89. Is there anything else I can help with?"),
    )
    assert quality.out_of_context_answers(task, dialogue) == ["3469.89"]


def test_a_proposal_states_its_price_in_context() -> None:
    task = _task(["89"])
    dialogue = _say(
        ("user", "I want to move my flight."),
        ("assistant", "The change costs $89 on your Visa. Shall I go ahead?"),
    )
    assert quality.out_of_context_answers(task, dialogue) == []


def test_brittle_answers() -> None:
    assert quality.brittle_answers(_task(["-7.44", "40.0", "6", "gold", "40.50"])) == [
        "-7.44",
        "40.0",
        "6",
    ]


def test_leaked_ids_and_contradictions() -> None:
    task = _task(
        [],
        reason="You want order #W9933266 shipped elsewhere.",
        known="Pay with credit_card_5586615.",
        unknown="You do not know your order ids.",
    )
    assert quality.leaked_ids(task) == ["credit_card_5586615"]
    assert quality.contradictions(task) == ["told not to know the order id but given #W9933266"]
    clean = _task(
        [],
        reason="You want your latest order shipped elsewhere.",
        unknown="You do not know your order ids.",
    )
    assert quality.contradictions(clean) == []


def test_do_nothing_fails_a_task_that_asks_for_an_answer() -> None:
    domain = get_domain("retail")
    task = _task(["3469.89"])
    verdict = ReplayVerifier(domain).verify(task, quality.do_nothing(task, domain.policy()))
    assert not verdict.passed
    silent = _task([])
    assert ReplayVerifier(domain).verify(silent, quality.do_nothing(silent, domain.policy())).passed


def test_mask_hides_ids_numbers_and_names() -> None:
    assert quality.mask(
        "Hi, I am Raj Lee, order #W9933266 on 2024-05-01 from SEA.", ["Raj", "Lee"]
    ) == ("Hi, I am <name> <name>, order <id> on <n> from <code>.")
