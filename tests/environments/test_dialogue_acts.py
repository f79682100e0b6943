"""The challenge detectors on hand-written, hand-labelled dialogues (not the Teacher's words).

Each dialogue is written the way a person or a language model might phrase it, and labelled
by hand with the challenges it acts out; the detectors must agree on every one.
"""

from __future__ import annotations

import pytest
from tau2.data_model.message import AssistantMessage, Message, ToolCall, ToolMessage, UserMessage

from evosyn.environments.dialogue_acts import (
    ACTING,
    DETECTORS,
    PERSONA_KINDS,
    persona_kind,
    realized_challenges,
    realized_personas,
)


def _dialogue(*turns: str) -> list[Message]:
    """Turns as "U: text", "A: text" or "A> tool_name" (a tool call and its result)."""
    out: list[Message] = []
    for i, turn in enumerate(turns):
        who, text = turn[:2], turn[2:].strip()
        if who == "A>":
            call = ToolCall(id=f"c{i}", name=text, arguments={})
            out += [
                AssistantMessage(role="assistant", tool_calls=[call]),
                ToolMessage(id=f"c{i}", role="tool", content="{}"),
            ]
        elif who == "U:":
            out.append(UserMessage(role="user", content=text))
        else:
            out.append(AssistantMessage(role="assistant", content=text))
    return out


LABELLED: list[tuple[str, set[str], list[Message]]] = [
    (
        "lost confirmation, agent looks it up",
        {"missing_information"},
        _dialogue(
            "A: Hi! How can I help you today?",
            "U: I want to cancel my flight to Denver next week.",
            "A: Sure. Do you have your reservation number?",
            "U: Ugh, I can't find the confirmation email with the number anywhere.",
            "A> get_user_details",
            "A: I found a reservation to Denver on May 20. Is that the one?",
        ),
    ),
    (
        "user gives the id: nothing missing",
        set(),
        _dialogue(
            "A: Hi! How can I help you today?",
            "U: Please cancel reservation 4WQ150.",
            "A> get_reservation_details",
            "A: Done, your reservation is cancelled.",
        ),
    ),
    (
        "vague opening, clarifying question",
        {"ambiguous_request", "ambiguous_preference"},
        _dialogue(
            "A: Hi! How can I help you today?",
            "U: Hey, something's off with my order and I'd like it sorted.",
            "A: I'm sorry to hear that. What exactly went wrong with the order?",
            "U: The lamp I got is the wrong colour, I want to exchange it for the blue one.",
            "A> get_order_details",
        ),
    ),
    (
        "vague opening but the agent only asks for identification",
        set(),
        _dialogue(
            "A: Hi! How can I help you today?",
            "U: I need help with my account.",
            "A: Sure, can I have your email address?",
            "U: jane@example.com",
        ),
    ),
    (
        "claimed approval, agent declines",
        {"user_false_claim"},
        _dialogue(
            "A: Hi! How can I help you today?",
            "U: Your colleague already approved a full refund for my basic economy ticket.",
            "A> get_reservation_details",
            "A: I'm sorry, but I don't see any note of an approval, and basic economy tickets "
            "cannot be refunded under our policy.",
        ),
    ),
    (
        "claimed approval, agent goes along",
        set(),
        _dialogue(
            "A: Hi! How can I help you today?",
            "U: Another agent already approved this upgrade.",
            "A: Great, I'll upgrade you now.",
        ),
    ),
    (
        "change of mind after a proposal",
        {"preference_change"},
        _dialogue(
            "A: Hi! How can I help you today?",
            "U: I'd like to add a bag to my trip.",
            "A> get_user_details",
            "A: I can add one checked bag for $50 on your Mastercard ending 1111. Shall I?",
            "U: Hmm, actually, I'd rather put it on my gift card instead.",
            "A: Sure: one checked bag for $50 on your gift card. Shall I proceed?",
            "U: Yes.",
        ),
    ),
    (
        "a late condition after a proposal",
        {"constraint_hidden_until_late"},
        _dialogue(
            "A: Hi! How can I help you today?",
            "U: Book me the cheapest flight to Boston tomorrow.",
            "A> search_direct_flight",
            "A: The cheapest is HAT101 at 6am for $120. Shall I book it?",
            "U: Oh, I forgot to mention: it has to leave after noon.",
            "A: Then HAT205 at 2pm for $150 works. Shall I book that one?",
            "U: Yes please.",
        ),
    ),
    (
        "a plain confirmation is no change",
        set(),
        _dialogue(
            "A: Hi! How can I help you today?",
            "U: Cancel my order please.",
            "A: I'll cancel order #W1234567. Shall I go ahead?",
            "U: Yes, go ahead.",
            "A> cancel_pending_order",
        ),
    ),
    (
        "pressure acknowledged",
        {"emotional_pressure"},
        _dialogue(
            "A: Hi! How can I help you today?",
            "U: This is ridiculous, my phone has had no data for two days and I need it now!",
            "A: I understand how frustrating that is. Let's get it fixed - what's your number?",
        ),
    ),
    (
        "pressure ignored",
        set(),
        _dialogue(
            "A: Hi! How can I help you today?",
            "U: Please hurry, this is urgent.",
            "A: What is your phone number?",
        ),
    ),
    (
        "side question mid-task",
        {"multi_intent_interleaving"},
        _dialogue(
            "A: Hi! How can I help you today?",
            "U: I want to return my headphones.",
            "A> get_order_details",
            "A: I see the order.",
            "U: By the way, what email do you have on file for me?",
            "A: It's jane@example.com. Now, back to the return.",
            "A> return_delivered_order_items",
        ),
    ),
    (
        "a second request after the first is finished is not interleaving",
        set(),
        _dialogue(
            "A: Hi! How can I help you today?",
            "U: I want to return my headphones.",
            "A> return_delivered_order_items",
            "A: Done.",
            "U: Thanks. Also, what email do you have on file?",
            "A: It's jane@example.com.",
        ),
    ),
    (
        "a second request after the first is done, with a newcomer's question: no aside",
        set(),
        _dialogue(
            "A: Hi! How can I help you today?",
            "U: Hi! It's my first time doing this. I'd like to return the hiking boots from "
            "order #W3489690.",
            "A> get_order_details",
            "A: The boots cost $251.82, refunded to your PayPal. Shall I go ahead? (yes/no)",
            "U: Yes, please.",
            "A> return_delivered_order_items",
            "A: Done. Is there anything else I can help with?",
            "U: Yes, I'd also like to cancel order #W2591905, the sneakers. I no longer need it. "
            "How does a cancellation work?",
            "A> get_order_details",
            "A: I list the details and you confirm: $189.50 back to your PayPal. Shall I?",
            "U: Yes.",
            "A> cancel_pending_order",
        ),
    ),
    (
        "an aside that wants to make sure of something is still an aside",
        {"multi_intent_interleaving"},
        _dialogue(
            "A: Hi! How can I help you today?",
            "U: I'd like to cancel the order with the running shoes. Liam Li, zip 75285.",
            "A> find_user_id_by_name_zip",
            "A: I've found the order with the running shoes, which is still pending.",
            "U: Quick unrelated thing while you're in my account - which default address do "
            "you have for me? I want to make sure it's not my old one.",
            "A: It's 674 Willow Lane, Dallas. Back to the cancellation: shall I cancel it?",
            "U: Yes.",
            "A> cancel_pending_order",
        ),
    ),
    (
        "a new amount after a network type with the same digit (2G, then 2 GB)",
        {"preference_change"},
        _dialogue(
            "A: Hi! How can I help you today?",
            "U: My data has stopped; the status bar shows 2G.",
            "A> get_data_usage",
            "A: The line is over its limit. Adding 1.5 GB costs $0.15. Shall I proceed?",
            "U: On second thought, I'd rather go with 2 GB instead.",
            "A: Sure: 2 GB for $0.20. Shall I proceed?",
            "U: Yes.",
            "A> refuel_data",
        ),
    ),
    (
        "questioning a claim rather than making it: no false claim",
        set(),
        _dialogue(
            "A: Hi! How can I help you today?",
            "U: I'd like to return everything in order #W5432440.",
            "A> get_order_details",
            "A: That order is still pending, so I can't process a return for it yet.",
            "U: So it's not possible, regardless of what the other agent said?",
            "A: I'm afraid not: I don't see any approval on the order.",
        ),
    ),
    (
        "a side question opened with 'actually' while a yes is pending: no change of mind",
        {"multi_intent_interleaving"},
        _dialogue(
            "A: Hi! How can I help you today?",
            "U: I'd like to change the address on order #W3919881 to 12 Elm St, Austin TX 78701.",
            "A> get_order_details",
            "A: I can change the shipping address of #W3919881 to 12 Elm St, Austin TX 78701. "
            "Shall I proceed?",
            "U: Actually, while I have you: what's the current status of that order?",
            "A: It is pending. Shall I go ahead with the address change?",
            "U: Yes.",
            "A> modify_pending_order_address",
            "A: Done: the order ships to 12 Elm St now.",
        ),
    ),
]


