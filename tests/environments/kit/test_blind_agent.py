"""The programmatic agent is blind by construction: it gets sealed requests, never the task."""

from __future__ import annotations

import ast
import inspect
import json
import textwrap
from pathlib import Path

import pytest
from tau2.data_model.message import (
    AssistantMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from tau2.data_model.tasks import Action
from tau2.domains.telecom.data_model import TelecomDB

from evosyn.environments import dialogue_acts, dialogue_acts_turns, get_domain, information_flow
from evosyn.environments.airline import teacher as airline_teacher
from evosyn.environments.airline.teacher import AirlineAgent, AirlineTeacher
from evosyn.environments.kit import acting
from evosyn.environments.kit import agent as agent_module
from evosyn.environments.kit import sealed as sealed_module
from evosyn.environments.kit.agent import ScriptedAgent
from evosyn.environments.kit.dialogue import Dialogue
from evosyn.environments.kit.scripted import ScriptedTeacher
from evosyn.environments.kit.sealed import SealedAction, SealedFact, Unseen, UserChannel
from evosyn.environments.mock.teacher import MockAgent
from evosyn.environments.registry import domain_plugin, list_domains
from evosyn.environments.retail.teacher import RetailAgent
from evosyn.environments.telecom.teacher import TelecomAgent

#: What holds the task: none of it may reach the agent side.
TASK_TYPES = {"Task", "SynthTask", "Action", "EvaluationCriteria", "UserScenario", "Answer"}
AGENTS = (ScriptedAgent, AirlineAgent, RetailAgent, TelecomAgent, MockAgent)


def _seen(*messages: object) -> information_flow.Seen:
    return information_flow.seen_before(list(messages))  # type: ignore[arg-type]


def _cancel() -> SealedAction:
    rules = domain_plugin("airline").flow
    return SealedAction(
        "cancel_reservation",
        "assistant",
        {"reservation_id": "ZFA04Y"},
        get_domain("airline"),
        rules,
    )


def test_a_sealed_request_refuses_to_open_an_unseen_value() -> None:
    request = _cancel()
    system = SystemMessage(role="system", content="<policy>airline</policy>")
    with pytest.raises(Unseen) as refused:
        request.open(_seen(system))
    # The error names what is missing, never the value itself.
    assert refused.value.paths == ["reservation_id"]
    assert "ZFA04Y" not in str(refused.value)
    assert request.unseen(_seen(system)) == ["reservation_id"]
    assert "ZFA04Y" not in repr(request)


def test_a_sealed_request_opens_once_the_user_said_the_value() -> None:
    request = _cancel()
    said = UserMessage(role="user", content="It's reservation ZFA04Y, my trip to Boston.")
    call = request.open(_seen(SystemMessage(role="system", content="policy"), said))
    assert (call.name, call.arguments) == ("cancel_reservation", {"reservation_id": "ZFA04Y"})


def test_a_value_a_tool_showed_grounds_it_too() -> None:
    request = _cancel()
    found = ToolMessage(
        id="c0", role="tool", content='{"reservations": ["ZFA04Y"]}', requestor="assistant"
    )
    shown_to_user = ToolMessage(
        id="c1", role="tool", content='{"reservations": ["ZFA04Y"]}', requestor="user"
    )
    # What the user's own device shows reaches the user, not the agent.
    assert request.unseen(_seen(shown_to_user)) == ["reservation_id"]
    assert request.unseen(_seen(found)) == []


def _bag_request() -> SealedAction:
    """A sealed bag update on reservation ZFA04Y: two bags, paid with credit_card_1."""
    return SealedAction(
        "update_reservation_baggages",
        "assistant",
        {
            "reservation_id": "ZFA04Y",
            "total_baggages": 2,
            "nonfree_baggages": 0,
            "payment_id": "credit_card_1",
        },
        get_domain("airline"),
        domain_plugin("airline").flow,
    )


def test_a_choice_the_user_never_named_holds_the_seal() -> None:
    request = _bag_request()
    record = ToolMessage(
        id="c0",
        role="tool",
        content='{"reservation_id": "ZFA04Y", "payment_methods": {"credit_card_1": {}}}',
        requestor="assistant",
    )
    seen = _seen(record)
    assert request.unseen(seen) == []  # every value seen ...
    unchosen = {c.argument for c in request.unchosen(seen)}
    assert "total_baggages" in unchosen  # ... but the bags are the user's to say
    with pytest.raises(Unseen):
        request.open(seen)
    # Waived (a seeded slip that chooses for the user), it opens; the gate names the choice.
    assert request.open(seen, waive=request.unchosen(seen)).arguments["total_baggages"] == 2


@pytest.mark.parametrize("agent", AGENTS)
def test_the_agent_side_takes_no_task(agent: type[ScriptedAgent]) -> None:
    for name, member in [
        ("__init__", agent.__init__),
        *inspect.getmembers(agent, inspect.isfunction),
    ]:
        for parameter in inspect.signature(member).parameters.values():
            annotation = str(parameter.annotation)
            assert not TASK_TYPES & set(annotation.replace("[", " ").replace("]", " ").split()), (
                agent.__name__,
                name,
                parameter.name,
            )
    # The channel to the user holds functions, not the user side and its task.
    assert {f for f in UserChannel.__dataclass_fields__} == {
        "pending",
        "served",
        "tell",
        "choose",
        "perform",
        "reply",
    }


@pytest.mark.parametrize("module", [agent_module, sealed_module])
def test_the_agent_modules_do_not_import_the_task(module: object) -> None:
    source = Path(inspect.getfile(module)).read_text("utf-8")  # type: ignore[arg-type]
    imported = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            assert node.module not in ("tau2.data_model.tasks", "evosyn.records"), node.module
            imported |= {alias.name for alias in node.names}
        elif isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
    assert not TASK_TYPES & imported
    assert not TASK_TYPES & set(vars(module))


#: What a task requests or holds: none of it may be an attribute of the shared dialogue.
REQUESTED = {"task", "known", "cues", "answers", "challenges", "persona", "acted", "performance"}


def test_the_dialogue_the_agent_speaks_in_holds_no_task() -> None:
    parameters = inspect.signature(Dialogue.__init__).parameters
    assert not REQUESTED & set(parameters)
    # Nor does a dialogue a Teacher rolled out carry the task's challenges or persona.
    domain = get_domain("airline")
    task = next(t for t in domain.tasks() if t.id == "1")
    dialogue = Dialogue(domain, domain.initial_state(task))
    assert not REQUESTED & set(vars(dialogue))


#: Agent-side code: the agent classes and the kit's functions they call.
_AGENT_SIDE = [
    *(ScriptedAgent, AirlineAgent, RetailAgent, TelecomAgent, MockAgent),
    *(acting.react, acting.side_answer, acting.named_method, acting.asks_to_go_over),
    *(acting.changes_mind, acting.saved_methods, acting.slip),
]


@pytest.mark.parametrize("part", _AGENT_SIDE, ids=lambda p: p.__qualname__)
def test_the_agent_side_reads_nothing_the_task_requests(part: object) -> None:
    # The requested challenges and persona live in the user side's Performance; an agent-side
    # part that reads them (or asks the user side for them) is acting on the task.
    source = textwrap.dedent(inspect.getsource(part))  # type: ignore[arg-type]
    read = {node.attr for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Attribute)}
    names = {node.id for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Name)}
    assert (
        not {
            "challenges",
            "persona",
            "acted",
            "performance",
            "persona_acted",
            "change_to",
            "gold",
            "known",
            "queue",
            "task",
        }
        & read
    ), part
    assert not {"Performance", "ScriptedUser", "Task", "Action"} & names, part


