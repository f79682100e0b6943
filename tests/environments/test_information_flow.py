"""The gold-conversation gate: what the agent may act on, what the user owns, what they hear.

Three kinds of evidence: hand-made dialogues that break one rule each; the programmatic
Teachers' own rollouts, which must pass (and whose seeded slips must not); and 63 dialogues
written blind by a capable model (``labels/model_written``), against which the gate's verdicts
are scored as a reader labelled them.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest
from pydantic import TypeAdapter
from synthesis_checks import exploration
from tau2.data_model.message import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)

from evosyn.agents.planner.programmatic import ProgrammaticPlanner
from evosyn.agents.synthesis import SynthesisBatch, gate_breaks, synthesize
from evosyn.agents.verifier.replay import ReplayVerifier
from evosyn.environments.base import FunctionalSymbol
from evosyn.environments.information_flow import (
    FlowRules,
    fact_breaks,
    failure_breaks,
    flow_breaks,
    hearing_breaks,
    procedure_breaks,
    repeat_breaks,
)
from evosyn.environments.kit.dialogue import stock_system_prompt
from evosyn.environments.registry import domain_plugin, get_domain
from evosyn.environments.spoken_forms import date_forms
from evosyn.space import seed_space

LABELS = Path(__file__).parent / "labels"
#: Written blind by two capable-model sessions; the gate was generalized after the first
#: measurement on the held-out set (docs/quality.md gives both rounds).
SETS = ("model_written", "model_written_heldout")
FLOOR = 0.9
_MESSAGES = TypeAdapter(list[Message])


def _airline() -> tuple[object, FlowRules]:
    rules = domain_plugin("airline").flow
    assert rules is not None
    return get_domain("airline"), rules


def _call(name: str, number: int, **arguments: object) -> list[Message]:
    call = ToolCall(id=f"c{number}", name=name, arguments=arguments, requestor="assistant")
    result = get_domain("airline").execute(get_domain("airline").initial_state(), call)
    return [AssistantMessage(role="assistant", content=None, tool_calls=[call]), result]


def _profile(user: str = "mia_li_3668") -> list[Message]:
    return [
        SystemMessage(role="system", content="policy"),
        AssistantMessage(role="assistant", content="Hi! How can I help you today?"),
        UserMessage(role="user", content=f"Hi, I'm {user} and I want to add a bag."),
        *_call("get_user_details", 0, user_id=user),
    ]


def test_an_id_the_agent_never_saw_is_named() -> None:
    domain, rules = _airline()
    messages = [*_profile(), *_call("get_reservation_details", 1, reservation_id="ZZZZZZ")]
    [only] = flow_breaks(domain, rules, messages)  # type: ignore[arg-type]
    assert only.startswith("flow: tool call #1 get_reservation_details argument reservation_id")


def test_an_id_from_a_tool_result_or_the_user_is_grounded() -> None:
    domain, rules = _airline()
    user = get_domain("airline").initial_state().db.users["mia_li_3668"]
    reservation = user.reservations[0]
    messages = [*_profile(), *_call("get_reservation_details", 1, reservation_id=reservation)]
    assert flow_breaks(domain, rules, messages) == []  # type: ignore[arg-type]


def test_a_date_said_in_words_grounds_its_iso_form() -> None:
    assert "May 26" in [f.title().replace("May", "May") for f in date_forms("2024-05-26")]
    domain, rules = _airline()
    messages = [
        SystemMessage(role="system", content="policy"),
        UserMessage(role="user", content="I'd like to fly from Newark to Miami on May 26th."),
        *_call("search_direct_flight", 0, origin="EWR", destination="MIA", date="2024-05-26"),
    ]
    assert flow_breaks(domain, rules, messages) == []  # type: ignore[arg-type]


def test_a_card_the_user_never_named_is_a_choice_made_for_them() -> None:
    domain, rules = _airline()
    db = get_domain("airline").initial_state().db
    user = db.users["mia_li_3668"]
    card = next(k for k, m in user.payment_methods.items() if m.source == "credit_card")
    last_four = user.payment_methods[card].last_four  # type: ignore[union-attr]
    reservation = user.reservations[0]
    base = [*_profile(), *_call("get_reservation_details", 1, reservation_id=reservation)]
    write = ToolCall(
        id="w",
        name="update_reservation_baggages",
        arguments={
            "reservation_id": reservation,
            "total_baggages": 9,
            "nonfree_baggages": 0,
            "payment_id": card,
        },
        requestor="assistant",
    )
    act = AssistantMessage(role="assistant", content=None, tool_calls=[write])
    silent = [*base, UserMessage(role="user", content="Yes."), act]
    breaks = flow_breaks(domain, rules, silent)  # type: ignore[arg-type]
    assert any(b.startswith("choice:") and "payment_id" in b for b in breaks)
    said = [
        *base,
        UserMessage(
            role="user",
            content=f"Nine bags in total - 9 checked bags. Use the card ending {last_four}.",
        ),
        act,
    ]
    assert not any("payment_id" in b for b in flow_breaks(domain, rules, said))  # type: ignore[arg-type]


def test_a_charge_agreed_without_its_amount_and_an_internal_id_read_out_are_named() -> None:
    domain, rules = _airline()
    write = ToolCall(id="w", name="cancel_reservation", arguments={"reservation_id": "X"})
    quiet = [
        AssistantMessage(role="assistant", content="Shall I cancel reservation X?"),
        UserMessage(role="user", content="Yes."),
        AssistantMessage(role="assistant", content=None, tool_calls=[write]),
    ]
    assert procedure_breaks(domain, rules, quiet)  # type: ignore[arg-type]
    priced = [
        AssistantMessage(role="assistant", content="Cancel X; you get $120 back. Shall I?"),
        *quiet[1:],
    ]
    assert procedure_breaks(domain, rules, priced) == []  # type: ignore[arg-type]
    card = next(iter(get_domain("airline").initial_state().db.users["mia_li_3668"].payment_methods))
    told = [
        *_profile(),
        AssistantMessage(role="assistant", content=f"I'll use {card} for the bag(s)."),
    ]
    breaks = hearing_breaks(rules, told)
    assert any(f"internal id {card}" in b for b in breaks)
    assert any("'(s)'" in b for b in breaks)


def test_a_proposal_whose_amount_the_write_did_not_move_is_named() -> None:
    _, rules = _airline()
    db = get_domain("airline").initial_state().db
    reservation = next(r for r in db.reservations.values() if r.payment_history)
    refund = sum(p.amount for p in reservation.payment_history)
    base = [
        SystemMessage(role="system", content="policy"),
        *_call("get_reservation_details", 0, reservation_id=reservation.reservation_id),
    ]

    def proposed(amount: float) -> list[Message]:
        return [
            *base,
            AssistantMessage(
                role="assistant", content=f"I'll cancel it; you get ${amount:g} back. OK?"
            ),
            UserMessage(role="user", content="Yes."),
            *_call("cancel_reservation", 1, reservation_id=reservation.reservation_id),
        ]

    assert fact_breaks(rules, proposed(refund)) == []
    [wrong] = fact_breaks(rules, proposed(refund - 60))
    assert wrong.startswith("fact: tool call #1 cancel_reservation moved")


@pytest.mark.parametrize("domain", ["airline", "retail", "telecom", "mock"])
def test_programmatic_teachers_pass_the_gate_and_their_slips_do_not(domain: str) -> None:
    space = seed_space(domain, "g", round=1)
    blueprints = ProgrammaticPlanner().plan(
        space, exploration(space, 40, direction_id="r1-x"), seed=3
    )
    plugin = domain_plugin(domain)
    verifier = ReplayVerifier(domain)
    clean = synthesize(blueprints, plugin.generator(), plugin.teacher(), verifier, seed=3)
    gated = [r for r in clean.rejections if r.stage == "gate"]
    # A clean rollout breaks no rule; at most one task in 40 has no rollout that can keep it.
    assert len(gated) <= 1, [r.reason for r in gated]
    slipping = plugin.teacher(mistake_rate=0.5)
    first = [slipping.rollout(t, seed=3) for t in clean.tasks]
    caught = [t for t in first if gate_breaks(domain, t.messages)]
    if domain != "mock":  # mock's writes take no card and cost nothing: no gate slip applies
        assert caught, "a gate slip must be caught"


@cache
def _labelled(folder: str) -> list[tuple[str, dict[str, object], list[Message]]]:
    out = []
    for path in sorted((LABELS / folder).glob("*.json")):
        record = json.loads(path.read_text())
        domain = get_domain(record["domain"])
        system = SystemMessage(role="system", content=stock_system_prompt(domain))
        out.append(
            (
                record["domain"],
                record["labels"],
                [system, *_MESSAGES.validate_python(record["messages"])],
            )
        )
    return out


def _score(folder: str, kind: str) -> tuple[int, int, int]:
    tp = fp = fn = 0
    for name, labels, messages in _labelled(folder):
        domain, rules = get_domain(name), domain_plugin(name).flow or FlowRules()
        if kind == "flow":
            found = bool(flow_breaks(domain, rules, messages))
            truth = bool(labels["ungrounded_args"]) or bool(labels["acted_before_identified"])
        elif kind == "repeat":
            found = bool(repeat_breaks(rules, messages))
            truth = bool(labels["repeated_questions"])
        elif kind == "price":
            # No amount, or not the amount the write moved: both leave the yes uninformed.
            found = bool(procedure_breaks(domain, rules, messages)) or bool(
                fact_breaks(rules, messages)
            )
            truth = labels["price_before_yes"] is False
        else:
            found = any("internal id" in b for b in hearing_breaks(rules, messages))
            truth = bool(labels["internal_ids_told"])
        tp += found and truth
        fp += found and not truth
        fn += truth and not found
    return tp, fp, fn


@pytest.mark.parametrize("folder", SETS)
@pytest.mark.parametrize("kind", ["flow", "price", "ids", "repeat"])
def test_the_gate_agrees_with_readers_on_model_written_dialogues(folder: str, kind: str) -> None:
    assert len(_labelled(folder)) >= 60
    tp, fp, fn = _score(folder, kind)
    assert tp >= 3, "too few labelled breaks to measure"
    precision, recall = tp / (tp + fp), tp / (tp + fn)
    assert precision >= FLOOR and recall >= FLOOR, (kind, tp, fp, fn)


def _retail_call(name: str, number: int, **arguments: object) -> list[Message]:
    call = ToolCall(id=f"r{number}", name=name, arguments=arguments, requestor="assistant")
    result = get_domain("retail").execute(get_domain("retail").initial_state(), call)
    return [AssistantMessage(role="assistant", content=None, tool_calls=[call]), result]


def _retail_write(name: str, **arguments: object) -> AssistantMessage:
    call = ToolCall(id="w", name=name, arguments=arguments, requestor="assistant")
    return AssistantMessage(role="assistant", content=None, tool_calls=[call])


def test_a_choice_break_says_what_was_missing() -> None:
    domain, rules = get_domain("retail"), domain_plugin("retail").flow
    assert rules is not None
    user = "yusuf_ahmed_6232"
    order, other = "#W7007896", "#W1302858"
    card = "credit_card_2167533"  # his only credit card: a Visa ending in 4015
    opening = [
        SystemMessage(role="system", content="policy"),
        AssistantMessage(role="assistant", content="Hi! How can I help you today?"),
        UserMessage(role="user", content=f"Hi, I'm {user}. I want to change order {order}."),
        *_retail_call(
            "find_user_id_by_name_zip", 0, first_name="Yusuf", last_name="Ahmed", zip="91075"
        ),
        *_retail_call("get_order_details", 1, order_id=order),
    ]
    [item] = [i for i in json.loads(opening[-1].content)["items"]][:1]  # type: ignore[arg-type]
    swap = _retail_write(
        "modify_pending_order_items",
        order_id=order,
        item_ids=[item["item_id"]],
        new_item_ids=[item["item_id"]],
        payment_method_id=card,
    )

    def payment_break(messages: list[Message]) -> str:
        breaks = flow_breaks(domain, rules, messages)
        [found] = [b for b in breaks if b.startswith("choice:") and "payment_method_id" in b]
        return found

    # The user called the card by its brand; the agent had only seen the order's payment
    # history, which shows no brand: the break says so, not that the user never named it.
    brand = UserMessage(role="user", content="Put the difference on my Visa.")
    reason = payment_break([*opening, brand, swap])
    assert reason.startswith(
        f'choice: tool call #2 modify_pending_order_items argument payment_method_id "{card}": '
    )
    assert "never named" not in reason
    assert "nothing the user said names this payment as the agent's tool results show it" in reason
    assert '"credit card"' in reason and "a brand, a nickname" in reason
    # With the saved methods looked up, the words are the card's last four digits.
    looked = [*opening, *_retail_call("get_user_details", 2, user_id=user), brand, swap]
    assert '"4015"' in payment_break(looked)
    # Where no tool result showed the payment, the user never named it.
    silent = UserMessage(role="user", content="Go ahead.")
    assert payment_break([*opening[:3], silent, swap]).endswith("the user never named this payment")

    # An order the agent found and proposed, which the user only said yes to.
    proposed = [
        *opening,
        *_retail_call("get_user_details", 2, user_id=user),
        AssistantMessage(
            role="assistant", content=f"I see order {other} is pending too: that one?"
        ),
        UserMessage(role="user", content="Yes, that's the one. Send it to 12 Elm St."),
        _retail_write(
            "modify_pending_order_address",
            order_id=other,
            address1="12 Elm St",
            address2="",
            city="Fort Worth",
            state="TX",
            country="USA",
            zip="76102",
        ),
    ]
    [order_break] = [b for b in flow_breaks(domain, rules, proposed) if "order_id" in b]
    assert "the agent named the order to the user, who never named it themselves" in order_break
    assert "a yes to the agent's proposal is not their choice" in order_break


def _bag_writes(*totals: tuple[str, int]) -> list[Message]:
    return [
        AssistantMessage(
            role="assistant",
            content=None,
            tool_calls=[
                ToolCall(
                    id=f"w{i}",
                    name="update_reservation_baggages",
                    arguments={
                        "reservation_id": reservation,
                        "total_baggages": total,
                        "nonfree_baggages": 0,
                        "payment_id": "gift_card_0000000",
                    },
                    requestor="assistant",
                )
            ],
        )
        for i, (reservation, total) in enumerate(totals)
    ]


@pytest.mark.parametrize(
    ("question", "words", "unnamed"),
    [
        # Worded as a capable model's user did in a live run (each total rejected before).
        ("", "For bags: 3 total on {a}, and 2 total on {b}.", set()),
        ("How many checked bags in total on each?", "3 on {a} and 2 on {b}.", set()),
        ("", "I have 2 kids. Please add bags to {a} and {b}, 3 on the first.", {2}),
        ("", "Please add bags to {a} and {b}.", {2, 3}),
    ],
)
def test_a_count_stated_about_the_topic_is_the_users_however_it_is_worded(
    question: str, words: str, unnamed: set[int]
) -> None:
    domain, rules = _airline()
    a, b = get_domain("airline").initial_state().db.users["mia_li_3668"].reservations[:2]
    base = [*_profile(), *_call("get_reservation_details", 1, reservation_id=a)]
    asked = [AssistantMessage(role="assistant", content=question)] if question else []
    said = UserMessage(role="user", content=words.format(a=a, b=b))
    messages = [*base, *asked, said, *_bag_writes((a, 3), (b, 2))]
    breaks = [
        b
        for b in flow_breaks(domain, rules, messages)
        if "total_baggages" in b  # type: ignore[arg-type]
    ]
    assert {int(b.split("total_baggages ")[1].split(":")[0]) for b in breaks} == unnamed, breaks


@pytest.mark.parametrize(
    ("words", "grounded"),
    [
        # The live airline rerun's customer: the change, not the new total.
        ("Hi! I need to add 3 checked bags to reservation {r}.", True),
        ("I'd like 3 more bags on {r}.", True),
        # A plain count is the total, not a change: it does not ground current + 3.
        ("I want 3 bags on {r}.", False),
    ],
)
def test_a_change_to_a_count_grounds_the_new_total(words: str, grounded: bool) -> None:
    domain, rules = _airline()
    db = get_domain("airline").initial_state().db
    r = db.users["mia_li_3668"].reservations[0]
    total = db.reservations[r].total_baggages + 3
    base = [*_profile(), *_call("get_reservation_details", 1, reservation_id=r)]
    said = UserMessage(role="user", content=words.format(r=r))
    messages = [*base, said, *_bag_writes((r, total))]
    breaks = [b for b in flow_breaks(domain, rules, messages) if "total_baggages" in b]  # type: ignore[arg-type]
    assert (breaks == []) == grounded, breaks


@cache
def _synthesized(domain: str) -> SynthesisBatch:
    """``domain``'s programmatic synthesis of 40 exploration blueprints (seed 3)."""
    space = seed_space(domain, "g", round=1)
    blueprints = ProgrammaticPlanner().plan(
        space, exploration(space, 40, direction_id="r1-x"), seed=3
    )
    plugin = domain_plugin(domain)
    return synthesize(
        blueprints, plugin.generator(), plugin.teacher(), ReplayVerifier(domain), seed=3
    )


