"""The programmatic agent is blind by construction: it gets sealed requests, never the task."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest
from tau2.data_model.message import AssistantMessage, SystemMessage, ToolMessage, UserMessage
from tau2.data_model.tasks import Action

from evosyn.environments import get_domain, information_flow
from evosyn.environments.airline.teacher import AirlineAgent, AirlineTeacher
from evosyn.environments.kit import agent as agent_module
from evosyn.environments.kit import sealed as sealed_module
from evosyn.environments.kit.agent import ScriptedAgent
from evosyn.environments.kit.dialogue import Dialogue
from evosyn.environments.kit.scripted import ScriptedTeacher
from evosyn.environments.kit.sealed import SealedAction, Unseen, UserChannel
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


def test_a_choice_the_user_never_named_holds_the_seal() -> None:
    rules = domain_plugin("airline").flow
    request = SealedAction(
        "update_reservation_baggages",
        "assistant",
        {
            "reservation_id": "ZFA04Y",
            "total_baggages": 2,
            "nonfree_baggages": 0,
            "payment_id": "credit_card_1",
        },
        get_domain("airline"),
        rules,
    )
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


def test_the_dialogue_the_agent_speaks_in_holds_no_task() -> None:
    parameters = inspect.signature(Dialogue.__init__).parameters
    assert not {"task", "known", "cues", "answers"} & set(parameters)


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