def _agent(domain_name: str, channel: UserChannel) -> tuple[ScriptedAgent, Dialogue]:
    domain = get_domain(domain_name)
    task = domain.tasks()[0]
    dialogue = Dialogue(domain, domain.initial_state(task))
    side = domain_plugin(domain_name).teacher().agent_side
    return side(domain, domain_plugin(domain_name).flow, dialogue, channel), dialogue


def test_a_requested_side_question_reaches_the_agent_only_as_the_users_words() -> None:
    # The user side asks it; the agent hears the words and answers from the record it read.
    _, dialogue = _blind_airline_agent()
    dialogue.call(
        ToolCall(
            id="",
            name="get_user_details",
            arguments={"user_id": "mia_li_3668"},
            requestor="assistant",
        )
    )
    dialogue.assistant("Which reservation is it?")
    dialogue.user(
        "It's ZFA04Y. By the way, could you check what membership level is on my account?"
    )
    assert dialogue.owed and "gold" in dialogue.owed[0]  # mia_li_3668 is a gold member
    # The same words with nothing put aside are no question to answer.
    _, dialogue = _blind_airline_agent()
    dialogue.user("It's ZFA04Y.")
    assert not dialogue.owed


def test_the_agent_proposes_what_the_user_named_not_what_the_request_holds() -> None:
    # A sealed refuel of 1 GB; the user named 2 GB first. The agent proposes 2 GB (it cannot
    # know the request holds another amount); on the change of mind it proposes 1 GB.
    replies = iter(["On second thought, I'd rather go with 1 GB instead.", "Yes, go ahead."])
    agent, dialogue = _agent(
        "telecom",
        UserChannel(
            pending=list,
            served=lambda _: None,
            tell=lambda *_: None,
            choose=lambda *_: None,
            perform=lambda _: None,
            reply=lambda _: dialogue.user(next(replies)),
        ),
    )
    db = dialogue.state.db_of(TelecomDB)
    line = next(line for line in db.lines if line.status == "Active")
    rules = domain_plugin("telecom").flow
    request = SealedAction(
        "refuel_data",
        "assistant",
        {"customer_id": "C1001", "line_id": line.line_id, "gb_amount": 1.0},
        get_domain("telecom"),
        rules,
    )
    dialogue.add(
        ToolMessage(
            id="c0",
            role="tool",
            content=json.dumps({"customer_id": "C1001", "line_ids": [line.line_id]}),
            requestor="assistant",
        )
    )
    dialogue.add(
        ToolMessage(id="c1", role="tool", content=line.model_dump_json(), requestor="assistant")
    )
    agent.since = len(dialogue.messages)
    dialogue.user(f"The line {line.phone_number}, and I'd like 2 GB of data added.")
    call = request.open(agent.seen(), settle=agent._named(request))
    assert call.arguments["gb_amount"] == 2.0
    settled = agent._propose(request, call, [])
    assert settled is not None and settled.arguments["gb_amount"] == 1.0
    proposals = [m.content or "" for m in dialogue.messages if m.role == "assistant"]
    assert "add 2 GB" in proposals[0] and "add 1 GB" in proposals[-1]