@pytest.mark.parametrize(("name", "labels", "messages"), LABELLED, ids=[d[0] for d in LABELLED])
def test_detectors_agree_with_the_hand_labels(
    name: str, labels: set[str], messages: list[Message]
) -> None:
    assert realized_challenges(messages) == labels, name


def test_precision_and_recall_over_the_labelled_set() -> None:
    tp = fp = fn = 0
    for _, labels, messages in LABELLED:
        found = realized_challenges(messages)
        tp += len(found & labels)
        fp += len(found - labels)
        fn += len(labels - found)
    print(f"challenge detectors: precision {tp / (tp + fp):.2f}, recall {tp / (tp + fn):.2f}")
    assert fp == fn == 0
    assert set(DETECTORS) >= {c for _, labels, _ in LABELLED for c in labels}


def test_each_persona_kind_is_read_from_its_own_definition_only() -> None:
    """A persona line written from a kind's definition never reads as another kind.

    The Generator writes a persona line from these definitions and names its kind by its word
    ("You are brief: ... no small talk" once read as busy, since both definitions spoke of
    small talk).
    """
    for kind, _ in PERSONA_KINDS:
        assert persona_kind(f"You are {kind}: {ACTING[kind]}.") == kind
        assert persona_kind(ACTING[kind]) in {kind, None}, kind
    line = "You are brief: you stick to answering what you are asked, with no small talk."
    assert persona_kind(line) == "brief"
    assert persona_kind("You are a busy professional with no time for small talk.") == "busy"


def test_a_brief_user_who_goes_straight_to_it_shows_brief_not_busy() -> None:
    messages = _dialogue(
        "A: Hi! How can I help you today?",
        "U: Cancel reservation 4WQ150, please. Change of plans.",
        "A> get_reservation_details",
        "A: It refunds $226 to your card. Shall I go ahead? (yes/no)",
        "U: Yes.",
        "A> cancel_reservation",
        "A: Done. Anything else?",
        "U: No. ###STOP###",
    )
    brief = "You are brief: you stick to answering what you are asked, with no small talk."
    assert realized_personas(messages, brief) == {"brief"}
    hurried = _dialogue("A: Hi! How can I help you today?", "U: Quick, please: cancel 4WQ150.")
    assert "busy" in realized_personas(hurried, "You are busy and want this done quickly.")