def _gold(domain: str) -> list[list[Message]]:
    """The verified dialogues of :func:`_synthesized`."""
    batch = _synthesized(domain)
    verified = {v.trajectory_id for v in batch.verified}
    return [t.messages for t in batch.trajectories if t.trajectory_id in verified]


def _a_write(domain: str) -> tuple[list[Message], int]:
    """A verified dialogue of ``domain`` and the position of its first agent write's result."""
    for messages in _gold(domain):
        calls = {
            c.id: c for m in messages if isinstance(m, AssistantMessage) for c in m.tool_calls or []
        }
        for position, message in enumerate(messages):
            call = calls.get(message.id) if isinstance(message, ToolMessage) else None
            if call is not None and get_domain(domain).symbol(call.name) == FunctionalSymbol.WRITE:
                return messages, position
    raise AssertionError(f"no verified {domain} dialogue writes")


@pytest.mark.parametrize("domain", ["airline", "retail", "telecom"])
@pytest.mark.parametrize(
    ("after", "broken"),
    [
        ("its own words", True),  # the gold agent's words after the write, now after an error
        ("moved on", True),  # the agent's report left out: the user speaks next
        ("told it failed", False),
        ("retried", False),  # the same write called again and made: a recovered mistake
    ],
)
def test_a_failed_write_must_be_told_as_not_done(domain: str, after: str, broken: bool) -> None:
    rules = _rules(domain)
    messages, position = _a_write(domain)
    made = messages[position]
    assert isinstance(made, ToolMessage)
    failed = made.model_copy(update={"content": "Error: Not enough balance", "error": True})
    before, rest = [*messages[:position], failed], list(messages[position + 1 :])
    report = next(i for i, m in enumerate(rest) if isinstance(m, AssistantMessage) and m.content)
    if after == "moved on":
        rest = [m for i, m in enumerate(rest) if i != report]
    elif after == "told it failed":
        sorry = "I'm sorry, that didn't go through: the balance is not enough. Another card?"
        rest[report] = AssistantMessage(role="assistant", content=sorry)
    elif after == "retried":
        [call] = [c for c in messages[position - 1].tool_calls or [] if c.id == made.id]  # type: ignore[union-attr]
        again = call.model_copy(update={"id": "again"})
        retry = AssistantMessage(role="assistant", content=None, tool_calls=[again])
        rest = [retry, made.model_copy(update={"id": "again"}), *rest]
    assert failure_breaks(get_domain(domain), rules, messages) == []
    breaks = failure_breaks(get_domain(domain), rules, [*before, *rest])
    assert bool(breaks) == broken, breaks
    if broken:
        [only] = breaks
        assert only.startswith("failure: tool call #") and "returned an error" in only
        assert only in gate_breaks(domain, [*before, *rest])