def test_a_settled_detail_never_shows_the_sealed_value() -> None:
    # The agent's own value replaces the sealed one; the call is checked with the agent's.
    request = _bag_request()
    record = ToolMessage(
        id="c0",
        role="tool",
        content='{"reservation_id": "ZFA04Y", "payment_methods": {"credit_card_1": {}, '
        '"gift_card_2": {}}}',
        requestor="assistant",
    )
    said = UserMessage(role="user", content="For ZFA04Y: 2 bags in total, please.")
    call = request.open(_seen(record, said), settle={"payment_id": "gift_card_2"})
    assert call.arguments["payment_id"] == "gift_card_2"
    # A value the agent never saw is refused, as a sealed one would be.
    with pytest.raises(Unseen):
        request.open(_seen(record, said), settle={"payment_id": "paypal_9"})


@pytest.mark.parametrize("domain", ["airline", "retail", "telecom"])
@pytest.mark.parametrize(
    "challenge",
    ["multi_intent_interleaving", "missing_information", "preference_change", "emotional_pressure"],
)
def test_what_a_task_requests_reaches_the_agent_only_through_the_user(
    domain: str, challenge: str
) -> None:
    # Same task, same seed, with and without a requested challenge: the two conversations
    # part first at a user turn. The agent cannot act on the request before the user's words
    # show it.
    teacher = domain_plugin(domain).teacher()
    for task in teacher.domain.tasks()[:5]:
        plain = teacher.messages(task, seed=3)
        asked = teacher.messages(task, seed=3, challenges=[challenge])
        parted = next(
            (i for i, (a, b) in enumerate(zip(plain, asked, strict=False)) if a != b), None
        )
        if parted is not None:
            assert isinstance(asked[parted], UserMessage), (task.id, asked[parted])


