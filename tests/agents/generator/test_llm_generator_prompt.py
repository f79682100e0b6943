"""What the LLM Generator's prompt gives the model, and how its reply is held to the blueprint.

Each test renders the prompt through ``LLMGenerator.prompt`` (or checks a reply through
``LLMGenerator.generate`` over HTTP) and asserts a piece the model needs is there: searches
on days no reservation uses, the Planner's controls typed and defined, what each requested
interaction challenge asks of the user, the persona manners, and no unknown ids a booking
does not need.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llm_scripts import task_json
from openai_server import OpenAIServer, Reply
from tau2.data_model.message import ToolCall
from tau2.data_model.tasks import Task

from evosyn.agents.gateway import Gateway, GatewaySettings
from evosyn.agents.generator.base import GeneratorRejection
from evosyn.agents.generator.contract import Contract, controls, unknown_info_problem
from evosyn.agents.generator.llm import LLMGenerator
from evosyn.agents.generator.single_agent import ProposedTask, SingleAgentSynthesizer
from evosyn.agents.prompt_records import lookups
from evosyn.config import CampaignConfig, LLMSection, ModelSettings
from evosyn.environments import get_domain
from evosyn.environments.airline.generator import AirlineGenerator
from evosyn.environments.dialogue_acts import ACTING, persona_kind
from evosyn.records import Blueprint, SynthTask

GATEWAY = Gateway("test", GatewaySettings(model="openai/unused", api_base="http://127.0.0.1:9/v1"))
_LOOKUP = re.compile(r"^- (\w+)\((\{.*?\})\) -> (.*)$", re.MULTILINE)
_RECORD = re.compile(r"^\[(\w+) (\w+)\] (\{.*\})$", re.MULTILINE)


def blueprint(family: str = "flight_change", **update: Any) -> Blueprint:
    return Blueprint(
        campaign_id="c",
        round=1,
        blueprint_id=f"bp-{family}",
        direction_id="d",
        space_version=1,
        selections={"task_family": [family], "expected_outcome": ["fulfill"]},
        intent=f"a {family} task",
    ).model_copy(update=update)


def searches(prompt: str) -> list[tuple[str, dict[str, str], str]]:
    section = prompt.split("## What the agent's searches return on these records\n", 1)
    assert len(section) == 2, "the prompt shows no searches"
    block = section[1].split("\n\n", 1)[0]
    return [(name, json.loads(args), result) for name, args, result in _LOOKUP.findall(block)]


# --------------------------------------------------------------------------- flights to choose


@pytest.mark.parametrize("family", ["flight_change", "flight_booking"])
@pytest.mark.parametrize("seed", [3, 4])
def test_the_generator_sees_flights_for_sale_on_days_no_reservation_uses(
    family: str, seed: int
) -> None:
    prompt = LLMGenerator(GATEWAY).prompt(blueprint(family), seed=seed)
    shown = searches(prompt)
    assert shown, "no search results to ground a date change or a booking in"
    domain = get_domain("airline")
    state = domain.blank_state()
    # The days each route is reserved on, by any shown reservation.
    reserved: dict[tuple[str, str], set[str]] = {}
    for table, _, text in _RECORD.findall(prompt):
        if table == "reservations":
            for segment in json.loads(text)["flights"]:
                route = (segment["origin"], segment["destination"])
                reserved.setdefault(route, set()).add(segment["date"])
    for name, arguments, result in shown:
        assert name in ("search_direct_flight", "search_onestop_flight")
        route = (arguments["origin"], arguments["destination"])
        # A reserved route, or the way back of one (a round trip books both ways).
        assert route in reserved or route[::-1] in reserved
        # The tool's own answer, not a paraphrase: cheapest and earliest can be read off it.
        real = json.loads(
            domain.execute(state, ToolCall(id="x", name=name, arguments=arguments)).content
        )
        assert real, "an empty search is not shown"
        listed = json.loads(result.split(" (and ", 1)[0])
        assert listed == real[: len(listed)]
        assert all(
            f["status"] == "available"
            for f in (real[0] if name == "search_onestop_flight" else real)
        )
    assert any(
        a["date"] not in reserved.get((a["origin"], a["destination"]), set()) for _, a, _ in shown
    ), "only reserved days are searched"
    # Several options of one day, so "cheapest" or "earliest" is a real choice.
    assert any(len(json.loads(r.split(" (and ", 1)[0])) >= 2 for _, _, r in shown)
    assert (
        "Call an option the cheapest or the earliest only\namong the options one search lists"
        in prompt
    )


@pytest.mark.parametrize("seed", [0, 1, 2, 4])
def test_a_booking_prompt_searches_a_route_both_ways(seed: int) -> None:
    prompt = LLMGenerator(GATEWAY).prompt(blueprint("flight_booking"), seed=seed)
    routes = {(a["origin"], a["destination"]) for _, a, _ in searches(prompt)}
    assert any((destination, origin) in routes for origin, destination in routes), routes


def test_a_one_way_reservation_is_searched_the_way_back_from_its_day_on() -> None:
    domain = get_domain("airline")
    db = domain.blank_state().db
    one_way = sorted(
        key
        for key, reservation in db.reservations.items()
        if reservation.flight_type == "one_way" and len(reservation.flights) == 1
    )
    shown = 0
    for key in one_way[:10]:
        [leg] = db.reservations[key].flights
        # The reservation with its flight, whose dates the searches move on to.
        records = [
            {"table": "reservations", "key": key, "record": ""},
            {"table": "flights", "key": leg.flight_number, "record": ""},
        ]
        back = [
            (name, arguments)
            for name, arguments, _ in searches(_listed(lookups(domain, records)))
            if (arguments["origin"], arguments["destination"]) == (leg.destination, leg.origin)
        ]
        assert all(arguments["date"] >= leg.date for _, arguments in back)
        # Only the way back's first day with flights, per search.
        assert len(back) == len({name for name, _ in back})
        shown += bool(back)
    assert shown


def _listed(found: list[dict[str, str]]) -> str:
    """Searches as the prompt lists them."""
    lines = "".join(f"- {item['call']} -> {item['result']}\n" for item in found)
    return f"## What the agent's searches return on these records\n{lines}\n"


def test_a_round_trip_is_not_searched_a_third_way() -> None:
    domain = get_domain("airline")
    db = domain.blank_state().db
    # A round trip whose return retraces its outbound legs (some loop through other cities).
    key, legs = min(
        (k, legs)
        for k, r in db.reservations.items()
        if r.flight_type == "round_trip"
        and (legs := {(leg.origin, leg.destination) for leg in r.flights})
        == {(b, a) for a, b in legs}
    )
    found = searches(
        _listed(lookups(domain, [{"table": "reservations", "key": key, "record": ""}]))
    )
    assert found
    assert {(a["origin"], a["destination"]) for _, a, _ in found} <= legs


def test_both_arms_of_the_monolithic_ablation_see_the_same_searches() -> None:
    wanted = blueprint("flight_change")
    generator = LLMGenerator(GATEWAY).prompt(wanted, seed=3)
    single = SingleAgentSynthesizer(GATEWAY).prompt(wanted, seed=3)
    lines = [
        line for line in generator.splitlines() if line.startswith("- search_") and " -> " in line
    ]
    assert lines and all(line in single.splitlines() for line in lines)


# --------------------------------------------------------------------------- the Planner's controls


def test_the_planners_controls_arrive_typed_and_defined() -> None:
    wanted = blueprint(
        "flight_change",
        selections={
            "task_family": ["flight_change"],
            "expected_outcome": ["fulfill"],
            "difficulty_profile": ["medium"],
            "num_write": ["1"],
        },
        difficulty_controls={
            "expected_tool_calls": 5,
            "requires_state_change": "true",
            "num_write": "1",
        },
    )
    prompt = LLMGenerator(GATEWAY).prompt(wanted, seed=3)
    block = re.search(r"## Blueprint\n(\{.*?\n\})\n", prompt, re.DOTALL)
    assert block is not None
    shown = json.loads(block.group(1))
    # A boolean, not the string "true"; the copy of a selection is left out.
    assert shown["difficulty_controls"] == {"expected_tool_calls": 5, "requires_state_change": True}
    assert "- expected_tool_calls = 5: gold_actions make exactly 5 tool calls" in prompt
    assert "- requires_state_change = true: at least one gold action is a [write] call." in prompt
    assert "a factor added during the campaign" not in prompt
    assert "win over" not in prompt
    assert "expected_tool_calls and requires_state_change exactly as defined" in prompt
    refusal = wanted.model_copy(update={"difficulty_controls": {"requires_state_change": "false"}})
    assert controls(refusal) == {"requires_state_change": False}
    assert "- requires_state_change = false: no gold action is a [write] call" in LLMGenerator(
        GATEWAY
    ).prompt(refusal, seed=3)


def test_each_factor_is_defined_once() -> None:
    # The live retail run's round-2 blueprint: a selection, a bucket and both controls.
    wanted = blueprint(
        "flight_change",
        selections={
            "task_family": ["flight_change"],
            "expected_outcome": ["fulfill"],
            "interaction_challenge": [],
            "difficulty_profile": ["hard"],
            "num_write": ["3-4"],
        },
        difficulty_controls={
            "expected_tool_calls": 7,
            "requires_state_change": True,
            "num_write": "3-4",
        },
    )
    prompt = LLMGenerator(GATEWAY).prompt(wanted, seed=3)
    block = prompt.split("## What the blueprint's factors mean\n", 1)[1].split("\n\n", 1)[0]
    lines = [line for line in block.splitlines() if line.startswith("- ")]
    names = [re.match(r"- (\w+)", line).group(1) for line in lines]  # type: ignore[union-attr]
    assert sorted(names) == sorted(
        [*wanted.selections, "expected_tool_calls", "requires_state_change"]
    )
    assert len(set(lines)) == len(lines)


@pytest.fixture(scope="module")
def reference() -> tuple[Blueprint, SynthTask]:
    """A real cancellation task and the blueprint it was built for."""
    wanted = blueprint(
        "flight_cancellation",
        selections={
            "task_family": ["flight_cancellation"],
            "expected_outcome": ["fulfill"],
            "policy_or_constraint_focus": ["fare_rule_constraint"],
            "tool_use_pattern": ["lookup_verify_then_modify"],
            "interaction_challenge": [],
            "difficulty_profile": ["medium"],
        },
    )
    return wanted, AirlineGenerator().generate(wanted, 3)


def _calls(synth: SynthTask) -> int:
    criteria = synth.task.evaluation_criteria
    assert criteria is not None and criteria.actions
    return len(criteria.actions)


def test_the_contract_rejects_a_task_that_misses_the_planners_controls(
    reference: tuple[Blueprint, SynthTask],
) -> None:
    wanted, synth = reference
    contract = Contract(get_domain("airline"))
    calls = _calls(synth)
    bare = {k: v for k, v in wanted.selections.items() if k != "difficulty_profile"}
    asked = wanted.model_copy(
        update={
            "selections": bare,
            "difficulty_controls": {
                "expected_tool_calls": calls + 1,
                "requires_state_change": "false",
            },
        }
    )
    problems = contract.problems(synth.task, asked)
    assert f"expected_tool_calls is {calls + 1}, but the gold actions make {calls} tool calls" in (
        problems
    )
    assert any(
        p.startswith("requires_state_change is false, but the gold actions make") for p in problems
    )
    met = asked.model_copy(
        update={
            "difficulty_controls": {"expected_tool_calls": calls, "requires_state_change": "true"}
        }
    )
    assert contract.problems(synth.task, met) == []


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with OpenAIServer() as srv:
        yield srv


def generator_on(server: OpenAIServer, tmp_path: Path) -> LLMGenerator:
    cfg = CampaignConfig(
        llm=LLMSection(
            default=ModelSettings(
                model="openai/generator-model",
                api_base=server.url,
                timeout=5.0,
                backoff_base_s=0.01,
                cache_dir=str(tmp_path / "cache"),
            )
        )
    )
    return LLMGenerator.from_config(cfg)


def test_a_task_with_one_call_too_many_is_repaired_then_rejected(
    server: OpenAIServer, tmp_path: Path, reference: tuple[Blueprint, SynthTask]
) -> None:
    # Asked 3, got 4: the repair turn names the count; a second miss is a rejection.
    wanted, synth = reference
    calls = _calls(synth)
    asked = wanted.model_copy(
        update={
            "selections": {k: v for k, v in wanted.selections.items() if k != "difficulty_profile"},
            "difficulty_controls": {"expected_tool_calls": calls - 1},
        }
    )
    reply = json.dumps(task_json(synth))
    server.script(Reply.text(reply), Reply.text(reply))
    with pytest.raises(GeneratorRejection, match="expected_tool_calls"):
        generator_on(server, tmp_path).generate(asked, seed=0)
    repair = server.requests[-1].body["messages"][-1]["content"]
    assert f"expected_tool_calls is {calls - 1}, but the gold actions make {calls} tool calls" in (
        repair
    )
    # The same reply meets a blueprint that asks for its count.
    server.script(Reply.text(reply))
    met = asked.model_copy(update={"difficulty_controls": {"expected_tool_calls": calls}})
    assert generator_on(server, tmp_path / "again").generate(met, seed=0).task is not None


# --------------------------------------------------------------------------- the user


def test_each_requested_challenge_is_defined_by_what_the_user_is_told() -> None:
    wanted = blueprint(
        "flight_change",
        selections={
            "task_family": ["flight_change"],
            "expected_outcome": ["fulfill"],
            "interaction_challenge": ["preference_change", "user_false_claim"],
        },
    )
    prompt = LLMGenerator(GATEWAY).prompt(wanted, seed=3)
    line = next(x for x in prompt.splitlines() if x.startswith("- interaction_challenge:"))
    assert f'preference_change: "{ACTING["preference_change"]}"' in line
    assert f'user_false_claim: "{ACTING["user_false_claim"]}"' in line
    # Only the requested ones.
    assert ACTING["emotional_pressure"] not in line


def test_the_generator_is_asked_for_a_persona_and_it_reaches_the_task(
    server: OpenAIServer, tmp_path: Path, reference: tuple[Blueprint, SynthTask]
) -> None:
    wanted, synth = reference
    prompt = LLMGenerator(GATEWAY).prompt(wanted, seed=3)
    assert '"persona": ' in prompt.split("# Output", 1)[1]
    for kind in ("busy", "chatty", "careful", "novice", "expert", "brief"):
        assert f'  - {kind}: "{ACTING[kind]}"' in prompt
    line = "You are a busy professional with no time for small talk."
    assert persona_kind(line) == "busy"
    server.script(Reply.text(json.dumps({**task_json(synth), "persona": line})))
    made = generator_on(server, tmp_path).generate(wanted, seed=0)
    assert made.task.user_scenario.persona == line
    assert (
        ProposedTask.model_validate(task_json(synth)).to_task("t", "airline").user_scenario.persona
        is None
    )


def test_an_unknown_id_is_asked_for_only_with_missing_information() -> None:
    generator = LLMGenerator(GATEWAY)
    plain = generator.prompt(blueprint("flight_booking"), seed=3).split("# Decision rules", 1)[1]
    assert "- unknown_info names only facts the customer does not know" in plain
    assert "It names no id or number: missing_information is not\n  requested" in plain
    assert "needs\n  none (a request on no existing record, such as a new booking)" in plain
    lacking = blueprint(
        "flight_change",
        selections={
            "task_family": ["flight_change"],
            "expected_outcome": ["fulfill"],
            "interaction_challenge": ["missing_information"],
        },
    )
    rules = generator.prompt(lacking, seed=3).split("# Decision rules", 1)[1]
    assert "- unknown_info names the id or number the customer does not have" in rules
    assert "It names no id" not in rules
    assert ACTING["missing_information"] in generator.prompt(lacking, seed=3)


def test_the_generator_rejects_an_unknown_id_the_blueprint_does_not_ask_for(
    reference: tuple[Blueprint, SynthTask],
) -> None:
    wanted, synth = reference
    generator = LLMGenerator(GATEWAY)

    def told(unknown: str | None) -> Task:
        data = {**task_json(synth), "unknown_info": unknown}
        return ProposedTask.model_validate(data).to_task("t", "airline")

    # A fact the agent will tell may be unknown; an id the customer would be asked for not.
    generator.check(told("You do not know how much of the fare comes back."), wanted)
    generator.check(told(None), wanted)
    with pytest.raises(ValueError, match="missing_information is not requested"):
        generator.check(told("You do not know your reservation id."), wanted)
    lacking = wanted.model_copy(
        update={
            "selections": {**wanted.selections, "interaction_challenge": ["missing_information"]}
        }
    )
    with pytest.raises(ValueError, match="names no id the customer lacks"):
        generator.check(told("You do not know the refund."), lacking)
    assert unknown_info_problem(told("You do not know your reservation id."), lacking) is None
    # The simulated user reads unknown_info: an id's value there is one the customer knows
    # (a live model wrote "Your library card number (P10005)", docs/live).
    gold_id = next(
        v
        for a in told(None).evaluation_criteria.actions  # type: ignore[union-attr]
        for v in a.arguments.values()
        if isinstance(v, str) and any(c.isdigit() for c in v)
    )
    with pytest.raises(ValueError, match=f"unknown_info gives '{gold_id}', a value the gold"):
        generator.check(told(f"Your reservation id ({gold_id})."), lacking)
    prompt = generator.prompt(lacking, seed=3)
    assert "never by its value: the simulated user reads unknown_info" in " ".join(prompt.split())


def test_a_fact_with_a_comma_is_refused_as_tau2_could_never_find_it() -> None:
    # τ²-bench's communicate check drops the commas from the agent's message, not from the
    # fact: "1,628" is in no message, however the agent says it.
    synth = AirlineGenerator().generate(blueprint("flight_change"), seed=1)
    data = task_json(synth)
    with pytest.raises(ValueError, match="has a comma") as refused:
        ProposedTask.model_validate({**data, "communicate_info": ["1,628"]})
    assert "1628, not 1,628" in str(refused.value)
    assert ProposedTask.model_validate({**data, "communicate_info": ["1628"]})
    rules = LLMGenerator(GATEWAY).prompt(blueprint("flight_change"), seed=3)
    assert '"1628", which\n  "$1,628" and "1628 dollars" both contain' in rules