def test_the_programmatic_teachers_failed_slips_are_named_and_its_gold_is_not() -> None:
    """A seeded wrong card that the write refuses, then confirmed as done: real positives."""
    rules = _rules("airline")
    assert not any(failure_breaks(get_domain("airline"), rules, m) for m in _gold("airline"))
    slipping = domain_plugin("airline").teacher(mistake_rate=1.0)
    tasks = _synthesized("airline").tasks
    rollouts = [slipping.rollout(t, seed=s).messages for t in tasks for s in range(3)]
    refused = [m for m in rollouts if any(isinstance(x, ToolMessage) and x.error for x in m)]
    assert refused, "no seeded slip was refused by its write"
    assert all(failure_breaks(get_domain("airline"), rules, m) for m in refused)


@pytest.mark.parametrize("folder", [*SETS, "model_written_fresh", "model_written_fresh2"])
def test_no_model_written_dialogue_hides_a_failure(folder: str) -> None:
    """Capable models' dialogues (two with a failed look-up, none with a failed write)."""
    dialogues = [(name, m) for name, _, m in _labelled(folder) if _calls_tools(m)]
    assert all(failure_breaks(get_domain(name), _rules(name), m) == [] for name, m in dialogues)


def _rules(domain: str) -> FlowRules:
    return domain_plugin(domain).flow or FlowRules()


def _calls_tools(messages: list[Message]) -> bool:
    return any(isinstance(m, AssistantMessage) and m.tool_calls for m in messages)