@pytest.mark.parametrize(
    "domain", [d for d in list_domains() if domain_plugin(d).offers("teacher")]
)
def test_every_domain_teacher_pairs_a_blind_agent_with_a_user(domain: str) -> None:
    teacher = domain_plugin(domain).teacher()
    assert isinstance(teacher, ScriptedTeacher)
    assert issubclass(teacher.agent_side, ScriptedAgent)
    assert not inspect.isabstract(teacher.agent_side)  # each domain words its own writes


def test_the_agent_never_sees_a_request_it_was_not_handed(monkeypatch: pytest.MonkeyPatch) -> None:
    # Everything the agent opens, it opens through the seal, after seeing every value.
    opened: list[tuple[str, bool]] = []
    original = SealedAction.open

    def spying(self: SealedAction, seen: information_flow.Seen, **kwargs: object) -> object:
        call = original(self, seen, **kwargs)  # type: ignore[arg-type]
        opened.append((call.name, not self.unseen(seen)))
        return call

    monkeypatch.setattr(SealedAction, "open", spying)
    task = next(t for t in get_domain("airline").tasks() if t.id == "1")
    messages = AirlineTeacher().messages(task, seed=0)
    calls = [
        call.name
        for m in messages
        if isinstance(m, AssistantMessage)
        for call in m.tool_calls or []
    ]
    assert calls and all(grounded for _, grounded in opened)
    assert set(calls) <= {name for name, _ in opened}


def test_an_action_handed_to_the_agent_is_refused_by_type() -> None:
    # The agent serves sealed requests; a gold action has no seal to open.
    gold = Action(action_id="a", name="cancel_reservation", arguments={"reservation_id": "X1"})
    assert not hasattr(gold, "unseen") and not hasattr(gold, "open")
    assert "request" in inspect.signature(ScriptedAgent.serve).parameters
    assert inspect.signature(ScriptedAgent.serve).parameters["request"].annotation in (
        "SealedAction",
        SealedAction,
    )


def test_the_user_gives_what_the_instructions_give_and_no_more() -> None:
    # Official task 11: the caller's instructions name the reservation, not the flights.
    task = next(t for t in get_domain("airline").tasks() if t.id == "11")
    messages = AirlineTeacher().messages(task, seed=0)
    asked = next(
        i
        for i, m in enumerate(messages)
        if isinstance(m, AssistantMessage) and "flight number" in (m.content or "")
    )
    reply = messages[asked + 1]
    assert isinstance(reply, UserMessage) and reply.content
    assert "GV1N64" in reply.content  # "... it is GV1N64" in the instructions
    # The flights it does not know: it says so rather than reciting the gold.
    assert "HAT003" not in reply.content and "the flight number" in reply.content


def test_a_sealed_fact_opens_only_on_what_the_agent_was_shown() -> None:
    fact = SealedFact("your free checked bag allowance", "4 free checked bag", "4 free bags")
    assert "4" not in repr(fact)
    with pytest.raises(Unseen) as refused:
        fact.open(['{"membership": "regular", "nonfree_baggages": 1}'])
    assert refused.value.paths == ["your free checked bag allowance"]
    # A calculation that came to 4.0 shows the count; the words around it are the question's.
    assert fact.open(['{"membership": "regular"}', "4.0"]) == "4 free bags"
    assert SealedFact("your membership level", "gold").open(['{"membership": "gold"}']) == "gold"


def _blind_airline_agent() -> tuple[AirlineAgent, Dialogue]:
    domain = get_domain("airline")
    task = next(t for t in domain.tasks() if t.id == "1")
    dialogue = Dialogue(domain, domain.initial_state(task))
    nothing = UserChannel(
        pending=list,
        served=lambda _: None,
        tell=lambda *_: None,
        choose=lambda *_: None,
        perform=lambda _: None,
        reply=lambda _: None,
    )
    return AirlineAgent(domain, domain_plugin("airline").flow, dialogue, nothing), dialogue


def test_the_agent_answers_from_its_records_and_says_what_it_cannot_find() -> None:
    agent, dialogue = _blind_airline_agent()
    dialogue.add(SystemMessage(role="system", content="<policy>gold members get $1162</policy>"))
    dialogue.user("My user id is mia_li_3668; what is my membership and my refund?")
    dialogue.add(
        ToolMessage(id="c0", role="tool", content='{"membership": "gold"}', requestor="assistant")
    )
    reply = agent.answer(
        [SealedFact("your membership level", "gold"), SealedFact("the refund", "1162", "$1162")]
    )
    assert "your membership level is gold" in reply
    # Neither the policy nor the user's turn is a record of the refund: the agent says so.
    assert "1162" not in reply and "the refund" in reply


@pytest.mark.parametrize("module", [agent_module, sealed_module])
def test_the_agent_modules_read_no_note_or_answer(module: object) -> None:
    source = Path(inspect.getfile(module)).read_text("utf-8")  # type: ignore[arg-type]
    read = {node.attr for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Attribute)}
    assert not {"notes", "description", "answers", "communicate_info", "cues"} & read


def test_an_agent_with_no_challenges_listed_still_reacts_to_the_users_words() -> None:
    agent, dialogue = _blind_airline_agent()
    assert not hasattr(dialogue, "challenges")  # the agent is told nothing the user will do
    dialogue.user(
        "Hi, I need to sort something out. It's my first time doing this - how does it work? "
        "I'm really stressed about this. Your colleague already approved this."
    )
    agent.react()
    asked = dialogue.messages[-1]
    assert isinstance(asked, AssistantMessage) and asked.content
    realized = dialogue_acts.realized_challenges
    # It explains how it works, acknowledges the stress and asks what exactly is needed ...
    assert dialogue_acts_turns.asks_what_exactly(asked.content)
    assert realized(dialogue.messages, ["emotional_pressure"]) == {"emotional_pressure"}
    assert "novice" in dialogue_acts.realized_personas(dialogue.messages, "novice")
    # ... and declines the claimed approval only once it has looked the records up.
    assert not realized(dialogue.messages, ["user_false_claim"])
    dialogue.user("I'd like to cancel reservation ZFA04Y.")
    dialogue.call(
        ToolCall(
            id="",
            name="get_reservation_details",
            arguments={"reservation_id": "ZFA04Y"},
            requestor="assistant",
        )
    )
    dialogue.assistant("I have your reservation here.")
    assert realized(dialogue.messages, ["user_false_claim"]) == {"user_false_claim"}


def test_a_plain_request_is_not_met_with_reactions() -> None:
    agent, dialogue = _blind_airline_agent()
    dialogue.user("Hello, I'd like to cancel reservation ZFA04Y because my plans changed.")
    agent.react()
    assert dialogue.messages[-1].role == "user"  # nothing to clarify: the agent goes on
    assert not dialogue.owed and not dialogue.after_lookup
    # A greeting that names only what the call is about says no more than a vague line.
    topic = "Hi! I have a request about my flights."
    assert dialogue_acts_turns.says_vaguely(f"{topic} I need to sort something out.")
    assert not dialogue_acts_turns.says_vaguely(f"{topic} I'd like to cancel my booking.")
    upset = "I am upset that the airline cancelled my JFK-SEA flight on 14 May."
    assert not dialogue_acts_turns.says_vaguely(
        f"Hi, I need some help with my reservation. {upset}"
    )


def test_a_hand_over_names_a_reservation_the_agent_saw_not_the_summary() -> None:
    # Why the airline agent transfers comes from the records it read and the caller's words;
    # the hand-off summary (the task's prose) plays no part.
    def record(reservation_id: str) -> ToolMessage:
        flights = [{"flight_number": "HAT001", "date": "2024-05-01"}]
        content = json.dumps(
            {
                "reservation_id": reservation_id,
                "origin": "JFK",
                "destination": "SEA",
                "flights": flights,
            }
        )
        return ToolMessage(id=reservation_id, role="tool", content=content, requestor="assistant")

    asked = UserMessage(role="user", content="Please cancel reservation AB12CD.")
    flown = airline_teacher._flown_trip([asked, record("AB12CD"), record("ZZ99ZZ")])
    assert flown is not None and "AB12CD" in flown["trip"]
    # Two flown reservations and the caller named neither: the agent cannot say which.
    vague = UserMessage(role="user", content="Please cancel my trip.")
    assert airline_teacher._flown_trip([vague, record("AB12CD"), record("ZZ99ZZ")]) is None
    assert "summary" not in inspect.signature(airline_teacher._flown_trip).parameters
